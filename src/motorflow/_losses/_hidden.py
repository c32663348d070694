"""The hidden-activity term: the network's units, squared."""

from __future__ import annotations

from typing import ClassVar

import jax.numpy as jnp
from pydantic import Field

from .._config_base import NonNegativeNumber
from ._base import AbstractLossTerm


class HiddenTerm(AbstractLossTerm):
    """Squared hidden activity summed over time and units."""

    KIND: ClassVar[str] = "hidden"
    weight: NonNegativeNumber = Field(
        1e-5,
        description="weight of the squared hidden activity, summed over time and units",
    )

    def per_trial(self, rollout, targets, span):
        return jnp.sum(rollout.hidden**2, axis=(-2, -1))
