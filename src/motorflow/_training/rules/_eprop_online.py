"""e-prop's online (causal) form: eligibility traces filtered through the plant.

The offline form (:mod:`._eprop`) takes each step's learning signal ``dE/dy(t)``
after the rollout, by differentiating the loss through the plant's later states. For
a linear plant the same credit can be carried forward instead, as Bellec et al.
(2020, Nature Communications 11:3625) carry the readout's leak by filtering each
trace with the readout's own filter: with the plant ``s(t+1) = A s(t) + G y(t)``
(the point mass: position and velocity are linear in past forces), the state's
sensitivity to a weight of unit j, as e-prop estimates it, obeys

    S(t+1) = A S(t) + sum_k G[:, k] B_jk e_ji(t)

(``B`` the feedback: random, or the readout's transpose), and the gradient estimate is

    sum_t  dE/ds(t) . S(t)  +  (B dE/du(t) + dE/dh(t))_j e_ji(t)

with ``dE/ds(t)`` the loss's direct dependence on the recorded state at step t (the
current position and velocity error: the loss terms are per-step functions of the
state) and ``dE/du(t)`` on the control (effort). Unrolling ``S`` gives exactly the
offline form's ``sum_t (B dE/dy(t))_j e_ji(t)``, since ``dE/dy(t) = dE/du(t) +
G^T lambda(t+1)``, ``lambda(t) = dE/ds(t) + A^T lambda(t+1)``. The readout gets its
exact gradient the same way (its filtered presynaptic activity).

The scan carries the traces, the sensitivities (state size times the weights) and
the running sum: nothing grows with the trial's length. ``A`` and ``G`` are the
Jacobians of one plant step at rest, exact for the point mass; the arms are not
linear, and the rule refuses them rather than give a silently different update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float

from ..._model._loop import ClosedLoop, Probe, RolloutOptions
from ..._plants import step
from ._base import Batch
from ._eprop_gru import GRUWeights, gru_per_unit, gru_step_traces
from ._eprop_leaky import CellWeights, held_traces, tanh_per_unit


def plant_matrices(model: ClosedLoop) -> tuple[Array, Array, Array]:
    """``(A, G, C)`` of one network step of the plant at rest: the flat state's
    ``s(t+1) = A s(t) + G u(t)`` and the recorded position and velocity ``C s(t)``
    (Jacobians, exact for a linear plant)."""
    rest = jnp.zeros(2, model.network.readout.weight.dtype)
    flat, unravel = ravel_pytree(model.plant.init(rest, rest))
    n_controls = model.network.readout.out_features

    def next_state(state, control):
        new = step(
            model.plant,
            unravel(state),
            control,
            jnp.zeros_like(rest),
            dt=model.dt,
            method=model.method,
            n_substeps=model.n_substeps,
        )
        return ravel_pytree(new)[0]

    control = jnp.zeros(n_controls, flat.dtype)
    transition, drive = jax.jacobian(next_state, argnums=(0, 1))(flat, control)
    observe = jax.jacobian(lambda s: jnp.concatenate(model.plant.effector(unravel(s))))(flat)
    return transition, drive, observe


class OnlineCarry(eqx.Module):
    """What the online form carries from step to step of one trial: the hidden state
    before the step, the eligibility traces, the plant state's estimated sensitivity
    to each cell weight (and the readout's), the queue of observed sensitivities the
    feedback path reads (empty without it), and the running gradient sums. Its size
    does not depend on the trial's length."""

    hidden: Array
    traces: Any
    sensitivity: Any
    readout_sensitivity: Array
    bias_sensitivity: Array
    past: Any
    cell_total: Any
    weight_total: Array
    bias_total: Array

    def totals(self) -> tuple[Any, Array, Array]:
        """``(cell gradient, readout weight gradient, readout bias gradient)``."""
        return self.cell_total, self.weight_total, self.bias_total


# A cell's local step: (weights, input, state before) -> (decay, immediate derivatives,
# each unit's derivative with respect to the input), and how a per-unit vector
# spreads over its weights.
LocalStep = Callable[[object, Array, Array], tuple[object, object]]
PerUnit = Callable[[Array], object]


def leaky_local(alpha: float) -> tuple[LocalStep, PerUnit]:
    """The tanh unit's trace step (:mod:`._eprop_leaky`): decay ``1 - a``."""

    def local(weights, x, h):
        pre = weights.weight_in @ x + weights.weight_rec @ h + weights.bias
        drive = alpha * (1.0 - jnp.tanh(pre) ** 2)
        immediate = CellWeights(drive[:, None] * x[None, :], drive[:, None] * h[None, :], drive)
        sensed = drive[:, None] * weights.weight_in  # dh'_j/dx: unit j's own row
        return tanh_per_unit(jnp.full_like(drive, 1.0 - alpha)), immediate, sensed

    return local, tanh_per_unit


def gru_local() -> tuple[LocalStep, PerUnit]:
    """The GRU's trace step (:mod:`._eprop_gru`): decay ``u``."""

    def local(weights, x, h):
        _, keep, immediate = gru_step_traces(weights, x, h)
        sensed = jax.jacfwd(lambda x: gru_step_traces(weights, x, h)[0])(x)
        return gru_per_unit(keep), immediate, sensed

    return local, gru_per_unit


def online_start(
    weights,
    plant: tuple[Array, Array, Array],
    feedback: Float[Array, "hidden control"],
    hidden: Float[Array, " hidden"],
    *,
    feedback_delay: int | None = None,
) -> OnlineCarry:
    """One trial's :class:`OnlineCarry` before its first step, the hidden state there
    `hidden` (nothing credited yet, the plant's sensitivities zero)."""
    transition, _, observe = plant
    n_state, seen_size = transition.shape[0], observe.shape[0]
    n_hidden, n_controls = feedback.shape
    dtype = hidden.dtype
    zeros = jax.tree.map(jnp.zeros_like, weights)
    queue = 0 if feedback_delay is None else feedback_delay + 1
    return OnlineCarry(
        hidden=hidden,
        traces=zeros,
        sensitivity=jax.tree.map(lambda w: jnp.zeros((n_state, *w.shape), w.dtype), weights),
        readout_sensitivity=jnp.zeros((n_state, n_controls, n_hidden), dtype),
        bias_sensitivity=jnp.zeros((n_state, n_controls), dtype),
        past=jax.tree.map(lambda w: jnp.zeros((queue, seen_size, *w.shape), w.dtype), weights),
        cell_total=zeros,
        weight_total=jnp.zeros((n_controls, n_hidden), dtype),
        bias_total=jnp.zeros(n_controls, dtype),
    )


def online_steps(
    carry: OnlineCarry,
    weights,
    cell: tuple[LocalStep, PerUnit],
    plant: tuple[Array, Array, Array],
    feedback: Float[Array, "hidden control"],
    network_input: Float[Array, "time input"],
    hidden: Float[Array, "time hidden"],
    state_error: Float[Array, "time 4"],
    control_error: Float[Array, "time control"],
    hidden_error: Float[Array, "time hidden"],
    *,
    feedback_delay: int | None = None,
    held: tuple[Array, Array] | None = None,
) -> OnlineCarry:
    """One trial's `carry` after the given steps, in one forward scan.

    - `weights`: the cell's weights (:class:`CellWeights` or :class:`GRUWeights`).
    - `cell`: its local step (:func:`leaky_local`, :func:`gru_local`).
    - `plant`: ``(A, G, C)`` (:func:`plant_matrices`).
    - `feedback`: ``B`` (the readout's transpose for symmetric feedback).
    - `network_input`, `hidden`: the input at each step and the state after it.
    - `state_error`, `control_error`, `hidden_error`: the loss's direct derivatives
      with respect to each step's recorded position and velocity, control and hidden
      state.
    - `feedback_delay`: with d, also carry the traces through the sensory feedback
      (the last 4 inputs: position and velocity of step ``t - d``): its estimated
      sensitivity ``C S(t - d)`` enters each unit's trace through that unit's own
      input weights (None: the feedback path is cut, as in e-prop).
    - `held`: ``(reached, kept)`` of these steps under interventions on the units, or
      None: a held unit's traces are zero while held, a frozen one's kept
      (:func:`._eprop_leaky.held_traces`); its sensitivities follow from them.

    Consecutive pieces of a trial, each from the carry the last one ended with, give
    the carry of the whole trial in one piece.
    """
    local, per_unit = cell
    transition, drive, observe = plant
    to_state = drive @ feedback.T  # (state, hidden): where unit j's credit moves the plant
    seen_size = observe.shape[0]

    def filtered(sensitivity):
        return jax.tree.map(lambda s: jnp.tensordot(transition, s, axes=1), sensitivity)

    def step_(c: OnlineCarry, xs) -> tuple[OnlineCarry, None]:
        x, h, s_err, u_err, h_err, *mask = xs
        grad_state = observe.T @ s_err
        decay, immediate, sensed = local(weights, x, c.hidden)
        past = c.past
        if feedback_delay is not None:
            # The observation's sensitivity now, queued; the network sees the one d
            # steps old, through each unit's own feedback weights.
            observed = jax.tree.map(lambda s: jnp.tensordot(observe, s, axes=1), c.sensitivity)
            past = jax.tree.map(lambda q, o: jnp.concatenate([o[None], q[:-1]]), past, observed)
            seen = jax.tree.map(lambda q: q[feedback_delay], past)
            through = jax.vmap(per_unit, in_axes=1)(sensed[:, -seen_size:])
            immediate = jax.tree.map(
                lambda i, w, q: i + jnp.sum(w * q, axis=0), immediate, through, seen
            )
        traces = jax.tree.map(lambda e, d, new: d * e + new, c.traces, decay, immediate)
        if mask:
            traces = held_traces(c.traces, traces, *map(per_unit, mask))
        signal = per_unit(feedback @ u_err + h_err)
        cell_total = jax.tree.map(
            lambda g, s, sig, e: g + jnp.tensordot(grad_state, s, axes=1) + sig * e,
            c.cell_total,
            c.sensitivity,
            signal,
            traces,
        )
        weight_total = (
            c.weight_total
            + jnp.tensordot(grad_state, c.readout_sensitivity, axes=1)
            + jnp.outer(u_err, h)
        )
        bias_total = c.bias_total + grad_state @ c.bias_sensitivity + u_err
        injected = jax.vmap(per_unit)(to_state)
        sensitivity = jax.tree.map(
            lambda s, inj, e: s + inj * e[None], filtered(c.sensitivity), injected, traces
        )
        readout_sensitivity = (
            jnp.tensordot(transition, c.readout_sensitivity, axes=1)
            + drive[:, :, None] * h[None, None, :]
        )
        bias_sensitivity = transition @ c.bias_sensitivity + drive
        new = OnlineCarry(
            h,
            traces,
            sensitivity,
            readout_sensitivity,
            bias_sensitivity,
            past,
            cell_total,
            weight_total,
            bias_total,
        )
        return new, None

    xs = (network_input, hidden, state_error, control_error, hidden_error)
    carry, _ = jax.lax.scan(step_, carry, (*xs, *(() if held is None else held)))
    return carry


def online_gradient(weights, cell, plant, feedback, network_input, hidden, *errors, **options):
    """One trial's ``(cell gradient, readout weight gradient, readout bias gradient)``
    by the online form, the whole trial in one piece (arguments as
    :func:`online_steps`'s; the hidden state before the trial is zero)."""
    carry = online_start(
        weights,
        plant,
        feedback,
        jnp.zeros_like(hidden[0]),
        feedback_delay=options.get("feedback_delay"),
    )
    carry = online_steps(
        carry, weights, cell, plant, feedback, network_input, hidden, *errors, **options
    )
    return carry.totals()


def signal_probe(batch: Batch, n_steps: int, *, online: bool) -> Probe:
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


def unit_weights(unit, traces: str) -> CellWeights | GRUWeights:
    """The weights e-prop trains in a cell's `unit`, for its `traces` (the cell's
    `EPROP_TRACES`: the tanh unit's or the GRU's)."""
    if traces == "gru":
        return GRUWeights(unit.weight_ih, unit.weight_hh, unit.bias, unit.bias_n)
    return CellWeights(unit.weight_in, unit.weight_rec, unit.bias)


def _parts(model, unit, traces, alpha, *, feedback_path):
    """The online form's ``(weights, local step, plant matrices, feedback delay or
    None)``."""
    local = gru_local() if traces == "gru" else leaky_local(alpha)
    delay = model.feedback.delay if feedback_path else None
    return unit_weights(unit, traces), local, plant_matrices(model), delay


def _summed(gradients):
    """The online form's per-trial ``(cell, readout weight, readout bias)`` gradients
    summed over the trials: the cell's, and the readout's as a dict."""
    cell_gradient, weight, bias = jax.tree.map(lambda g: jnp.sum(g, axis=0), gradients)
    return cell_gradient, {"weight": weight, "bias": bias}


def batch_gradient(
    model, unit, traces, alpha, feedback, rollouts, signals, *, feedback_path, held=None
):
    """The cell's and the readout's gradients by the online form, summed over the
    batch's trials (`rollouts` and their learning `signals`, the whole trial; `held`:
    the trials' held units, :func:`motorflow._model._episode.held_units`)."""
    weights, local, plant, delay = _parts(model, unit, traces, alpha, feedback_path=feedback_path)
    state_error = jnp.concatenate([signals.pos, signals.vel], axis=-1)
    return _summed(
        jax.vmap(
            lambda x, h, s, u, e, held: online_gradient(
                weights, local, plant, feedback, x, h, s, u, e, feedback_delay=delay, held=held
            )
        )(
            rollouts.network_input,
            rollouts.hidden,
            state_error,
            signals.control,
            signals.hidden,
            held,
        )
    )


def streamed_gradient(
    batch: Batch, params, unit, traces, alpha, feedback, *, segment_steps, feedback_path, held
):
    """``(total, terms, cell gradient, readout gradient)`` by the online form with the
    learning signals taken every `segment_steps` steps (``batch.pieces``): each
    piece's rollout and its signals live only while the piece runs, and the traces,
    the sensitivities and the loop's state carry on, so nothing grows with the trial."""
    from .._segments import train_in_segments

    weights, local, plant, delay = _parts(
        batch.model, unit, traces, alpha, feedback_path=feedback_path
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

        probe = signal_probe(batch, size, online=True)
        (total, (terms, rollouts)), signals = jax.value_and_grad(probed, has_aux=True)(probe)
        state_error = jnp.concatenate([signals.pos, signals.vel], axis=-1)
        held_now = jax.tree.map(
            lambda mask: jax.lax.dynamic_slice_in_dim(mask, first, size, axis=1), held
        )

        def steps(carry, *xs, held):
            return online_steps(
                carry, weights, local, plant, feedback, *xs, feedback_delay=delay, held=held
            )

        carries = jax.vmap(lambda carry, *xs: steps(carry, *xs[:-1], held=xs[-1]))(
            carries,
            rollouts.network_input,
            rollouts.hidden,
            state_error,
            signals.control,
            signals.hidden,
            held_now,
        )
        return carries, rollouts.end, total, terms, None

    carries, total, terms, _ = train_in_segments(
        piece, carries, loop_states, n_steps=batch.task.n_steps, length=segment_steps
    )
    return (total, terms, *_summed(carries.totals()))
