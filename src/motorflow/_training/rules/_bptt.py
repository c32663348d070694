"""Backpropagation through time, whole or truncated to a window of steps, optionally
with the gradient's path through the sensory feedback or the recurrence cut."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..._config_base import Boolean, PositiveInt
from ..._model._loop import RolloutOptions
from ._base import AbstractLearningRule, backpropagated


class _GradientPaths(AbstractLearningRule):
    """The paths backpropagation follows through the closed loop: cutting one shows
    what a rule that lacks it loses. Symmetric e-prop (Bellec et al. 2020, Nat Commun
    11:3625) is exactly BPTT with `through_feedback` false and `recurrence` ``leak``
    (for the rnn and leaky cells)."""

    through_feedback: Boolean = Field(
        True,
        description="let the gradient flow back through the sensory feedback the network "
        "sees (`false`: an output reaches the loss only through the plant, never through "
        "what the network senses of it later)",
    )
    recurrence: Literal["full", "leak"] = Field(
        "full",
        description="how the gradient flows from one hidden state to the next: `full`, "
        "or `leak`: only through each unit's own carry (the leaky cell's `(1 - a) h`, a "
        "GRU's `z h`, z its update gate, nothing for the rnn), not through the recurrent weights, as "
        "e-prop's eligibility traces",
    )

    def backpropagation_options(self) -> RolloutOptions:
        return self.rollout_options(self.gradient_window())

    def _uncut(self) -> bool:
        return self.through_feedback and self.recurrence == "full"

    def rollout_options(self, gradient_window: int | None = None) -> RolloutOptions:
        """The rollout options that give this rule's gradient paths."""
        return RolloutOptions(
            gradient_window=gradient_window,
            through_feedback=self.through_feedback,
            recurrence=self.recurrence,
        )


class BPTT(_GradientPaths):
    """Backpropagation through the whole rollout."""

    kind: Literal["bptt"] = "bptt"

    def is_backpropagation(self, n_steps: int) -> bool:
        return self._uncut()

    def value_and_grad(self, batch, params, state, *, states: bool = False):
        options = self.rollout_options()
        return *backpropagated(batch, params, options=options, states=states), state


class TruncatedBPTT(_GradientPaths):
    """Backpropagation through at most `window` steps: the rollout runs whole, but no
    gradient flows back across the steps ``window, 2 window, ...`` (Williams & Peng
    1990, Neural Computation 2(4); the epoch-wise truncation BPTT(h; h) of Williams &
    Zipser 1995). A window as long as the rollout is BPTT.

    With `update_every` k, the parameters also update within the rollout: after each
    k steps, from the loss of those steps (:mod:`motorflow._training._segments`); the next
    steps run with the new parameters from where the loop got to, and no gradient
    flows back into an earlier segment. NeuroTorch's ``optim_time_steps``."""

    kind: Literal["truncated_bptt"] = "truncated_bptt"
    window: PositiveInt = Field(
        10,
        description="the steps a gradient flows back through (at most the task's `n_steps`, "
        "which is backpropagation through the whole trial)",
    )
    update_every: PositiveInt | None = Field(
        None,
        description="update the parameters after every this many steps of a rollout, "
        "within it (`null`: once per rollout); at most the task's `n_steps`",
    )

    def gradient_window(self) -> int:
        return self.window

    def is_backpropagation(self, n_steps: int) -> bool:
        # No cut falls inside the rollout, and the update comes after it.
        return self._uncut() and self.window >= n_steps and self.update_every is None

    def segment_length(self) -> int | None:
        return self.update_every

    def value_and_grad(self, batch, params, state, *, states: bool = False):
        options = self.rollout_options(self.window)
        found = backpropagated(batch, params, options=options, states=states)
        return *found, state
