"""e-prop: eligibility traces computed forward in time times a per-step learning signal.

Bellec et al. (2020), "A solution to the learning dilemma for recurrent networks of
spiking neurons", Nature Communications 11:3625. For a rate unit
``h_j' = (1 - a) h_j + a tanh(v_j)``, ``v_j = sum_i W_ji z_i + b_j`` (``a = 1``: the
vanilla RNN), the eligibility trace of a weight follows the unit's own leak and
forgets the network's recurrence:

    e_ji(t) = (1 - a) e_ji(t - 1) + a tanh'(v_j(t)) z_i(t)

with ``z_i(t)`` the presynaptic value at step t (the network's input, the hidden
state ``h_i(t - 1)``, or 1 for the bias); this is also the random-feedback local
online rule of Murray (2019), eLife 8:e43299. The gradient estimate is
``sum_t L_j(t) e_ji(t)`` with the learning signal ``L(t) = B dE/dy(t) + dE/dh(t)``:
``B`` is a fixed random feedback matrix (``feedback: random``; Lillicrap et al. 2016,
Nature Communications 7:13276) or the readout's transpose (``symmetric``), and the
readout's own gradient is the exact local ``sum_t dE/dy(t) h(t)^T``.

The closed loop: the output at step t moves the plant, so the loss depends on it
through every later state of the plant. Here ``dE/dy(t)`` is the derivative through
the plant alone, with the network cut out: no path through the feedback it will
see, its recurrence or its later outputs (:class:`motorflow._model._loop.Probe`). It is
non-causal (it needs the rest of the trial), so the update is applied once per
rollout, like e-prop's offline form. ``dE/dh(t)`` is the loss's direct dependence
on the hidden state (an activity penalty).
"""

from __future__ import annotations

from typing import Any, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray
from pydantic import Field

from ..._cells import LeakyCell
from ..._config_base import Boolean, PositiveInt, PositiveNumber
from ..._model._attribute_paths import attribute_getter
from ..._model._loop import ClosedLoop, Probe, RolloutOptions
from ..._plants import PointMass
from ._base import AbstractLearningRule, Batch
from ._eprop_gru import GRUWeights, gru_eligibility_gradient

# Where each cell kind keeps the weights e-prop trains, and their names there.
_UNIT = {"rnn": "network.cell", "leaky": "network.cell.rnn", "gru": "network.cell.gru"}
_NAMES = {
    "rnn": ("weight_in", "weight_rec", "bias"),
    "leaky": ("weight_in", "weight_rec", "bias"),
    "gru": ("weight_ih", "weight_hh", "bias", "bias_n"),
}


class CellWeights(eqx.Module):
    """The weights e-prop trains in a tanh unit: `weight_in` `(hidden, input)`,
    `weight_rec` `(hidden, hidden)`, `bias` `(hidden,)`."""

    weight_in: Float[Array, "hidden input"]
    weight_rec: Float[Array, "hidden hidden"]
    bias: Float[Array, " hidden"]


def _clip_norm(trace: Array, max_norm: float | None) -> Array:
    if max_norm is None:
        return trace
    norm = jnp.sqrt(jnp.sum(trace**2))
    return trace * jnp.minimum(1.0, max_norm / jnp.maximum(norm, 1e-30))


