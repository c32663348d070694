"""The closed loop: feedback -> network -> control -> plant, scanned over time."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray, PyTree

from .._perturbations import Effects, endpoint_force
from .._plants import AbstractPlant, step
from ._feedback import FeedbackChannel
from ._network import Network
from ._recurrence import RECURRENCE_PATHS, network_step


class Rollout(eqx.Module):
    """Every state of one rollout, indexed by step t = 0 .. n_steps - 1.

    At step t the effector is at `pos[t]` with `vel[t]`; the network sees
    `feedback[t]` (position and velocity of step ``t - delay``, plus noise) and the
    task input, updates to `hidden[t]` and emits `output[t]`, which the plant
    receives as `control[t]` (squashed into its control range, if it has one)
    during ``[t, t + 1]``. `plant` holds the plant's own recorded variables at step t
    (joint angles, muscle activations, ...; see ``AbstractPlant.record``). A segment
    of a trial (:func:`motorflow._model._episode.run_segment`) also holds `end`, the loop's
    state after its last step, from which the next segment runs on (None otherwise).
    """

    pos: Float[Array, "time 2"]
    vel: Float[Array, "time 2"]
    control: Float[Array, "time control"]
    hidden: Float[Array, "time hidden"]
    output: Float[Array, "time control"]
    feedback: Float[Array, "time 4"]
    network_input: Float[Array, "time input"]
    plant: dict[str, Array]
    end: PyTree = None


# What the loop carries from step to step: the plant's state, the feedback queue and
# the hidden state.
LoopState = tuple[PyTree, PyTree, Float[Array, " hidden"]]


class Probe(eqx.Module):
    """Zero signals added to a rollout's network output and recorded hidden state; the
    loss's gradient with respect to them is the learning signal of local rules
    (:mod:`motorflow._training.rules`'s e-prop).

    A rollout run with a probe cuts the network out of the gradient: no gradient
    flows through the hidden state carried to the next step, nor through the
    feedback and task input the network sees. So the gradient of the loss with
    respect to `output[t]` is how the loss depends on the output at step t through
    the plant alone (its later states, and the controls the loss scores), and that
    with respect to `hidden[t]` is the loss's direct dependence on the recorded
    hidden state (an activity penalty). The forward values are those of the plain
    rollout.

    The optional `pos`, `vel` and `control` are added to those records only (not to
    the plant's state nor to what it receives): the gradient with respect to them is
    the loss's direct dependence on each step's recorded state and control, which
    the online form of e-prop uses as its learning signal.
    """

    output: Float[Array, "time control"]
    hidden: Float[Array, "time hidden"]
    pos: Float[Array, "time 2"] | None = None
    vel: Float[Array, "time 2"] | None = None
    control: Float[Array, "time control"] | None = None


class RolloutOptions(eqx.Module):
    """How a rollout's gradient flows, as a learning rule asks (the forward values are
    those of the plain rollout either way).

    **Arguments:**

    - `gradient_window`: with w, no gradient flows back into the loop's state (plant,
      feedback queue, hidden state) at steps w, 2w, ...: what happens at a step
      depends differentiably on at most the w steps before it (truncated
      backpropagation through time). None: the whole trial.
    - `probe`: zero signals added to the network's output and recorded hidden state,
      with the network cut out of the gradient (:class:`Probe`; one trial's, or with a
      leading trial dim where trials are mapped over). None: no probe.
    - `through_feedback`: False: no gradient flows from the sensory feedback the
      network sees back into the plant, so an output reaches the loss through the
      plant only, never through what the network senses of it later.
    - `recurrence`: ``"full"``, or ``"leak"``: the gradient flows from one hidden
      state to the next only through each unit's own carry (its leak, or a GRU's
      ``z h``, z its update gate), not through the recurrent matrices
      (:func:`motorflow._model._recurrence.network_step`); the paths e-prop's
      eligibility traces follow (Bellec et al. 2020, Nat Commun 11:3625).
    """

    gradient_window: int | None = eqx.field(static=True, default=None)
    probe: Probe | None = None
    through_feedback: bool = eqx.field(static=True, default=True)
    recurrence: str = eqx.field(static=True, default="full")

    def __check_init__(self):
        if self.recurrence not in RECURRENCE_PATHS:
            raise ValueError(
                f"recurrence must be one of {RECURRENCE_PATHS}, not {self.recurrence!r}"
            )


PLAIN = RolloutOptions()


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
        options: RolloutOptions = PLAIN,
    ) -> Rollout:
        """Run ``len(task_input)`` steps with the effector starting at (`init_pos`, `init_vel`).

        `effects` are the perturbations' per-step effects (see `motorflow._perturbations`):
        an endpoint force and a curl field act on the plant during each step (the curl
        force follows the velocity within the step's sub-steps), and an offset is added
        to the sensed position before the feedback delay; interventions on the units
        (`effects.network`) act on the hidden state after each update, before the
        readout. Goal displacements are the caller's: they change `task_input`.

        `options` truncate the gradient or cut the network out of it
        (:class:`RolloutOptions`); the forward values are unchanged.
        """
        n_steps = task_input.shape[0]
        _, states = self.run(
            self.start(init_pos, init_vel),
            task_input,
            jax.random.split(key, n_steps),
            jnp.arange(n_steps),
            effects=effects,
            options=options,
        )
        return states

    def start(self, init_pos: Float[Array, 2], init_vel: Float[Array, 2]) -> LoopState:
        """The loop's state before the first step: the plant at rest (or moving) at
        the start, the feedback queue filled with that observation, hidden state zero."""
        state = self.plant.init(init_pos, init_vel)
        queue = self.feedback.init(self._observe(state))
        hidden = jnp.zeros(self.network.cell.hidden_size, init_pos.dtype)
        return state, queue, hidden

    def run(
        self,
        loop_state: LoopState,
        task_input: Float[Array, "time input"],
        keys: PRNGKeyArray,
        steps: Int[Array, " time"],
        *,
        effects: Effects | None = None,
        options: RolloutOptions = PLAIN,
    ) -> tuple[LoopState, Rollout]:
        """Run the steps `steps` (the trial's step indices) from `loop_state`, with one
        key per step; returns the state after them and their records. See
        :meth:`rollout`, which runs a whole trial from :meth:`start`; running a trial
        in consecutive pieces, each from the state the last one ended in, gives the
        same values."""
        if effects is None:
            no_force = jnp.zeros(2, task_input.dtype)
            per_step = None
        else:
            per_step = (effects.force, effects.viscosity, effects.feedback, effects.network)
        gradient_window = options.gradient_window
        through_feedback = options.through_feedback
        recurrence = options.recurrence

        def one_step(carry, xs):
            task_in, step_key, perturbed, t, probed = xs
            if gradient_window is not None:
                carry = _cut_gradient_at(t % gradient_window == 0, carry)
            state, queue, hidden = carry
            before = hidden  # the state a freeze holds
            feedback_key, network_key = jax.random.split(step_key)
            observed = self._observe(state)
            units = None
            if perturbed is None:
                external_force = no_force
            else:
                force, viscosity, offset, units = perturbed
                observed = observed.at[:2].add(offset)

                def external_force(pos, vel):
                    return endpoint_force(force, viscosity, vel)

            queue, seen = self.feedback(queue, observed, key=feedback_key)
            if not through_feedback:
                seen = jax.lax.stop_gradient(seen)
            network_input = jnp.concatenate([task_in, seen])
            if probed is None:
                hidden, output = network_step(
                    self.network, network_input, hidden, key=network_key, recurrence=recurrence
                )
            else:
                hidden, output = self.network(
                    jax.lax.stop_gradient(network_input),
                    jax.lax.stop_gradient(hidden),
                    key=network_key,
                )
            if units is not None:  # interventions on the units: after the update
                hidden = units.apply(
                    hidden,
                    previous=before,
                    readout=self.network.readout.weight,
                    key=jax.random.fold_in(network_key, 1),
                )
                output = self.network.readout(hidden)
            if probed is None:
                recorded_hidden = hidden
            else:
                output = output + probed.output
                recorded_hidden = hidden + probed.hidden
            control = self.control(output)
            pos, vel = self.plant.effector(state)
            recorded = _probed_records(probed, pos, vel, control)
            record = Rollout(
                pos=recorded[0],
                vel=recorded[1],
                control=recorded[2],
                hidden=recorded_hidden,
                output=output,
                feedback=seen,
                network_input=network_input,
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

        return jax.lax.scan(
            one_step, loop_state, (task_input, keys, per_step, steps, options.probe)
        )

    def _observe(self, state: PyTree) -> Float[Array, 4]:
        return jnp.concatenate(self.plant.effector(state))


def _probed_records(probed: Probe | None, *records: Array) -> tuple[Array, ...]:
    """The recorded position, velocity and control plus the probe's, where it has them."""
    if probed is None:
        return records
    added = (probed.pos, probed.vel, probed.control)
    return tuple(r if a is None else r + a for r, a in zip(records, added, strict=True))


def _cut_gradient_at(cut: Bool[Array, ""], carry: PyTree) -> PyTree:
    """`carry` with no gradient flowing back through it where `cut` (same values)."""
    return jax.tree.map(lambda x: jnp.where(cut, jax.lax.stop_gradient(x), x), carry)
