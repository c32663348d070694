"""The loss-term interface: a config block (its `weight` and settings) that scores a
rollout, one value per trial; and the span of steps a rollout holds."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._config_base import Block

if TYPE_CHECKING:
    from .._model._episode import Targets
    from .._model._loop import Rollout
    from .._tasks import TaskConfig


class Span(eqx.Module):
    """Which steps of the trial a rollout holds: from `first` on, of `n_steps` in all;
    `start_pos` is where the effector was at the trial's first step (`(..., 2)`)."""

    first: Int[Array, ""] | int
    n_steps: int = eqx.field(static=True)
    start_pos: Float[Array, "*trials 2"]

    @classmethod
    def whole(cls, rollout: Rollout) -> Span:
        return cls(0, rollout.pos.shape[-2], rollout.pos[..., 0, :])

    def is_last(self, length: int) -> Array:
        """Whether the span ends with the trial's last step."""
        return jnp.asarray(self.first + length == self.n_steps)


class AbstractLossTerm(Block):
    """One named term of the loss: its `weight` (0 switches it off; it is still
    recorded) and whatever settings the term has.

    A term scores the steps of a rollout that its :class:`Span` says it holds, so
    that the scores of a trial's consecutive segments add up to the whole trial's.
    """

    # The term's name: its key under the training's `loss` and in the history.
    KIND: ClassVar[str]

    @abc.abstractmethod
    def per_trial(self, rollout: Rollout, targets: Targets, span: Span) -> Float[Array, "*trials"]:
        """The term's value for each trial (the leading dims of `rollout`)."""
        raise NotImplementedError

    def counts_in(self, task: type[TaskConfig]) -> bool:
        """Whether the term can add to the loss of trials of the task kind `task` (a
        weight of 0 adds nothing); what a report of the loss's weights lists. Every
        term declares its `weight`."""
        return self.weight > 0
