"""The hold term: stay still at the start while the task says to hold."""

from __future__ import annotations

from typing import ClassVar

import jax.numpy as jnp
from pydantic import Field

from .._config_base import NonNegativeNumber
from ._base import AbstractLossTerm


class HoldTerm(AbstractLossTerm):
    """Squared distance from the start plus squared speed, summed over the steps to
    hold still (before a delayed reach's go cue, every step of a posture trial); 0
    for tasks without a hold."""

    KIND: ClassVar[str] = "hold"
    weight: NonNegativeNumber = Field(
        100.0,
        description="weight of the squared distance from the start plus squared speed, summed "
        "over the steps the task holds: before a delayed reach's go cue, every step of "
        "a posture trial (0 for reaches)",
    )

    def counts_in(self, task):
        return self.weight > 0 and task.holds()

    def per_trial(self, rollout, targets, span):
        if targets.hold is None:
            return jnp.zeros(rollout.pos.shape[:-2], rollout.pos.dtype)
        drift = jnp.sum((rollout.pos - span.start_pos[..., None, :]) ** 2 + rollout.vel**2, axis=-1)
        return jnp.sum(jnp.where(targets.hold, drift, 0.0), axis=-1)
