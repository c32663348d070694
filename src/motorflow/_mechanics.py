"""Point-mass mechanics in the plane, advanced by one explicit Euler step."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float


class MechanicsState(eqx.Module):
    """State of the effector.

    **Arguments:**

    - `pos`: position, shape `(2,)`.
    - `vel`: velocity, shape `(2,)`.
    - `force`: the force applied during the last step, shape `(2,)`.
    """

    pos: Float[Array, 2]
    vel: Float[Array, 2]
    force: Float[Array, 2]


class PointMass(eqx.Module):
    """A 2-D point mass with optional viscous damping.

    **Arguments:**

    - `mass`: mass (> 0).
    - `damping`: viscous damping coefficient (>= 0): the drag force is ``-damping * vel``.
    - `dt`: the Euler step in seconds.
    """

    mass: float = eqx.field(static=True)
    damping: float = eqx.field(static=True)
    dt: float = eqx.field(static=True)

    def init(self, pos: Float[Array, 2], vel: Float[Array, 2]) -> MechanicsState:
        """The state at rest under zero force at `pos` moving with `vel`."""
        return MechanicsState(pos=pos, vel=vel, force=jnp.zeros_like(pos))

    def __call__(self, state: MechanicsState, force: Float[Array, 2]) -> MechanicsState:
        """Advance `state` by `dt` under the applied `force`."""
        accel = (force - self.damping * state.vel) / self.mass
        return MechanicsState(
            pos=state.pos + self.dt * state.vel,
            vel=state.vel + self.dt * accel,
            force=force,
        )
