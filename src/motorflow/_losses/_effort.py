"""The effort term: the plant's control, squared."""

from __future__ import annotations

from typing import ClassVar

import jax.numpy as jnp
from pydantic import Field

from .._config_base import NonNegativeNumber
from ._base import AbstractLossTerm


class EffortTerm(AbstractLossTerm):
    """Squared control (force, torques or excitations) summed over time."""

    KIND: ClassVar[str] = "effort"
    weight: NonNegativeNumber = Field(
        1e-5,
        description="weight of the squared control (force, torques or excitations), summed "
        "over time",
    )

    def per_trial(self, rollout, targets, span):
        return jnp.sum(rollout.control**2, axis=(-2, -1))
