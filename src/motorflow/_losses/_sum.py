"""The loss of rollouts: each configured term averaged over trials, and their weighted sum."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import jax.numpy as jnp
from jaxtyping import Array, Float

from ._base import Span

if TYPE_CHECKING:
    from .._model._episode import Targets
    from .._model._loop import Rollout
    from ._config import LossConfig


def loss_terms(
    config: LossConfig, rollout: Rollout, targets: Targets, span: Span | None = None
) -> dict[str, Float[Array, ""]]:
    """Each configured term (:data:`LOSS_TERMS`) averaged over trials (the leading dims
    of `rollout`).

    `targets` are the goal at each step of each trial (it moves when a target jumps)
    and the steps on which the effector should hold still at its start.

    With a `span`, the rollout holds only some consecutive steps of the trial (a
    segment: :func:`motorflow._model._episode.run_segment`) and each term is that
    segment's part of the trial's: the terms of a trial's segments add up to its terms.
    """
    span = Span.whole(rollout) if span is None else span
    return {
        name: jnp.mean(term.per_trial(rollout, targets, span))
        for name, term in config.terms.items()
    }


def total_loss(
    config: LossConfig,
    terms: dict[str, Array],
    *,
    weights: Mapping[str, float | Array] | None = None,
) -> Array:
    """The weighted sum of the terms: by `weights` (per term, a number or a scalar
    array: a trainer's, :attr:`motorflow.Trainer.loss_weights`), else by the config's."""
    if weights is None:
        weights = {name: term.weight for name, term in config.terms.items()}
    return sum(weights[name] * value for name, value in terms.items())
