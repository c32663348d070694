"""The update-rule interface: a config block that changes weights from the batch's
network activity after the optimizer's step, on its schedule."""

from __future__ import annotations

import abc
from typing import Literal

from jaxtyping import Array, Float
from pydantic import Field, model_validator

from ..._config_base import Block, PositiveNumber
from ..._config_errors import ConfigError
from .._schedule import BatchSchedule

Weight = Float[Array, "post pre"]
Activity = Float[Array, "sample units"]


class AbstractUpdateRule(Block):
    """One rule: `rate`, the matrix it changes (`target`), which presynaptic states
    (`lag`) and after which batches it runs (`batches`, a schedule; default every one)."""

    kind: str
    rate: PositiveNumber = Field(description="the update's scale")
    target: Literal["recurrent", "readout"] = Field(
        "recurrent",
        description="`recurrent`: the cell's recurrent matrix (a `gru`'s candidate-activation "
        "rows of `weight_hh`), pre- and postsynaptic activity the hidden state; `readout`: "
        "the readout weights, post the network's output, pre the hidden state",
    )
    lag: Literal[0, 1] = Field(
        0,
        description="`recurrent` only: pair the hidden state at step t with that at t - "
        "`lag` (`0`: the same step; `1`: the state that drove step t; zeros before the "
        "first)",
    )
    batches: BatchSchedule = Field(
        BatchSchedule(every=1),
        description="a schedule (see Schedules): after which batches the rule runs",
    )

    @model_validator(mode="after")
    def _lag_only_for_recurrent(self) -> AbstractUpdateRule:
        if self.lag and self.target != "recurrent":
            raise ConfigError("lag", "a readout's output follows its input at once: use lag 0")
        return self

    @abc.abstractmethod
    def delta(self, post: Activity, pre: Activity, weight: Weight) -> Weight:
        """The change of `weight` from paired samples of post- and presynaptic activity."""
        raise NotImplementedError


def mean_outer(post: Activity, pre: Activity) -> Weight:
    """``<post_i pre_j>`` over the samples."""
    return post.T @ pre / post.shape[0]
