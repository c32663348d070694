"""The vanilla (Elman) tanh RNN."""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ._base import AbstractCell, CellConfig


def _uniform(key: PRNGKeyArray, shape: tuple[int, ...], bound: float) -> Array:
    return jax.random.uniform(key, shape, minval=-bound, maxval=bound)


class VanillaCell(AbstractCell):
    """Elman RNN: ``hidden' = tanh(W_in input + W_rec hidden + b)``.

    Weights are drawn uniformly in ``±1/sqrt(hidden_size)`` like PyTorch's RNN.
    """

    weight_in: Float[Array, "hidden input"]
    weight_rec: Float[Array, "hidden hidden"]
    bias: Float[Array, " hidden"]
    hidden_size: int = eqx.field(static=True)
    RECURRENT_WEIGHT: ClassVar[str | None] = "weight_rec"
    PLASTIC_WEIGHT: ClassVar[str] = "weight_rec"
    KIND: ClassVar[str] = "rnn"
    EPROP_TRACES: ClassVar[str | None] = "tanh"
    EPROP_WEIGHTS: ClassVar[tuple[str, ...]] = ("weight_in", "weight_rec", "bias")

    def __init__(self, input_size: int, hidden_size: int, *, key: PRNGKeyArray):
        bound = 1.0 / math.sqrt(hidden_size)
        k_in, k_rec, k_bias = jax.random.split(key, 3)
        self.weight_in = _uniform(k_in, (hidden_size, input_size), bound)
        self.weight_rec = _uniform(k_rec, (hidden_size, hidden_size), bound)
        self.bias = _uniform(k_bias, (hidden_size,), bound)
        self.hidden_size = hidden_size

    def carry(self, input, hidden):
        # No leak: no gradient from one hidden state to the next (one-step memory).
        return jnp.zeros_like(hidden)

    def __call__(self, input, hidden):
        return jnp.tanh(self.weight_in @ input + self.weight_rec @ hidden + self.bias)


class VanillaConfig(CellConfig):
    """The vanilla (Elman) tanh RNN: no settings of its own."""

    kind: Literal["rnn"] = "rnn"

    CELL: ClassVar[type[AbstractCell]] = VanillaCell

    def build(self, input_size, hidden_size, *, dt, key):
        return VanillaCell(input_size, hidden_size, key=key)
