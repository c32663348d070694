"""Parameter updates within a rollout: a batch's trials run in segments of steps, with
an optimizer step after each (truncated BPTT's ``update_every``).

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

# (params, loop states, first step, length) -> (total, (terms, loop states after)).
SegmentLoss = Callable[[PyTree, PyTree, Any, int], tuple[Any, tuple[dict[str, Any], PyTree]]]
# (gradient, params, optimizer state) -> (params, optimizer state).
Update = Callable[[PyTree, PyTree, PyTree], tuple[PyTree, PyTree]]


def train_in_segments(
    segment_loss: SegmentLoss,
    update: Update,
    params: PyTree,
    opt_state: PyTree,
    loop_states: PyTree,
    *,
    n_steps: int,
    length: int,
) -> tuple[PyTree, PyTree, Any, dict[str, Any], PyTree]:
    """Run `n_steps` in segments of `length` (one segment if it is longer), updating
    after each.

    Returns the parameters and optimizer state after the last update, the total and
    terms summed over the segments (the trials' loss as they ran) and the sum of the
    segments' gradients.
    """

    def segment(carry, first, size):
        params, opt_state, loop_states, total, terms, gradient = carry
        (seg_total, (seg_terms, loop_states)), grads = jax.value_and_grad(
            segment_loss, has_aux=True
        )(params, loop_states, first, size)
        params, opt_state = update(grads, params, opt_state)
        return (
            params,
            opt_state,
            jax.lax.stop_gradient(loop_states),
            total + seg_total,
            jax.tree.map(jnp.add, terms, seg_terms),
            jax.tree.map(jnp.add, gradient, grads),
        )

    length = min(length, n_steps)
    n_full, rest = divmod(n_steps, length)
    total, (terms, _) = jax.eval_shape(
        lambda params, states: segment_loss(params, states, 0, length), params, loop_states
    )
    zeros = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), (total, terms))
    carry = (params, opt_state, loop_states, *zeros, jax.tree.map(jnp.zeros_like, params))
    carry, _ = jax.lax.scan(
        lambda carry, first: (segment(carry, first, length), None),
        carry,
        jnp.arange(n_full) * length,
    )
    if rest:
        carry = segment(carry, n_full * length, rest)
    params, opt_state, _, total, terms, gradient = carry
    return params, opt_state, total, terms, gradient
