"""Learning rules: how a training step gets the gradient it hands to the optimizer.

Each kind is a config block (``train.learning: {kind: ...}``) whose
:meth:`~AbstractLearningRule.value_and_grad` turns the loss of one replicate's
batch into the loss and a gradient of its parameters:

- ``bptt``: backpropagation through time over the whole rollout (the default);
- ``truncated_bptt``: backpropagation through at most `window` steps: the rollout
  runs whole, but no gradient flows back across the steps ``window, 2 window, ...``
  (Williams & Peng 1990, Neural Computation 2(4), the epoch-wise truncation
  BPTT(h; h) of Williams & Zipser 1995). A window as long as the rollout is BPTT.

`LEARNING_RULES` maps ``kind`` names to their classes; adding one is a class with
its ``value_and_grad`` and one entry there.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, Literal

import jax
from jaxtyping import PyTree
from pydantic import Field

from ._config_base import Block, PositiveInt, registry, tagged_union

# The loss of one replicate's batch: params, and the rollout's gradient window
# (None: the whole rollout) -> (total loss, aux).
ReplicateLoss = Callable[..., tuple[Any, Any]]


class AbstractLearningRule(Block):
    """How the gradient of a batch's loss is computed."""

    kind: str

    @abc.abstractmethod
    def gradient_window(self) -> int | None:
        """The steps a gradient flows back through the rollout (None: all of them)."""

    def value_and_grad(self, loss: ReplicateLoss, params: PyTree) -> tuple[tuple[Any, Any], PyTree]:
        """``((total, aux), gradient)`` of ``loss(params, gradient_window=...)``."""
        window = self.gradient_window()
        return jax.value_and_grad(loss, has_aux=True)(params, gradient_window=window)


class BPTT(AbstractLearningRule):
    """Backpropagation through the whole rollout."""

    kind: Literal["bptt"] = "bptt"

    def gradient_window(self) -> None:
        return None


class TruncatedBPTT(AbstractLearningRule):
    """Backpropagation through at most `window` steps of the rollout."""

    kind: Literal["truncated_bptt"] = "truncated_bptt"
    window: PositiveInt = Field(10, description="steps a gradient flows back through")

    def gradient_window(self) -> int:
        return self.window


LEARNING_RULES = registry(BPTT, TruncatedBPTT)
AnyLearningRule = tagged_union(tuple(LEARNING_RULES.values()), default="bptt")
