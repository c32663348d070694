"""The final-velocity term: the effector should stop at the end of the trial."""

from __future__ import annotations

from typing import ClassVar

import jax.numpy as jnp
from pydantic import Field

from .._config_base import NonNegativeNumber
from ._base import AbstractLossTerm


class FinalVelocityTerm(AbstractLossTerm):
    """Squared speed at the trial's last step (0 for a segment that does not end it)."""

    KIND: ClassVar[str] = "final_velocity"
    weight: NonNegativeNumber = Field(
        1.0,
        description="weight of the squared speed at the last step",
    )

    def per_trial(self, rollout, targets, span):
        final = jnp.sum(rollout.vel[..., -1, :] ** 2, axis=-1)
        return jnp.where(span.is_last(rollout.vel.shape[-2]), final, 0.0)
