"""Fixed and slow points of the trained networks' recurrent update under a constant input.

The method of Sussillo & Barak (2013, "Opening the black box: low-dimensional
dynamics in high-dimensional recurrent neural networks", Neural Computation 25(3))
as Golub & Sussillo's FixedPointFinder (2018, J. Open Source Softw. 3(31)) runs it:
from many starting states, minimise ``q(h) = 0.5 ||F(h, u) - h||^2`` with Adam, and
linearise the update at the points found.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import xarray as xr
from jaxtyping import Array, Float, PRNGKeyArray
from pydantic import Field

from .._cells import AbstractCell
from .._config_base import NonNegativeNumber, PositiveInt, PositiveNumber
from .._tasks import CenterOut, Task
from ._base import AbstractAnalysis, AnalysisInputs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

logger = logging.getLogger("motorflow")

A_U, ONE = {"units": "a.u."}, {"units": "1"}


def steady_inputs(task: Task, center_out: CenterOut | None = None) -> Float[Array, "trial input"]:
    """The network's input once each evaluation reach is over and the hand rests on the goal.

    The task input of the last step (the goal, and the go cue, on, for a delayed
    reach), built by the task as in a rollout, followed by the feedback of an
    effector at rest on the goal: position = goal, velocity = 0.

    **Arguments:**

    - `task`: the task the ensemble was trained on.
    - `center_out`: the evaluation trials (dim `trial`); by default the task's.
    """
    trials = (task.eval_trials() if center_out is None else center_out).trials

    def one(trial):
        goal = jnp.broadcast_to(trial.goal_pos, (task.n_steps, trial.goal_pos.shape[-1]))
        last = task.inputs(trial, goal)[-1]
        return jnp.concatenate([last, trial.goal_pos, jnp.zeros_like(trial.goal_pos)])

    return jax.vmap(one)(trials)


def sample_starts(
    states: xr.Dataset, *, n_starts: int, noise: float, key: PRNGKeyArray
) -> Float[Array, "replicate trial start unit"]:
    """Starting states for the search: each replicate's own hidden states, jittered.

    For each replicate and trial, `n_starts` states drawn uniformly (with
    replacement) from all the replicate's hidden states (any condition, trial and
    step), plus Gaussian noise of std `noise` times the std of those states.
    Replicate r draws from ``split(key, n_replicates)[r]``.

    **Arguments:**

    - `states`: the Dataset from `evaluate`, with ``hidden`` `(replicate, ...,
      unit)` and a `trial` dim (one input per trial, as :func:`steady_inputs`).
    - `n_starts`: starting states per replicate and trial.
    - `noise`: the noise's std, relative to the states' std.
    - `key`: the draws.
    """
    hidden = states.hidden.transpose("replicate", ..., "unit")
    pooled = jnp.asarray(hidden.values).reshape(hidden.sizes["replicate"], -1, hidden.sizes["unit"])
    keys = jax.random.split(key, pooled.shape[0])
    return _draw_starts(pooled, keys, shape=(states.sizes["trial"], n_starts), noise=noise)


# At module level, so that a process (a warm worker running a sweep's analyses one
# after another) draws for every experiment of the same shapes with one program.
@functools.partial(jax.jit, static_argnames=("shape", "noise"))
def _draw_starts(pooled, keys, *, shape: tuple[int, int], noise: float):
    def one(pooled, key):
        pick_key, noise_key = jax.random.split(key)
        picked = pooled[jax.random.randint(pick_key, shape, 0, pooled.shape[0])]
        jitter = jax.random.normal(noise_key, picked.shape, picked.dtype)
        return picked + noise * jnp.std(pooled) * jitter

    return jax.vmap(one)(pooled, keys)


@eqx.filter_jit
def _search(cells: AbstractCell, inputs, starts, steps: int, learning_rate: float):
    """Every replicate's points, speeds and Jacobians from `starts` `(replicate, trial,
    start, unit)` under `inputs` `(trial, input)`."""
    optimiser = optax.adam(learning_rate)

    def one_replicate(cell, starts):
        def speed(hidden, input):
            return 0.5 * jnp.sum((cell(input, hidden) - hidden) ** 2)

        def one_point(input, start):
            # Adam at a constant rate hovers around a minimum rather than settling
            # in it, so more steps could end farther off: keep the slowest point seen.
            def descend(carry, _):
                hidden, state, best, best_speed = carry
                value, grad = jax.value_and_grad(speed)(hidden, input)
                better = value < best_speed
                best = jnp.where(better, hidden, best)
                best_speed = jnp.where(better, value, best_speed)
                updates, state = optimiser.update(grad, state)
                return (optax.apply_updates(hidden, updates), state, best, best_speed), None

            carry = (start, optimiser.init(start), start, jnp.asarray(jnp.inf, start.dtype))
            (last, _, best, best_speed), _ = jax.lax.scan(descend, carry, length=steps)
            last_speed = speed(last, input)
            hidden = jnp.where(last_speed < best_speed, last, best)
            jacobian = jax.jacfwd(cell, argnums=1)(input, hidden)
            return hidden, jnp.minimum(last_speed, best_speed), jacobian

        per_start = jax.vmap(one_point, in_axes=(None, 0))
        return jax.vmap(per_start)(inputs, starts)

    return eqx.filter_vmap(one_replicate)(cells, starts)


def _eigenvalues(jacobians: np.ndarray) -> np.ndarray:
    """Eigenvalues `(..., mode)` of `jacobians` `(..., unit, unit)`, largest magnitude
    first; NaN where a Jacobian is not finite."""
    flat = jacobians.reshape(-1, *jacobians.shape[-2:])
    values = np.full(flat.shape[:-1], np.nan, dtype=np.result_type(flat.dtype, np.complex64))
    finite = np.isfinite(flat).all(axis=(1, 2))
    # On the host: LAPACK's eig runs anywhere, and is not every accelerator's.
    values[finite] = np.linalg.eigvals(flat[finite])
    order = np.argsort(-np.abs(values), axis=-1, kind="stable")
    return np.take_along_axis(values, order, axis=-1).reshape(jacobians.shape[:-1])


def _distinct(points: np.ndarray, converged: np.ndarray, tolerance: float) -> np.ndarray:
    """For points `(start, unit)`: True for the first converged point of each group
    within `tolerance` of each other (greedily, in start order)."""
    distinct = np.zeros(len(points), bool)
    for index in np.flatnonzero(converged):
        kept = points[distinct]
        if not len(kept) or np.linalg.norm(kept - points[index], axis=-1).min() > tolerance:
            distinct[index] = True
    return distinct


def end_state_plane(states: xr.Dataset, *, n_components: int = 2) -> xr.Dataset:
    """The plane where the trials' end states spread, per replicate, and the trajectories on it.

    The hidden trajectories' own first principal components follow the large
    excursion of the reach and can be nearly orthogonal to the directions along which
    the end states (hence the stable points under each goal) differ; so the points
    are drawn on the plane of the PCA of the end states: per replicate, the last-step
    hidden state of every trial of the first condition (the unperturbed reaches the
    steady inputs of :func:`steady_inputs` describe), centred on their mean.

    **Arguments:**

    - `states`: the Dataset from `evaluate`, with ``hidden`` `(replicate, [condition,]
      trial, time, unit)`.
    - `n_components`: the plane's dimension.

    Returns a Dataset with ``end_state`` `(replicate, trial, unit)`, ``end_plane_mean``
    `(replicate, unit)`, ``end_plane_loading`` `(replicate, end_pc, unit)` (unit-norm
    rows), ``end_plane_ratio`` `(replicate, end_pc)` (share of the end states'
    variance) and ``end_plane_projection`` `(replicate, trial, time, end_pc)`; a
    replicate with NaN states gets NaN throughout.
    """
    hidden = states.hidden
    if "condition" in hidden.dims:
        hidden = hidden.isel(condition=0, drop=True)
    hidden = hidden.transpose("replicate", "trial", "time", "unit")
    values = np.asarray(hidden.values, dtype=np.float64)
    n_rep, n_units = values.shape[0], values.shape[-1]
    end = values[:, :, -1]
    mean = np.full((n_rep, n_units), np.nan)
    loading = np.full((n_rep, n_components, n_units), np.nan)
    ratio = np.full((n_rep, n_components), np.nan)
    for r in range(n_rep):
        if not np.isfinite(values[r]).all():
            continue
        mean[r] = end[r].mean(axis=0)
        _, singular, rows = np.linalg.svd(end[r] - mean[r], full_matrices=False)
        k = min(n_components, len(singular))
        # Pin each row's sign (largest entry positive) so that reruns agree.
        signs = np.sign(rows[np.arange(k), np.argmax(np.abs(rows[:k]), axis=1)])
        loading[r] = 0.0
        loading[r, :k] = rows[:k] * np.where(signs == 0, 1.0, signs)[:, None]
        total = (singular**2).sum()
        ratio[r] = 0.0
        ratio[r, :k] = singular[:k] ** 2 / total if total > 0 else 0.0
    projection = np.einsum("rstu,rpu->rstp", values - mean[:, None, None], loading)
    dtype = hidden.dtype
    return xr.Dataset(
        {
            "end_state": (("replicate", "trial", "unit"), end.astype(dtype), A_U),
            "end_plane_mean": (("replicate", "unit"), mean.astype(dtype), A_U),
            "end_plane_loading": (("replicate", "end_pc", "unit"), loading.astype(dtype), ONE),
            "end_plane_ratio": (("replicate", "end_pc"), ratio.astype(dtype), ONE),
            "end_plane_projection": (
                ("replicate", "trial", "time", "end_pc"),
                projection.astype(dtype),
                A_U,
            ),
        },
        coords={"end_pc": np.arange(1, n_components + 1)},
    )


def distance_to_end(fixed_points: xr.Dataset, states: xr.Dataset) -> xr.DataArray:
    """Per replicate and trial, the distance from the trial's end state to the nearest
    converged stable point found under its input, relative to the spread of the
    replicate's hidden trajectories (the root-mean-square distance of all its states,
    first condition, from their mean); inf where no stable point converged.

    The expected picture for a network that holds each goal (Sussillo & Barak 2013,
    applied to a reach: one stable point per target at the end-of-trial state) is a
    value much below 1 for every trial.
    """
    hidden = states.hidden
    if "condition" in hidden.dims:
        hidden = hidden.isel(condition=0, drop=True)
    hidden = hidden.transpose("replicate", "trial", "time", "unit")
    values = np.asarray(hidden.values, dtype=np.float64)
    flat = values.reshape(values.shape[0], -1, values.shape[-1])
    spread = np.sqrt(((flat - flat.mean(axis=1, keepdims=True)) ** 2).sum(-1).mean(-1))
    points = fixed_points.fixed_point.transpose("replicate", "trial", "start", "unit").values
    distance = np.linalg.norm(points - values[:, :, -1][:, :, None], axis=-1)
    ok = (
        (fixed_points.converged & fixed_points.stable)
        .transpose("replicate", "trial", "start")
        .values
    )
    nearest = np.where(ok, distance, np.inf).min(axis=-1)
    return xr.DataArray(nearest / spread[:, None], dims=("replicate", "trial"))


def find_fixed_points(
    ensemble: eqx.Module,
    inputs: Float[Array, "trial input"],
    starts: Float[Array, "replicate trial start unit"],
    *,
    steps: int,
    learning_rate: float,
    tolerance: float,
    distinct_tolerance: float,
    coords: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Fixed and slow points of each replicate's recurrent update under each input.

    From each start, `steps` Adam steps (one compiled program, over all replicates,
    inputs and starts) minimise the speed ``q(h) = 0.5 ||F(h, u) - h||^2``, where
    ``F = ensemble.network.cell`` and `u` is held constant; the slowest point visited
    is kept, and the update linearised there. The update is a discrete-time map, so a
    point is stable when every eigenvalue of its Jacobian lies inside the unit circle.

    **Arguments:**

    - `ensemble`: the ensemble (a `ClosedLoop` whose leaves lead with the replicate axis).
    - `inputs`: the constant network inputs, e.g. :func:`steady_inputs`.
    - `starts`: the starting states, e.g. :func:`sample_starts`.
    - `steps`, `learning_rate`: the optimisation.
    - `tolerance`: a point whose speed is below this has converged.
    - `distinct_tolerance`: converged points closer than this (Euclidean) are one.
    - `coords`: more coords, e.g. ``{"goal_angle": states.goal_angle}`` on `trial`.

    Returns a Dataset with dims `replicate`, `trial`, `start`, `unit`, `mode` and
    variables ``fixed_point`` `(replicate, trial, start, unit)`; ``speed``,
    ``converged``, ``distinct`` (the first converged point of each cluster, per
    replicate and trial), ``max_eigenvalue_magnitude`` and ``stable`` `(replicate,
    trial, start)`; ``eigenvalue_real`` and ``eigenvalue_imag`` `(replicate, trial,
    start, mode)`, largest magnitude first. A replicate with NaN weights or starts
    gets NaN points that neither converged nor are stable.
    """
    points, speeds, jacobians = _search(
        ensemble.network.cell, jnp.asarray(inputs), jnp.asarray(starts), steps, learning_rate
    )
    points, speeds = np.asarray(points), np.asarray(speeds)
    eigenvalues = _eigenvalues(np.asarray(jacobians))
    magnitude = np.abs(eigenvalues).max(axis=-1)
    converged = speeds < tolerance
    distinct = np.stack(
        [
            np.stack([_distinct(p, c, distinct_tolerance) for p, c in zip(rep_p, rep_c)])
            for rep_p, rep_c in zip(points, converged)
        ]
    )
    n_rep, n_trials, n_starts, n_units = points.shape
    per_start = ("replicate", "trial", "start")
    return xr.Dataset(
        {
            # hidden states are in network units (a.u.); the speed is half their
            # squared change per step; the step map's eigenvalues are dimensionless
            "fixed_point": ((*per_start, "unit"), points, A_U),
            "speed": (per_start, speeds, {"units": "a.u.^2"}),
            "converged": (per_start, converged, ONE),
            "distinct": (per_start, distinct, ONE),
            "eigenvalue_real": ((*per_start, "mode"), eigenvalues.real, ONE),
            "eigenvalue_imag": ((*per_start, "mode"), eigenvalues.imag, ONE),
            "max_eigenvalue_magnitude": (per_start, magnitude, ONE),
            "stable": (per_start, magnitude < 1, ONE),
        },
        coords={
            "replicate": np.arange(n_rep),
            "trial": np.arange(n_trials),
            "start": np.arange(n_starts),
            "unit": np.arange(n_units),
            "mode": np.arange(eigenvalues.shape[-1]),
            **(coords or {}),
        },
        attrs={
            "steps": steps,
            "learning_rate": learning_rate,
            "tolerance": tolerance,
            "distinct_tolerance": distinct_tolerance,
        },
    )


class FixedPointsAnalysis(AbstractAnalysis):
    """The search for fixed and slow points of the trained network (Sussillo & Barak 2013)."""

    KIND: ClassVar[str] = "fixed_points"

    n_starts: Annotated[PositiveInt, Field(le=4096)] = Field(
        16,
        description="starting states per steady input, sampled on the replicate's hidden "
        "trajectories",
    )
    start_noise: NonNegativeNumber = Field(
        0.05,
        description="noise added to each start, as a fraction of the std of the "
        "replicate's hidden states",
    )
    steps: Annotated[PositiveInt, Field(le=1_000_000)] = Field(
        5000, description="Adam steps minimising the hidden state's speed `0.5‖F(h, u) − h‖²`"
    )
    learning_rate: PositiveNumber = Field(
        0.02,
        description="Adam's learning rate in that search (each start keeps the slowest "
        "point it visited)",
    )
    tolerance: PositiveNumber = Field(
        1e-8,
        description="a point whose speed ends below this is a fixed point; above it, a slow point",
    )
    distinct_tolerance: PositiveNumber = Field(
        1e-3,
        description="fixed points closer than this (Euclidean distance in hidden space) "
        "count as one",
    )

    def run(self, inputs: AnalysisInputs) -> xr.Dataset:
        states = inputs.states
        starts = sample_starts(
            states, n_starts=self.n_starts, noise=self.start_noise, key=inputs.key
        )
        fixed_points = find_fixed_points(
            inputs.ensemble,
            steady_inputs(inputs.task, inputs.center_out),
            starts,
            steps=self.steps,
            learning_rate=self.learning_rate,
            tolerance=self.tolerance,
            distinct_tolerance=self.distinct_tolerance,
            coords={"goal_angle": states.goal_angle, "goal_distance": states.goal_distance},
        )
        fixed_points = xr.merge([fixed_points, end_state_plane(states)], combine_attrs="override")
        # relative to the spread of the hidden trajectories: dimensionless
        fixed_points["end_distance"] = distance_to_end(fixed_points, states).assign_attrs(ONE)
        found = fixed_points.converged & fixed_points.distinct
        logger.info(
            "Fixed points: %d distinct found, %d of them stable",
            int(found.sum()),
            int((found & fixed_points.stable).sum()),
        )
        logger.info(
            "Nearest stable point to each end state, relative to the trajectories' spread: "
            "median %.3g, max %.3g",
            float(fixed_points.end_distance.median()),
            float(fixed_points.end_distance.max()),
        )
        return fixed_points

    @classmethod
    def figure(cls, analysis: xr.Dataset, *, replicate: int, title: str) -> Figure:
        """The fixed points on the plane of the replicate's end states, with the
        Jacobians' eigenvalues against the unit circle."""
        from .._figures import plot_fixed_points

        return plot_fixed_points(analysis, analysis, replicate=replicate, title=title)
