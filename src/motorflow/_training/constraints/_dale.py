"""Dale's law: each unit's outgoing recurrent weights share one sign."""

from __future__ import annotations

from typing import Literal

import jax.numpy as jnp
from jaxtyping import Array, Float
from pydantic import Field

from ..._config_base import Boolean
from ._base import AbstractConstraint


class Dale(AbstractConstraint):
    """Dale's law: the first ``round(excitatory_fraction * hidden_size)`` hidden units are
    excitatory (their outgoing recurrent weights >= 0), the rest inhibitory (<= 0);
    a weight of the wrong sign is set to 0. With `readout`, the readout's weights from
    each unit obey its sign too. Song, Yang & Wang (2016), PLoS Comput Biol 12(2):
    e1004792, train E/I networks with 80% excitatory units."""

    kind: Literal["dale"] = "dale"
    excitatory_fraction: float = Field(
        0.8,
        gt=0,
        lt=1,
        description="the first `round(fraction * hidden_size)` units are excitatory "
        "(outgoing weights >= 0), the rest inhibitory (<= 0)",
    )
    readout: Boolean = Field(
        False, description="also constrain the readout's weights from each unit to its sign"
    )

    def signs(self, hidden_size: int) -> Float[Array, " pre"]:
        n_excitatory = round(self.excitatory_fraction * hidden_size)
        return jnp.where(jnp.arange(hidden_size) < n_excitatory, 1.0, -1.0)

    def apply(self, recurrent, readout, prepared):
        sign = self.signs(recurrent.shape[1])

        def obey(weight):
            return jnp.where(weight * sign >= 0, weight, jnp.zeros_like(weight))

        return obey(recurrent), obey(readout) if self.readout else readout