def eligibility_gradient(
    weights: CellWeights,
    alpha: float,
    network_input: Float[Array, "time input"],
    hidden: Float[Array, "time hidden"],
    signal: Float[Array, "time hidden"],
    *,
    trace_clip: float | None = None,
) -> CellWeights:
    """``sum_t L(t) e(t)`` for one trial, the traces `e` run forward in time.

    **Arguments:**

    - `weights`: the unit's weights (their values give the pre-activations).
    - `alpha`: the leak ``a = dt / tau`` (1 for the vanilla RNN).
    - `network_input`, `hidden`: the trial's input at each step and hidden state
      after it; the state before the first step is zero.
    - `signal`: the learning signal ``L(t)`` per unit.
    - `trace_clip`: clip each trace's norm (per weight array) to this, if given.
    """

    def step(carry, xs):
        h_before, traces, total = carry
        x, h, learning = xs
        pre = weights.weight_in @ x + weights.weight_rec @ h_before + weights.bias
        drive = alpha * (1.0 - jnp.tanh(pre) ** 2)
        immediate = CellWeights(
            weight_in=drive[:, None] * x[None, :],
            weight_rec=drive[:, None] * h_before[None, :],
            bias=drive,
        )
        traces = jax.tree.map(
            lambda e, new: _clip_norm((1.0 - alpha) * e + new, trace_clip), traces, immediate
        )
        total = CellWeights(
            weight_in=total.weight_in + learning[:, None] * traces.weight_in,
            weight_rec=total.weight_rec + learning[:, None] * traces.weight_rec,
            bias=total.bias + learning * traces.bias,
        )
        return (h, traces, total), None

    # The state before each step is carried (no shifted copy of the trial's states).
    zeros = jax.tree.map(jnp.zeros_like, weights)
    start = (jnp.zeros_like(hidden[0]), zeros, zeros)
    (*_, total), _ = jax.lax.scan(step, start, (network_input, hidden, signal))
    return total


def filtered_eligibility_gradient(
    weights: CellWeights,
    alpha: float,
    network_input: Float[Array, "trial time input"],
    hidden: Float[Array, "trial time hidden"],
    signal: Float[Array, "trial time hidden"],
) -> CellWeights:
    """:func:`eligibility_gradient` summed over a batch's trials, without traces.

    A trace ``e_ji(t) = sum_{s<=t} (1 - a)^(t - s) d_j(s) z_i(s)`` (``d``: the unit's
    drive ``a tanh'(v)``; ``z``: the presynaptic value) is linear in its history, so
    ``sum_t L_j(t) e_ji(t) = sum_s d_j(s) Lbar_j(s) z_i(s)`` with the learning signal
    filtered backward in time, ``Lbar(s) = L(s) + (1 - a) Lbar(s + 1)``: a scan over
    (trial, hidden) vectors and three matrix products, where the traces' scan carries
    a (hidden x (input + hidden + 1)) trace per trial (2-6 times BPTT's time on the
    CPU; benchmarks/README.md). The same sum, rounded differently (about 1e-7
    relative); exact only without trace clipping, which is not linear.
    """
    previous = jnp.concatenate([jnp.zeros_like(hidden[:, :1]), hidden[:, :-1]], axis=1)
    pre = network_input @ weights.weight_in.T + previous @ weights.weight_rec.T + weights.bias
    drive = alpha * (1.0 - jnp.tanh(pre) ** 2)

    def back(later, learning):
        now = learning + (1.0 - alpha) * later
        return now, now

    _, filtered = jax.lax.scan(
        back, jnp.zeros_like(signal[:, 0]), jnp.swapaxes(signal, 0, 1), reverse=True
    )
    credit = drive * jnp.swapaxes(filtered, 0, 1)  # (trial, time, hidden)
    return CellWeights(
        weight_in=jnp.einsum("nth,nti->hi", credit, network_input),
        weight_rec=jnp.einsum("nth,nti->hi", credit, previous),
        bias=jnp.sum(credit, axis=(0, 1)),
    )


