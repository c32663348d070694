"""The closed loop: feedback -> network -> control -> plant, scanned over time."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PRNGKeyArray, PyTree

from ._feedback import FeedbackChannel
from ._network import Network
from ._perturb import Effects, endpoint_force
from ._plant import AbstractPlant, step


class Rollout(eqx.Module):
    """Every state of one rollout, indexed by step t = 0 .. n_steps - 1.

    At step t the effector is at `pos[t]` with `vel[t]`; the network sees
    `feedback[t]` (position and velocity of step ``t - delay``, plus noise) and the
    task input, updates to `hidden[t]` and emits `output[t]`, which the plant
    receives as `control[t]` (squashed into its control range, if it has one)
    during ``[t, t + 1]``. `plant` holds the plant's own recorded variables at step t
    (joint angles, muscle activations, ...; see ``AbstractPlant.record``).
    """

    pos: Float[Array, "time 2"]
    vel: Float[Array, "time 2"]
    control: Float[Array, "time control"]
    hidden: Float[Array, "time hidden"]
    output: Float[Array, "time control"]
    feedback: Float[Array, "time 4"]
    plant: dict[str, Array]


class ClosedLoop(eqx.Module):
    """A network controlling a plant through a feedback channel.

    **Arguments:**

    - `plant`: the body.
    - `network`: the controller; its readout has one output per plant control.
    - `feedback`: the sensory channel.
    - `dt`: the network's step (s); the plant integrates it in `n_substeps` sub-steps
      with `method` (``"euler"`` or ``"rk4"``).
    """

    plant: AbstractPlant
    network: Network
    feedback: FeedbackChannel
    dt: float = eqx.field(static=True)
    method: str = eqx.field(static=True, default="euler")
    n_substeps: int = eqx.field(static=True, default=1)

    def control(self, output: Float[Array, " control"]) -> Float[Array, " control"]:
        """The plant's control from the network's output: a sigmoid into its range, if any."""
        if self.plant.control_range is None:
            return output
        low, high = self.plant.control_range
        return low + (high - low) * jax.nn.sigmoid(output)

    def rollout(
        self,
        init_pos: Float[Array, 2],
        init_vel: Float[Array, 2],
        task_input: Float[Array, "time input"],
        *,
        key: PRNGKeyArray,
        effects: Effects | None = None,
        gradient_window: int | None = None,
    ) -> Rollout:
        """Run ``len(task_input)`` steps with the effector starting at (`init_pos`, `init_vel`).

        `effects` are the perturbations' per-step effects (see `motorflow._perturb`):
        an endpoint force and a curl field act on the plant during each step (the curl
        force follows the velocity within the step's sub-steps), and an offset is added
        to the sensed position before the feedback delay. Goal displacements are the
        caller's: they change `task_input`.

        With `gradient_window` w, no gradient flows back into the loop's state (plant,
        feedback queue, hidden state) at steps w, 2w, ...: what happens at a step
        depends differentiably on at most the w steps before it (truncated
        backpropagation through time). The forward values are unchanged.
        """
        state = self.plant.init(init_pos, init_vel)
        queue = self.feedback.init(self._observe(state))
        hidden = jnp.zeros(self.network.cell.hidden_size, init_pos.dtype)
        n_steps = task_input.shape[0]
        if effects is None:
            no_force = jnp.zeros_like(init_pos)
            per_step = None
        else:
            per_step = (effects.force, effects.curl, effects.feedback)

        def one_step(carry, xs):
            task_in, step_key, perturbed, t = xs
            if gradient_window is not None:
                carry = _cut_gradient_at(t % gradient_window == 0, carry)
            state, queue, hidden = carry
            feedback_key, network_key = jax.random.split(step_key)
            observed = self._observe(state)
            if perturbed is None:
                external_force = no_force
            else:
                force, curl, offset = perturbed
                observed = observed.at[:2].add(offset)

                def external_force(pos, vel):
                    return endpoint_force(force, curl, vel)

            queue, seen = self.feedback(queue, observed, key=feedback_key)
            hidden, output = self.network(jnp.concatenate([task_in, seen]), hidden, key=network_key)
            control = self.control(output)
            pos, vel = self.plant.effector(state)
            record = Rollout(
                pos=pos,
                vel=vel,
                control=control,
                hidden=hidden,
                output=output,
                feedback=seen,
                plant=self.plant.record(state),
            )
            state = step(
                self.plant,
                state,
                control,
                external_force,
                dt=self.dt,
                method=self.method,
                n_substeps=self.n_substeps,
            )
            return (state, queue, hidden), record

        keys = jax.random.split(key, n_steps)
        steps = jnp.arange(n_steps)
        _, states = jax.lax.scan(
            one_step, (state, queue, hidden), (task_input, keys, per_step, steps)
        )
        return states

    def _observe(self, state: PyTree) -> Float[Array, 4]:
        return jnp.concatenate(self.plant.effector(state))


def _cut_gradient_at(cut: Bool[Array, ""], carry: PyTree) -> PyTree:
    """`carry` with no gradient flowing back through it where `cut` (same values)."""
    return jax.tree.map(lambda x: jnp.where(cut, jax.lax.stop_gradient(x), x), carry)
