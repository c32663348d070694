"""The closed loop: feedback -> network -> force -> mechanics, scanned over time."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ._feedback import FeedbackChannel
from ._mechanics import MechanicsState, PointMass
from ._network import Network


class Rollout(eqx.Module):
    """Every state of one rollout, indexed by step t = 0 .. n_steps - 1.

    At step t the effector is at `pos[t]` with `vel[t]`; the network sees
    `feedback[t]` (position and velocity of step ``t - delay``, plus noise) and the
    task input, updates to `hidden[t]` and emits `output[t]`, which is applied as
    `force[t]` during ``[t, t + 1]``.
    """

    pos: Float[Array, "time 2"]
    vel: Float[Array, "time 2"]
    force: Float[Array, "time 2"]
    hidden: Float[Array, "time hidden"]
    output: Float[Array, "time 2"]
    feedback: Float[Array, "time 4"]


class ClosedLoop(eqx.Module):
    """A network controlling a point mass through a feedback channel.

    **Arguments:**

    - `mechanics`: the body.
    - `network`: the controller.
    - `feedback`: the sensory channel.
    """

    mechanics: PointMass
    network: Network
    feedback: FeedbackChannel

    def rollout(
        self,
        init_pos: Float[Array, 2],
        init_vel: Float[Array, 2],
        task_input: Float[Array, "time input"],
        *,
        key: PRNGKeyArray,
    ) -> Rollout:
        """Run ``len(task_input)`` steps from rest state (`init_pos`, `init_vel`)."""
        mech = self.mechanics.init(init_pos, init_vel)
        queue = self.feedback.init(_observe(mech))
        hidden = jnp.zeros(self.network.cell.hidden_size, init_pos.dtype)
        n_steps = task_input.shape[0]

        def step(carry, xs):
            mech, queue, hidden = carry
            task_in, step_key = xs
            feedback_key, network_key = jax.random.split(step_key)
            queue, seen = self.feedback(queue, _observe(mech), key=feedback_key)
            hidden, output = self.network(jnp.concatenate([task_in, seen]), hidden, key=network_key)
            record = Rollout(
                pos=mech.pos,
                vel=mech.vel,
                force=output,
                hidden=hidden,
                output=output,
                feedback=seen,
            )
            return (self.mechanics(mech, output), queue, hidden), record

        keys = jax.random.split(key, n_steps)
        _, states = jax.lax.scan(step, (mech, queue, hidden), (task_input, keys))
        return states


def _observe(mech: MechanicsState) -> Float[Array, 4]:
    return jnp.concatenate([mech.pos, mech.vel])