class EProp(AbstractLearningRule):
    """e-prop for the ``rnn``, ``leaky`` and ``gru`` cells (see
    :mod:`motorflow._training.rules._eprop` and :mod:`._eprop_gru`)."""

    kind: Literal["eprop"] = "eprop"
    feedback: Literal["random", "symmetric"] = Field(
        "random",
        description="how output errors reach the hidden units: `random` (fixed random "
        "weights, drawn per replicate from the experiment's seed) or `symmetric` (the "
        "readout's transpose)",
    )
    feedback_scale: PositiveNumber = Field(
        1.0,
        description="random feedback: the weights' std times `sqrt(hidden_size)`. "
        "Partner `feedback`: set with `symmetric`, an error",
    )
    trace_clip: PositiveNumber | None = Field(
        None,
        description="clip each eligibility trace's norm (per weight array and trial) to "
        "this (`null`: no clipping)",
    )
    online: Boolean = Field(
        False,
        description="carry the plant's part of the credit forward: filter the traces "
        "through the plant's impulse response during the trial (the causal form; the "
        "same update as the offline one, exact for the linear point mass, refused for "
        "the arms) instead of differentiating the plant after the rollout",
    )
    feedback_path: Boolean = Field(
        False,
        description="with `online`: also carry the traces through the delayed sensory "
        "feedback, each unit's trace taking the estimated sensitivity of the position "
        "and velocity it sees through its own feedback weights (an approximation of "
        "the loop e-prop cuts)",
    )
    segment_steps: PositiveInt | None = Field(
        None,
        description="with `online`: take the learning signals piece by piece, every this "
        "many steps of the trial, carrying the traces and the loop's state on, so that "
        "training's memory does not grow with the trial's length (null: the whole "
        "trial at once; the same update either way)",
    )
    replace_non_finite: Boolean = Field(
        False, description="replace NaN and infinite gradient entries with 0"
    )
    exact_gradient = False

    def check_model(self, cell, plant, trainable):
        if cell not in _UNIT:
            return (
                f"e-prop's eligibility traces are derived for a tanh unit (cell rnn or "
                f"leaky) and the GRU, not a {cell} cell; use model.network.cell rnn, "
                f"leaky or gru"
            )
        if self.online and not isinstance(plant, PointMass):
            return (
                "e-prop's online form filters the traces through the plant's impulse "
                "response, which is exact only for a linear plant (point_mass); the "
                "arms are nonlinear: use online: false (the offline form "
                "differentiates the plant after the rollout)"
            )
        if self.feedback_path and not self.online:
            return "feedback_path needs online: true (it carries the plant's sensitivities)"
        if self.segment_steps is not None and not self.online:
            return "segment_steps needs online: true (the offline form needs the whole trial)"
        if self.online and self.trace_clip is not None:
            return "trace_clip is implemented for the offline form, not the online one"
        if cell == "gru" and self.trace_clip is not None:
            return "trace_clip is implemented for the tanh units' traces, not the GRU's"
        return None

    def init(self, model: ClosedLoop, *, key: PRNGKeyArray | None) -> Any:
        if self.feedback == "symmetric":
            return None
        if key is None:
            raise ValueError("random feedback weights need a key (Trainer.init(learning_key=))")
        n_hidden = model.network.cell.hidden_size
        shape = (n_hidden, model.network.readout.out_features)
        scale = self.feedback_scale / jnp.sqrt(n_hidden)
        return {
            "feedback": scale * jax.random.normal(key, shape, model.network.readout.weight.dtype)
        }

    def value_and_grad(self, batch: Batch, params, state, *, states: bool = False):
        network = batch.model.network
        cell_kind = network.cell.KIND
        unit = attribute_getter(_UNIT[cell_kind])(batch.model)
        alpha = network.cell.alpha if isinstance(network.cell, LeakyCell) else 1.0
        feedback = network.readout.weight.T if state is None else state["feedback"]
        if self.segment_steps is not None and batch.pieces is not None and not states:
            # (Asked for the rollouts, the rule runs the trial whole: they are kept.)
            total, terms, cell_gradient, readout_gradient = _streamed(
                batch, params, unit, cell_kind, alpha, feedback, self
            )
            finished = self._finish(
                params, cell_kind, cell_gradient, readout_gradient, total, terms, None, False
            )
            return (*finished, state)
        probe = _probe(batch, batch.task.n_steps, online=self.online)

        def probed(probe):
            options = RolloutOptions(probe=probe)
            return batch.loss(jax.lax.stop_gradient(params), options=options, states=True)

        (total, (terms, rollouts)), signals = jax.value_and_grad(probed, has_aux=True)(probe)
        if self.online:
            cell_gradient, readout_gradient = _online(
                batch.model,
                unit,
                cell_kind,
                alpha,
                feedback,
                rollouts,
                signals,
                feedback_path=self.feedback_path,
            )
            return (
                *self._finish(
                    params,
                    cell_kind,
                    cell_gradient,
                    readout_gradient,
                    total,
                    terms,
                    rollouts,
                    states,
                ),
                state,
            )
        learning = signals.output @ feedback.T + signals.hidden  # (trial, time, hidden)
        if cell_kind == "gru":
            weights = GRUWeights(unit.weight_ih, unit.weight_hh, unit.bias, unit.bias_n)

            def trial_gradient(x, h, signal):
                return gru_eligibility_gradient(weights, x, h, signal)
        else:
            weights = CellWeights(unit.weight_in, unit.weight_rec, unit.bias)

            def trial_gradient(x, h, signal):
                return eligibility_gradient(
                    weights, alpha, x, h, signal, trace_clip=self.trace_clip
                )

        if cell_kind != "gru" and self.trace_clip is None:
            # The same sum without traces (the traces' scan is the slow part).
            cell_gradient = filtered_eligibility_gradient(
                weights, alpha, rollouts.network_input, rollouts.hidden, learning
            )
        else:
            per_trial = jax.vmap(trial_gradient)(rollouts.network_input, rollouts.hidden, learning)
            cell_gradient = jax.tree.map(lambda g: jnp.sum(g, axis=0), per_trial)
        readout_gradient = {
            "weight": jnp.einsum("ntc,nth->ch", signals.output, rollouts.hidden),
            "bias": jnp.sum(signals.output, axis=(0, 1)),
        }
        return (
            *self._finish(
                params, cell_kind, cell_gradient, readout_gradient, total, terms, rollouts, states
            ),
            state,
        )

    def _finish(
        self, params, cell_kind, cell_gradient, readout_gradient, total, terms, rollouts, states
    ):
        found = {
            f"{_UNIT[cell_kind]}.{name}": getattr(cell_gradient, name) for name in _NAMES[cell_kind]
        } | {f"network.readout.{name}": value for name, value in readout_gradient.items()}
        gradient = _gradient_like(params, found)
        if self.replace_non_finite:
            gradient = jax.tree.map(
                lambda g: jnp.where(jnp.isfinite(g), g, jnp.zeros_like(g)), gradient
            )
        return (total, (terms, rollouts if states else None)), gradient


