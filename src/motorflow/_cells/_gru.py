"""The gated recurrent unit."""

from __future__ import annotations

from typing import ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import PRNGKeyArray

from ._base import AbstractCell, CellConfig


class GRUCell(AbstractCell):
    """Gated recurrent unit (Cho et al. 2014), as in :class:`equinox.nn.GRUCell`."""

    gru: eqx.nn.GRUCell
    hidden_size: int = eqx.field(static=True)
    # Rows (reset, update, candidate) x hidden of the recurrent weights; rules change
    # the candidate activation's block, as feedbax's HebbianGRUUpdate.
    PLASTIC_WEIGHT: ClassVar[str] = "gru.weight_hh"
    KIND: ClassVar[str] = "gru"
    EPROP_TRACES: ClassVar[str | None] = "gru"
    EPROP_UNIT: ClassVar[str] = "gru"
    EPROP_WEIGHTS: ClassVar[tuple[str, ...]] = ("weight_ih", "weight_hh", "bias", "bias_n")

    def plastic_rows(self):
        return 2 * self.hidden_size, 3 * self.hidden_size

    def __init__(self, input_size: int, hidden_size: int, *, key: PRNGKeyArray):
        self.gru = eqx.nn.GRUCell(input_size, hidden_size, key=key)
        self.hidden_size = hidden_size

    def carry(self, input, hidden):
        # ``h' = z h + (1 - z) n``: the update gate z, with the gates and the candidate
        # taking the previous state without gradient (the analogue of the e-prop
        # authors' LSTM code, which keeps the cell state's ``f c`` path).
        bias = self.gru.bias if self.gru.use_bias else 0.0
        gates_in = jnp.split(self.gru.weight_ih @ input + bias, 3)
        gates_rec = jnp.split(self.gru.weight_hh @ hidden, 3)
        return jax.nn.sigmoid(gates_in[1] + gates_rec[1])

    def __call__(self, input, hidden):
        return self.gru(input, hidden)


class GRUConfig(CellConfig):
    """The gated recurrent unit (Cho et al. 2014): no settings of its own."""

    kind: Literal["gru"] = "gru"

    CELL: ClassVar[type[AbstractCell]] = GRUCell

    def build(self, input_size, hidden_size, *, dt, key):
        return GRUCell(input_size, hidden_size, key=key)
