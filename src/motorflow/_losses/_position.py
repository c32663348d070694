"""The position term: distance to the goal over the reach, its end weighted most."""

from __future__ import annotations

from typing import ClassVar

import jax.numpy as jnp
from pydantic import Field

from .._config_base import NonNegativeNumber
from ._base import AbstractLossTerm


class PositionTerm(AbstractLossTerm):
    """Squared distance to the goal summed over time, step t weighted by
    ``((t+1)/n_steps) ** discount_power``, so that with ``p > 0`` the end of the reach
    dominates; ``p = 0`` weighs every step equally."""

    KIND: ClassVar[str] = "position"
    weight: NonNegativeNumber = Field(
        1.0,
        description="weight of the squared distance to the goal, summed over time with the "
        "discount",
    )
    discount_power: NonNegativeNumber = Field(
        6.0,
        description="weight step t's position error by `((t+1)/n_steps) ** p`, so the "
        "reach's end dominates",
    )

    def per_trial(self, rollout, targets, span):
        error = jnp.sum((rollout.pos - targets.goal) ** 2, axis=-1)
        steps = span.first + jnp.arange(1, error.shape[-1] + 1)
        discount = (steps.astype(error.dtype) / span.n_steps) ** self.discount_power
        return jnp.sum(error * discount, axis=-1)
