"""Fixed-step explicit integration of a plant's vector field: Euler and classic Runge-Kutta 4."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import jax
from jaxtyping import Array, Float, PyTree

from ._base import AbstractPlant

METHODS = ("euler", "rk4")


def _add_scaled(state: PyTree, scale: float, derivative: PyTree) -> PyTree:
    return jax.tree.map(lambda y, dy: y + scale * dy, state, derivative)


def _field(plant, control, external_force):
    """The vector field at fixed control, with the external force held or, if it is a
    function of the effector's position and velocity, evaluated at each state."""
    if callable(external_force):
        return lambda y: plant.vector_field(y, control, external_force(*plant.effector(y)))
    return lambda y: plant.vector_field(y, control, external_force)


def _euler(plant, state, control, external_force, h):
    return _add_scaled(state, h, _field(plant, control, external_force)(state))


def _rk4(plant, state, control, external_force, h):
    f = _field(plant, control, external_force)
    k1 = f(state)
    k2 = f(_add_scaled(state, h / 2, k1))
    k3 = f(_add_scaled(state, h / 2, k2))
    k4 = f(_add_scaled(state, h, k3))
    slope = jax.tree.map(lambda a, b, c, d: (a + 2 * b + 2 * c + d) / 6, k1, k2, k3, k4)
    return _add_scaled(state, h, slope)


def step(
    plant: AbstractPlant,
    state: PyTree,
    control: Float[Array, " control"],
    external_force: Float[Array, " xy"] | Callable[[Array, Array], Float[Array, " xy"]],
    *,
    dt: float,
    method: Literal["euler", "rk4"] = "euler",
    n_substeps: int = 1,
) -> PyTree:
    """Advance `state` by `dt`, holding `control` (and `external_force`, if an array) constant.

    The step is split into `n_substeps` equal sub-steps of `dt / n_substeps`, each an
    explicit Euler or classic RK4 step followed by `plant.constrain` (joint limits,
    activation bounds). The constraint acts only between sub-steps, never inside
    RK4's stages, so more sub-steps give a finer-grained limit as well as a smaller
    truncation error. With `method="euler"` and `n_substeps=1` the update is exactly
    ``y + dt * f(y)``.

    **Arguments:**

    - `plant`: the plant whose :meth:`~AbstractPlant.vector_field` is integrated.
    - `state`: the current state pytree.
    - `control`: the network's output, shape `(n_controls,)`.
    - `external_force`: Cartesian force on the effector, shape `(2,)`, or a function
      of the effector's position and velocity that returns it (a velocity-dependent
      field), evaluated at every stage of every sub-step.
    - `dt`: the step in seconds (> 0).
    - `method`: `"euler"` or `"rk4"`.
    - `n_substeps`: how many sub-steps make one step (>= 1).

    **Returns:** the state after `dt`, same structure as `state`.
    """
    if method == "euler":
        substep = _euler
    elif method == "rk4":
        substep = _rk4
    else:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not (isinstance(n_substeps, int) and n_substeps >= 1):
        raise ValueError(f"n_substeps must be an int >= 1, got {n_substeps!r}")
    h = dt / n_substeps

    def one_substep(y):
        return plant.constrain(substep(plant, y, control, external_force, h))

    if n_substeps == 1:
        return one_substep(state)
    return jax.lax.fori_loop(0, n_substeps, lambda _, y: one_substep(y), state)
