"""The program form of a config block: its numbers that the compiled programs take as
arguments replaced by one placeholder, :data:`ARGUMENT`.

A compiled program is keyed by everything of a trainer that is not an array
(:mod:`motorflow._training._shared_programs`), its config blocks included, so two
experiments of another learning rate would each compile a program of their own, and
could not train as one call of a pack (:func:`motorflow.train_pack`). Some numbers only
ever enter the computation as values: a learning rate, a loss term's weight, the range
a perturbation's strength is drawn from per trial (the draws are arrays of the trials).
The trainer passes those as arrays, and keys its programs by its blocks' program form,
in which each such number is :data:`ARGUMENT`; blocks that differ only in them then key
the same program.

:data:`ARGUMENT` is a float (so a block holding it still serializes and hashes) whose
value is NaN and whose arithmetic and comparisons raise: a traced function that read
one of these numbers from its block rather than from its array fails loudly (or, where
NumPy reads the float's value, computes NaN, which the training's divergence check
stops on), never silently with a stale value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn, Self, TypeVar

from pydantic import BaseModel


class _Argument(float):
    """The placeholder's type: one instance, :data:`ARGUMENT`."""

    def __new__(cls) -> Self:
        return super().__new__(cls, "nan")

    def __repr__(self) -> str:
        return "ARGUMENT"

    def __reduce__(self) -> str:
        return "ARGUMENT"

    def _refuse(self, *_: Any) -> NoReturn:
        raise TypeError(
            "this number of a config block is an argument of the compiled programs, and "
            "its program form holds no value: read it from the trainer's arrays (its "
            "optimizer's learning rates, its loss_weights, the trials' drawn params)"
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __neg__ = __abs__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __float__ = __bool__ = __format__ = _refuse


ARGUMENT = _Argument()
"""The value of every number of a block's program form that is a program argument."""

Model = TypeVar("Model", bound=BaseModel)


def with_arguments(block: Model, names: Iterable[str]) -> Model:
    """`block` with its fields `names` set to :data:`ARGUMENT` (unvalidated: the
    program form is a key, never a config to run)."""
    return block.model_copy(update=dict.fromkeys(names, ARGUMENT))
