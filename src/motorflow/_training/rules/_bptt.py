"""Backpropagation through time, whole or truncated to a window of steps."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..._config_base import PositiveInt
from ..._model._loop import RolloutOptions
from ._base import AbstractLearningRule, backpropagated


class BPTT(AbstractLearningRule):
    """Backpropagation through the whole rollout."""

    kind: Literal["bptt"] = "bptt"

    def value_and_grad(self, batch, params, state, *, states: bool = False):
        return *backpropagated(batch, params, states=states), state


class TruncatedBPTT(AbstractLearningRule):
    """Backpropagation through at most `window` steps: the rollout runs whole, but no
    gradient flows back across the steps ``window, 2 window, ...`` (Williams & Peng
    1990, Neural Computation 2(4); the epoch-wise truncation BPTT(h; h) of Williams &
    Zipser 1995). A window as long as the rollout is BPTT.

    With `update_every` k, the parameters also update within the rollout: after each
    k steps, from the loss of those steps (:mod:`motorflow._training._segments`); the next
    steps run with the new parameters from where the loop got to, and no gradient
    flows back into an earlier segment. NeuroTorch's ``optim_time_steps``."""

    kind: Literal["truncated_bptt"] = "truncated_bptt"
    window: PositiveInt = Field(10, description="the steps a gradient flows back through")
    update_every: PositiveInt | None = Field(
        None,
        description="update the parameters after every this many steps of a rollout, "
        "within it (`null`: once per rollout); at most the task's `n_steps`",
    )

    def gradient_window(self) -> int:
        return self.window

    def segment_length(self) -> int | None:
        return self.update_every

    def value_and_grad(self, batch, params, state, *, states: bool = False):
        options = RolloutOptions(gradient_window=self.window)
        found = backpropagated(batch, params, options=options, states=states)
        return *found, state
