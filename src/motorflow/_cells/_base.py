"""The interface every recurrent cell implements."""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
from jaxtyping import Array, Float, PRNGKeyArray


class AbstractCell(eqx.Module):
    """One recurrent update ``hidden' = f(input, hidden)``."""

    hidden_size: eqx.AbstractVar[int]
    # The config's name of the cell (``model.network.cell``).
    KIND: ClassVar[str]
    # Where the recurrent weight matrix `[post, pre]` is, for weight constraints
    # (motorflow._training.constraints); None: no single such matrix (a GRU's gates).
    RECURRENT_WEIGHT: ClassVar[str | None] = None
    # Where activity-dependent rules (motorflow._training.update_rules) change the recurrent
    # weights: a matrix whose rows `plastic_rows()` are `[post, pre]`.
    PLASTIC_WEIGHT: ClassVar[str]

    def plastic_rows(self) -> tuple[int, int]:
        """The rows of `PLASTIC_WEIGHT` that map the hidden state to itself."""
        return 0, self.hidden_size

    @classmethod
    @abc.abstractmethod
    def build(
        cls, input_size: int, hidden_size: int, *, dt: float, tau: float, key: PRNGKeyArray
    ) -> AbstractCell:
        """A cell with freshly drawn weights, from the network's settings: `dt` is the
        network's step (s) and `tau` its units' time constant (s), which a cell without
        time constant ignores."""
        raise NotImplementedError

    @abc.abstractmethod
    def __call__(
        self, input: Float[Array, " input"], hidden: Float[Array, " hidden"]
    ) -> Float[Array, " hidden"]:
        raise NotImplementedError
