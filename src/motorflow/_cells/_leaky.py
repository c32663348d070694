"""The leaky tanh RNN: a continuous-time rate network, Euler-discretised."""

from __future__ import annotations

from typing import ClassVar, Literal

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import PRNGKeyArray
from pydantic import Field

from .._config_base import PositiveNumber
from ._base import AbstractCell, CellConfig, time_constant_problem
from ._vanilla import VanillaCell


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
    EPROP_TRACES: ClassVar[str | None] = "tanh"
    EPROP_UNIT: ClassVar[str] = "rnn"
    EPROP_WEIGHTS: ClassVar[tuple[str, ...]] = VanillaCell.EPROP_WEIGHTS

    def __init__(
        self, input_size: int, hidden_size: int, *, dt: float, tau: float, key: PRNGKeyArray
    ):
        self.rnn = VanillaCell(input_size, hidden_size, key=key)
        self.alpha = dt / tau
        self.hidden_size = hidden_size

    def carry(self, input, hidden):
        # The leak: ``(1 - a) h`` is the unit's own path to its next state.
        return jnp.full_like(hidden, 1.0 - self.alpha)

    def eprop_alpha(self):
        return self.alpha

    def __call__(self, input, hidden):
        return (1.0 - self.alpha) * hidden + self.alpha * self.rnn(input, hidden)


class LeakyConfig(CellConfig):
    """The leaky tanh RNN, a continuous-time rate network with time constant `tau`."""

    kind: Literal["leaky"] = "leaky"
    tau: PositiveNumber = Field(
        0.1,
        description="time constant of the units in seconds (>= the cell's step, `dt / "
        "substeps`)",
    )

    CELL: ClassVar[type[AbstractCell]] = LeakyCell

    def build(self, input_size, hidden_size, *, dt, key):
        return LeakyCell(input_size, hidden_size, dt=dt, tau=self.tau, key=key)

    def step_problem(self, step):
        return time_constant_problem(self, step)