def _probe(batch: Batch, n_steps: int, *, online: bool) -> Probe:
    """Zero signals for `n_steps` of every trial of `batch` (with the recorded
    position, velocity and control for the online form)."""
    network = batch.model.network
    leading = (batch.trials.init_pos.shape[0], n_steps)
    dtype = network.readout.weight.dtype
    n_controls = network.readout.out_features
    probe = Probe(
        output=jnp.zeros((*leading, n_controls), dtype),
        hidden=jnp.zeros((*leading, network.cell.hidden_size), dtype),
    )
    if not online:
        return probe
    return Probe(
        output=probe.output,
        hidden=probe.hidden,
        pos=jnp.zeros((*leading, 2), dtype),
        vel=jnp.zeros((*leading, 2), dtype),
        control=jnp.zeros((*leading, n_controls), dtype),
    )


def _online_parts(model, unit, cell_kind, alpha, *, feedback_path):
    """The online form's ``(weights, local step, plant matrices, feedback delay or
    None)`` (:mod:`._eprop_online`)."""
    from ._eprop_online import gru_local, leaky_local, plant_matrices

    if cell_kind == "gru":
        weights = GRUWeights(unit.weight_ih, unit.weight_hh, unit.bias, unit.bias_n)
        local = gru_local()
    else:
        weights = CellWeights(unit.weight_in, unit.weight_rec, unit.bias)
        local = leaky_local(alpha)
    delay = model.feedback.delay if feedback_path else None
    return weights, local, plant_matrices(model), delay


