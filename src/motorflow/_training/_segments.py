"""Updates within a rollout: a batch's trials run in segments of steps, with an update
after each (``update_every`` of truncated BPTT and of RLS).

Each segment runs every trial on from where the last one left it (plant, feedback
queue, hidden state), with the parameters as the previous segment's update left
them; its loss is that segment's part of the trials' loss
(:func:`motorflow._losses.loss_terms` with a span) and no gradient flows back into
an earlier segment. The segments of equal length run as one `lax.scan`; a shorter
last one (when the length does not divide the trial) runs after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import PyTree

from .._losses import Span, loss_terms, total_loss
from .._model._episode import run_segment, trial_drive
from .._model._loop import PLAIN
from .._tasks import Trials
from .rules import Batch, Pieces

if TYPE_CHECKING:
    from ._trainer import Trainer

# One segment's update: (training state, loop states, first step, length) ->
# (training state, loop states after the segment, total, terms, gradient).
SegmentStep = Callable[[PyTree, PyTree, Any, int], tuple[PyTree, PyTree, Any, Any, PyTree]]


def train_in_segments(
    segment_step: SegmentStep,
    state: PyTree,
    loop_states: PyTree,
    *,
    n_steps: int,
    length: int,
) -> tuple[PyTree, Any, dict[str, Any], PyTree]:
    """Run `n_steps` in segments of `length` (one segment if it is longer), with
    `segment_step` updating the training `state` (parameters, optimizer and rule
    state) after each.

    Returns the state after the last segment, the total and terms summed over the
    segments (the trials' loss as they ran) and the sum of the segments' gradients.
    """
    length = min(length, n_steps)
    n_full, rest = divmod(n_steps, length)

    def segment(carry, first, size):
        state, loop_states, *sums = carry
        state, loop_states, *found = segment_step(state, loop_states, first, size)
        sums = jax.tree.map(jnp.add, sums, found)
        return (state, jax.lax.stop_gradient(loop_states), *sums)

    shapes = jax.eval_shape(
        lambda state, loop_states: segment_step(state, loop_states, 0, length), state, loop_states
    )[2:]
    zeros = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)
    carry = (state, loop_states, *zeros)
    carry, _ = jax.lax.scan(
        lambda carry, first: (segment(carry, first, length), None),
        carry,
        jnp.arange(n_full) * length,
    )
    if rest:
        carry = segment(carry, n_full * length, rest)
    state, _, total, terms, gradient = carry
    return state, total, terms, gradient


def trial_pieces(trainer: Trainer, frozen, trials: Trials, key) -> Pieces:
    """One replicate's batch as :class:`Pieces`: its trials run in consecutive pieces
    of steps, with the noise (from `key`) of the whole rollouts."""
    keys = jax.random.split(key, trials.init_pos.shape[0])

    def start(params):
        model = eqx.combine(params, frozen, trainer.static)
        drives = jax.vmap(lambda trial, key: trial_drive(model, trainer.task, trial, key=key))(
            trials, keys
        )
        return drives, jax.vmap(model.start)(trials.init_pos, trials.init_vel)

    def loss(params, drives, loop_states, first, length, *, options=PLAIN):
        model = eqx.combine(params, frozen, trainer.static)
        # The options too: a probe has a leading trial dim.
        rollouts, targets = jax.vmap(
            lambda drive, loop_state, options: run_segment(
                model, drive, loop_state, first, length, options=options
            )
        )(drives, loop_states, options)
        span = Span(first, trainer.task.n_steps, drives.start_pos)
        terms = loss_terms(trainer.config.loss, rollouts, targets, span)
        total = total_loss(trainer.config.loss, terms, weights=trainer.loss_weights)
        return total, (terms, rollouts)

    return Pieces(start, loss)


def learn_in_segments(
    trainer: Trainer, state, fixed, trials: Trials, key, batch, trained_in, length: int
):
    """One replicate's batch run in segments of `length` steps by `trainer`, with an
    update (:meth:`Trainer._learn`) after each: the new ``(params, opt_state,
    learning_state)``, the total and terms summed over the segments, and the sum of
    their gradients."""
    frozen, _ = fixed
    pieces = trial_pieces(trainer, frozen, trials, key)
    drives, loop_states = pieces.start(state[0])

    def segment_step(state, loop_states, first, size):
        def loss(params, *, states=False, options=PLAIN):
            # The rollouts always: the next segment runs on from their `end`.
            return pieces.loss(params, drives, loop_states, first, size, options=options)

        problem = Batch(
            loss, eqx.combine(state[0], frozen, trainer.static), trainer.task, trials, first
        )
        state, total, terms, grads, rollouts = trainer._learn(
            problem, state, fixed, batch, trained_in, None, states=True
        )
        return state, rollouts.end, total, terms, grads

    return train_in_segments(
        segment_step, state, loop_states, n_steps=trainer.task.n_steps, length=length
    )
