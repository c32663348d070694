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
from typing import Any

import jax
import jax.numpy as jnp
from jaxtyping import PyTree

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