def _summed(gradients):
    """The online form's per-trial ``(cell, readout weight, readout bias)`` gradients
    summed over the trials: the cell's, and the readout's as a dict."""
    cell_gradient, weight, bias = jax.tree.map(lambda g: jnp.sum(g, axis=0), gradients)
    return cell_gradient, {"weight": weight, "bias": bias}


def _online(model, unit, cell_kind, alpha, feedback, rollouts, signals, *, feedback_path):
    """The cell's and the readout's gradients by the online form
    (:mod:`._eprop_online`), summed over the batch's trials."""
    from ._eprop_online import online_gradient

    weights, local, plant, delay = _online_parts(
        model, unit, cell_kind, alpha, feedback_path=feedback_path
    )
    state_error = jnp.concatenate([signals.pos, signals.vel], axis=-1)
    return _summed(
        jax.vmap(
            lambda x, h, s, u, e: online_gradient(
                weights, local, plant, feedback, x, h, s, u, e, feedback_delay=delay
            )
        )(rollouts.network_input, rollouts.hidden, state_error, signals.control, signals.hidden)
    )


def _streamed(batch: Batch, params, unit, cell_kind, alpha, feedback, rule: EProp):
    """``(total, terms, cell gradient, readout gradient)`` by the online form with the
    learning signals taken every ``rule.segment_steps`` steps (``batch.pieces``): each
    piece's rollout and its signals live only while the piece runs, and the traces,
    the sensitivities and the loop's state carry on, so nothing grows with the trial."""
    from .._segments import train_in_segments
    from ._eprop_online import online_start, online_steps

    weights, local, plant, delay = _online_parts(
        batch.model, unit, cell_kind, alpha, feedback_path=rule.feedback_path
    )
    fixed = jax.lax.stop_gradient(params)
    drives, loop_states = batch.pieces.start(fixed)
    carries = jax.vmap(
        lambda hidden: online_start(weights, plant, feedback, hidden, feedback_delay=delay)
    )(loop_states[2])

    def piece(carries, loop_states, first, size):
        def probed(probe):
            options = RolloutOptions(probe=probe)
            return batch.pieces.loss(fixed, drives, loop_states, first, size, options=options)

        probe = _probe(batch, size, online=True)
        (total, (terms, rollouts)), signals = jax.value_and_grad(probed, has_aux=True)(probe)
        state_error = jnp.concatenate([signals.pos, signals.vel], axis=-1)
        carries = jax.vmap(
            lambda carry, x, h, s, u, e: online_steps(
                carry, weights, local, plant, feedback, x, h, s, u, e, feedback_delay=delay
            )
        )(
            carries,
            rollouts.network_input,
            rollouts.hidden,
            state_error,
            signals.control,
            signals.hidden,
        )
        return carries, rollouts.end, total, terms, None

    carries, total, terms, _ = train_in_segments(
        piece, carries, loop_states, n_steps=batch.task.n_steps, length=rule.segment_steps
    )
    return (total, terms, *_summed(carries.totals()))


def _gradient_like(params: Any, found: dict[str, Array]) -> Any:
    """A gradient tree like `params`: the `found` arrays at their paths where the
    parameters have an array, zeros on any other parameter."""
    gradient = jax.tree.map(jnp.zeros_like, params)
    for path, value in found.items():
        get = attribute_getter(path)
        if get(params) is not None:
            gradient = eqx.tree_at(get, gradient, value.astype(get(params).dtype))
    return gradient
