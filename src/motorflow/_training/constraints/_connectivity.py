"""Sparse connectivity: a fixed random mask on the recurrent weights."""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
from pydantic import Field

from ..._config_base import Boolean
from ._base import AbstractConstraint


class Connectivity(AbstractConstraint):
    """A fixed sparse connectivity: each recurrent connection exists with probability
    `density`, drawn once per replicate from the training seed; missing ones stay 0.
    Without `self_connections`, no unit connects to itself."""

    kind: Literal["connectivity"] = "connectivity"
    density: float = Field(
        1.0,
        gt=0,
        le=1,
        description="each recurrent connection exists with this probability, drawn once "
        "per replicate from the experiment's seed; missing ones stay 0",
    )
    self_connections: Boolean = Field(True, description="`false`: no unit connects to itself")

    def prepare(self, hidden_size, *, key):
        mask = jax.random.bernoulli(key, self.density, (hidden_size, hidden_size))
        if not self.self_connections:
            mask = mask & ~jnp.eye(hidden_size, dtype=bool)
        return mask

    def apply(self, recurrent, readout, prepared):
        return jnp.where(prepared, recurrent, jnp.zeros_like(recurrent)), readout
