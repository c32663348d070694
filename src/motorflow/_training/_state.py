"""What training carries from batch to batch, and what it records of each batch."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray


class TrainState(eqx.Module):
    """Everything that changes during training (a checkpoint is exactly this + history).

    **Arguments:**

    - `params`: the trainable arrays of the ensemble (replicate axis first), None elsewhere.
    - `opt_state`: the optimizer state, one per replicate (replicate axis first).
    - `step`: how many batches have been trained.
    - `key`: the base key of the per-batch noise; batch b uses ``fold_in(key, b)``.
    - `diverged_at`: per replicate, -1 while it trains; else the batch whose update
      gave a non-finite loss or parameters (or after which its validation loss was
      not finite): it keeps its parameters after that many batches.
    - `best_params`, `best_loss`, `best_batch`: per replicate, the parameters with the
      lowest validation loss so far (the first of equals), that loss and the batch
      count it was measured after (-1 before the first validation).
    - `learning_state`: the learning rule's own state, one per replicate (random
      feedback weights, information matrices; None for backpropagation).
    """

    params: Any
    opt_state: Any
    learning_state: Any
    step: Int[Array, ""]
    key: PRNGKeyArray = eqx.field(kw_only=True)
    diverged_at: Int[Array, " replicate"]
    best_params: Any
    best_loss: Float[Array, " replicate"]
    best_batch: Int[Array, " replicate"]


class BatchRecords(eqx.Module):
    """What a compiled call records per batch, NaN at skipped steps (and for a replicate
    once it diverged).

    - `loss`: per loss term and ``total``, `(chunk, replicate)`.
    - `grad_norm`: ``total`` (and each term with ``gradient_norms: per_term``),
      `(chunk, replicate)`: :meth:`LeafOptimizer.gradient_norm`.
    - `learning_rate`: `(chunk,)`.
    """

    loss: dict[str, Array]
    grad_norm: dict[str, Array]
    learning_rate: Array


@jax.jit
def keep_best(state: TrainState, loss: Float[Array, " replicate"], batch) -> TrainState:
    """`state` with each replicate's best parameters replaced by its current ones where
    `loss` (validation, after `batch` batches; NaN never is) beats its best so far."""
    better = loss < state.best_loss

    def pick(new, old):
        return jnp.where(better.reshape(-1, *[1] * (new.ndim - 1)), new, old)

    return eqx.tree_at(
        lambda s: (s.best_params, s.best_loss, s.best_batch),
        state,
        (
            jax.tree.map(pick, state.params, state.best_params),
            jnp.where(better, loss, state.best_loss),
            jnp.where(better, batch, state.best_batch),
        ),
    )
