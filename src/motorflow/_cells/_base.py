"""The interface every recurrent cell implements, and its config block's."""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
from jaxtyping import Array, Float, PRNGKeyArray

from .._config_base import Block


class AbstractCell(eqx.Module):
    """One recurrent update ``hidden' = f(input, hidden)``."""

    hidden_size: eqx.AbstractVar[int]
    # The config's name of the cell (its block's ``kind``: ``model.network.cell.kind``).
    KIND: ClassVar[str]
    # Where the recurrent weight matrix `[post, pre]` is, for weight constraints
    # (motorflow._training.constraints); None: no single such matrix (a GRU's gates).
    RECURRENT_WEIGHT: ClassVar[str | None] = None
    # Where activity-dependent rules (motorflow._training.update_rules) change the recurrent
    # weights: a matrix whose rows `plastic_rows()` are `[post, pre]`.
    PLASTIC_WEIGHT: ClassVar[str]
    # What e-prop (motorflow._training.rules._eprop) needs of the cell: which of its
    # eligibility traces are derived for it ("tanh": a leaky tanh unit, Bellec et al.
    # 2020, Nat Commun 11:3625, and Murray 2019, eLife 8:e43299; "gru": the GRU's,
    # in the form of the authors' LSTM code; None: none, and e-prop refuses the
    # cell), where the cell keeps the weights they train (a path from the cell, ""
    # the cell itself) and those weights' names there.
    EPROP_TRACES: ClassVar[str | None] = None
    EPROP_UNIT: ClassVar[str] = ""
    EPROP_WEIGHTS: ClassVar[tuple[str, ...]] = ()

    def plastic_rows(self) -> tuple[int, int]:
        """The rows of `PLASTIC_WEIGHT` that map the hidden state to itself."""
        return 0, self.hidden_size

    def carry(
        self, input: Float[Array, " input"], hidden: Float[Array, " hidden"]
    ) -> Float[Array, " hidden"]:
        """Per unit, the derivative of the new hidden state with respect to the unit's
        own previous state along its carry alone: what e-prop's traces follow
        (:mod:`motorflow._model._recurrence`; Bellec et al. 2020, Eq. 1)."""
        raise NotImplementedError(f"no carry known for a {type(self).__name__}")

    def eprop_alpha(self) -> float:
        """The ``a`` of e-prop's tanh-unit traces, ``e(t) = (1 - a) e(t - 1) + ...``:
        the fraction of its state the unit replaces each step (1: it keeps none, the
        vanilla RNN)."""
        return 1.0

    @abc.abstractmethod
    def __call__(
        self, input: Float[Array, " input"], hidden: Float[Array, " hidden"]
    ) -> Float[Array, " hidden"]:
        raise NotImplementedError


class CellConfig(Block):
    """Settings of a recurrent cell (``model.network.cell``).

    Each cell module defines a subclass with a ``kind`` literal (its registry name),
    the cell's own settings, `CELL` (the cell class, whose class constants say what
    training needs of it: `RECURRENT_WEIGHT`, `EPROP_TRACES`, ...) and :meth:`build`.
    What differs between cells beyond their weights is a method here, overridden by
    the members it concerns.
    """

    kind: str

    CELL: ClassVar[type[AbstractCell]]

    @abc.abstractmethod
    def build(
        self, input_size: int, hidden_size: int, *, dt: float, key: PRNGKeyArray
    ) -> AbstractCell:
        """A cell with freshly drawn weights.

        **Arguments:**

        - `input_size`: the size of the input vector (task inputs and feedback).
        - `hidden_size`: the number of hidden units.
        - `dt`: the cell's own step in seconds (the network's `dt / substeps`).
        - `key`: draws the weights.
        """

    def step_problem(self, step: float) -> tuple[str, str] | None:
        """What is wrong with stepping this cell every `step` seconds, as ``(key of
        this block, message)``, or None (a cell without time constant: nothing)."""
        return None

    def feeds_output_back(self) -> bool:
        """Whether the network feeds its readout's output back into the cell (as the
        cell's ``drive``: FORCE's feedback loop)."""
        return False


def time_constant_problem(config: CellConfig, step: float) -> tuple[str, str] | None:
    """A cell's :meth:`CellConfig.step_problem` when its `tau` is its units' time
    constant: an Euler step longer than `tau` overshoots the unit's decay."""
    if config.tau < step:
        message = f"the {config.kind} cell needs tau >= dt / substeps ({step:g}), got {config.tau}"
        return "tau", message
    return None
