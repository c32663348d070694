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

Under interventions on the units (:mod:`motorflow._perturbations._units`) a unit held
at a value has a state that no weight moves, so its traces are zero while it is held
and start again from there; a frozen unit keeps its state and so its traces; additions
and noise leave the derivatives as they are (:meth:`UnitEffects.held`). With those
traces e-prop is still exact wherever it cuts no path. A clamp of a readout space
holds a mix of the units, which no unit's own trace follows: it is refused.
"""

from __future__ import annotations

from typing import Any, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, PRNGKeyArray
from pydantic import Field

from ..._cells import AbstractCell
from ..._config_base import Boolean, PositiveInt, PositiveNumber
from ..._model._attribute_paths import attribute_getter
from ..._model._episode import held_units
from ..._model._loop import ClosedLoop, RolloutOptions
from ._base import AbstractLearningRule, Batch
from ._eprop_gru import gru_eligibility_gradient
from ._eprop_leaky import eligibility_gradient, filtered_eligibility_gradient
from ._eprop_online import batch_gradient, signal_probe, streamed_gradient, unit_weights


def _unit_path(cell: AbstractCell) -> str:
    """The model's path to where `cell` keeps the weights e-prop trains (its
    `EPROP_UNIT`)."""
    return ".".join(part for part in ("network.cell", cell.EPROP_UNIT) if part)


class EProp(AbstractLearningRule):
    """e-prop for the ``rnn``, ``leaky`` and ``gru`` cells (see
    :mod:`motorflow._training.rules._eprop`; the traces: :mod:`._eprop_leaky` and
    :mod:`._eprop_gru`; the online form: :mod:`._eprop_online`)."""

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
        traces = cell.EPROP_TRACES
        if traces is None:
            return (
                f"e-prop's eligibility traces are derived for a tanh unit (cell rnn or "
                f"leaky) and the GRU, not a {cell.KIND} cell; use model.network.cell rnn, "
                f"leaky or gru"
            )
        if self.online and not plant.linear:
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
        if traces == "gru" and self.trace_clip is not None:
            return "trace_clip is implemented for the tanh units' traces, not the GRU's"
        return None

    def intervention_problem(self, interventions):
        # A clamp of a readout space sets a mix of the units, which no unit's own trace
        # can follow; holds and freezes of units zero or keep their traces.
        spaces = [p for p in interventions if getattr(p, "space", "units") != "units"]
        if not spaces:
            return None
        return (
            f"e-prop's eligibility traces are each unit's own, and a clamp of the "
            f"{spaces[0].space} space holds a mix of the units; clamp chosen units "
            "(space: units), train with bptt or truncated_bptt, or clamp the space in "
            "the evaluation conditions only"
        )

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
        cell, traces = network.cell, network.cell.EPROP_TRACES
        unit = attribute_getter(_unit_path(cell))(batch.model)
        alpha = cell.eprop_alpha()
        feedback = network.readout.weight.T if state is None else state["feedback"]
        held = held_units(batch.model, batch.task, batch.trials)
        if self.segment_steps is not None and batch.pieces is not None and not states:
            # (Asked for the rollouts, the rule runs the trial whole: they are kept.)
            total, terms, cell_gradient, readout_gradient = streamed_gradient(
                batch,
                params,
                unit,
                traces,
                alpha,
                feedback,
                segment_steps=self.segment_steps,
                feedback_path=self.feedback_path,
                held=held,
            )
            finished = self._finish(
                params, cell, cell_gradient, readout_gradient, total, terms, None, False
            )
            return (*finished, state)
        probe = signal_probe(batch, batch.task.n_steps, online=self.online)

        def probed(probe):
            options = RolloutOptions(probe=probe)
            return batch.loss(jax.lax.stop_gradient(params), options=options, states=True)

        (total, (terms, rollouts)), signals = jax.value_and_grad(probed, has_aux=True)(probe)
        if self.online:
            cell_gradient, readout_gradient = batch_gradient(
                batch.model,
                unit,
                traces,
                alpha,
                feedback,
                rollouts,
                signals,
                feedback_path=self.feedback_path,
                held=held,
            )
            return (
                *self._finish(
                    params,
                    cell,
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
        weights = unit_weights(unit, traces)
        if traces == "gru":

            def trial_gradient(x, h, signal, held):
                return gru_eligibility_gradient(weights, x, h, signal, held=held)
        else:

            def trial_gradient(x, h, signal, held):
                return eligibility_gradient(
                    weights, alpha, x, h, signal, trace_clip=self.trace_clip, held=held
                )

        if traces != "gru" and self.trace_clip is None:
            # The same sum without traces (the traces' scan is the slow part).
            cell_gradient = filtered_eligibility_gradient(
                weights, alpha, rollouts.network_input, rollouts.hidden, learning, held=held
            )
        else:
            per_trial = jax.vmap(trial_gradient)(
                rollouts.network_input, rollouts.hidden, learning, held
            )
            cell_gradient = jax.tree.map(lambda g: jnp.sum(g, axis=0), per_trial)
        readout_gradient = {
            "weight": jnp.einsum("ntc,nth->ch", signals.output, rollouts.hidden),
            "bias": jnp.sum(signals.output, axis=(0, 1)),
        }
        return (
            *self._finish(
                params, cell, cell_gradient, readout_gradient, total, terms, rollouts, states
            ),
            state,
        )

    def _finish(
        self, params, cell, cell_gradient, readout_gradient, total, terms, rollouts, states
    ):
        found = {
            f"{_unit_path(cell)}.{name}": getattr(cell_gradient, name)
            for name in cell.EPROP_WEIGHTS
        } | {f"network.readout.{name}": value for name, value in readout_gradient.items()}
        gradient = _gradient_like(params, found)
        if self.replace_non_finite:
            gradient = jax.tree.map(
                lambda g: jnp.where(jnp.isfinite(g), g, jnp.zeros_like(g)), gradient
            )
        return (total, (terms, rollouts if states else None)), gradient


def _gradient_like(params: Any, found: dict[str, Array]) -> Any:
    """A gradient tree like `params`: the `found` arrays at their paths where the
    parameters have an array, zeros on any other parameter."""
    gradient = jax.tree.map(jnp.zeros_like, params)
    for path, value in found.items():
        get = attribute_getter(path)
        if get(params) is not None:
            gradient = eqx.tree_at(get, gradient, value.astype(get(params).dtype))
    return gradient
