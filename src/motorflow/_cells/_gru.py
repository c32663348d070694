"""The gated recurrent unit."""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
from jaxtyping import PRNGKeyArray

from ._base import AbstractCell


class GRUCell(AbstractCell):
    """Gated recurrent unit (Cho et al. 2014), as in :class:`equinox.nn.GRUCell`."""

    gru: eqx.nn.GRUCell
    hidden_size: int = eqx.field(static=True)
    # Rows (reset, update, candidate) x hidden of the recurrent weights; rules change
    # the candidate activation's block, as feedbax's HebbianGRUUpdate.
    PLASTIC_WEIGHT: ClassVar[str] = "gru.weight_hh"
    KIND: ClassVar[str] = "gru"

    def plastic_rows(self):
        return 2 * self.hidden_size, 3 * self.hidden_size

    def __init__(self, input_size: int, hidden_size: int, *, key: PRNGKeyArray):
        self.gru = eqx.nn.GRUCell(input_size, hidden_size, key=key)
        self.hidden_size = hidden_size

    @classmethod
    def build(cls, input_size, hidden_size, *, dt, tau, key):
        return cls(input_size, hidden_size, key=key)

    def __call__(self, input, hidden):
        return self.gru(input, hidden)
