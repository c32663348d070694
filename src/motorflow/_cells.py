"""Recurrent cells: GRU, vanilla tanh RNN and leaky tanh RNN.

Each cell maps ``(input, hidden) -> hidden``; all share the signature of
:class:`AbstractCell` so the network can hold any of them.
"""

from __future__ import annotations

import abc
import math
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray


class AbstractCell(eqx.Module):
    """One recurrent update ``hidden' = f(input, hidden)``."""

    hidden_size: eqx.AbstractVar[int]
    # The config's name of the cell (``model.network.cell``).
    KIND: ClassVar[str]
    # Where the recurrent weight matrix `[post, pre]` is, for weight constraints
    # (motorflow._training._constraints); None: no single such matrix (a GRU's gates).
    RECURRENT_WEIGHT: ClassVar[str | None] = None
    # Where activity-dependent rules (motorflow._training._update_rules) change the recurrent
    # weights: a matrix whose rows `plastic_rows()` are `[post, pre]`.
    PLASTIC_WEIGHT: ClassVar[str]

    def plastic_rows(self) -> tuple[int, int]:
        """The rows of `PLASTIC_WEIGHT` that map the hidden state to itself."""
        return 0, self.hidden_size

    @abc.abstractmethod
    def __call__(
        self, input: Float[Array, " input"], hidden: Float[Array, " hidden"]
    ) -> Float[Array, " hidden"]:
        raise NotImplementedError


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

    def __call__(self, input, hidden):
        return self.gru(input, hidden)


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

    def __init__(self, input_size: int, hidden_size: int, *, key: PRNGKeyArray):
        bound = 1.0 / math.sqrt(hidden_size)
        k_in, k_rec, k_bias = jax.random.split(key, 3)
        self.weight_in = _uniform(k_in, (hidden_size, input_size), bound)
        self.weight_rec = _uniform(k_rec, (hidden_size, hidden_size), bound)
        self.bias = _uniform(k_bias, (hidden_size,), bound)
        self.hidden_size = hidden_size

    def __call__(self, input, hidden):
        return jnp.tanh(self.weight_in @ input + self.weight_rec @ hidden + self.bias)


class LeakyCell(AbstractCell):
    """Leaky tanh RNN: ``hidden' = (1 - a) hidden + a tanh(W_in input + W_rec hidden + b)``.

    ``a = dt / tau`` is the Euler discretisation of a continuous-time rate network
    with time constant `tau`.
    """

    rnn: VanillaCell
    alpha: float = eqx.field(static=True)
    hidden_size: int = eqx.field(static=True)
    RECURRENT_WEIGHT: ClassVar[str | None] = "rnn.weight_rec"
    PLASTIC_WEIGHT: ClassVar[str] = "rnn.weight_rec"
    KIND: ClassVar[str] = "leaky"

    def __init__(
        self, input_size: int, hidden_size: int, *, dt: float, tau: float, key: PRNGKeyArray
    ):
        self.rnn = VanillaCell(input_size, hidden_size, key=key)
        self.alpha = dt / tau
        self.hidden_size = hidden_size

    def __call__(self, input, hidden):
        return (1.0 - self.alpha) * hidden + self.alpha * self.rnn(input, hidden)
