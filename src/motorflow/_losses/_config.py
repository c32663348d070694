"""The training's `loss` block: every registered term with its weight and settings."""

from __future__ import annotations

import pydantic

from .._config_base import Block, registry
from .._program_form import with_arguments
from ._base import AbstractLossTerm
from ._effort import EffortTerm
from ._final_velocity import FinalVelocityTerm
from ._hidden import HiddenTerm
from ._hold import HoldTerm
from ._position import PositionTerm

# Every loss term by name, in the order the history and figures list them.
LOSS_TERMS: dict[str, type[AbstractLossTerm]] = registry(
    PositionTerm, FinalVelocityTerm, EffortTerm, HiddenTerm, HoldTerm
)
"""Every loss term's name (its key under a training's `loss`) to its config block."""


class _Terms(Block):
    @property
    def terms(self) -> dict[str, AbstractLossTerm]:
        """Every term by name, in a fixed order."""
        return {name: getattr(self, name) for name in type(self).model_fields}

    def program_form(self) -> _Terms:
        """The block as it keys a compiled program: every term's `weight`
        :data:`motorflow._program_form.ARGUMENT` (the trainer passes the weights as
        arrays, :attr:`motorflow.Trainer.loss_weights`)."""
        return self.model_copy(
            update={name: with_arguments(term, ["weight"]) for name, term in self.terms.items()}
        )


LossConfig = pydantic.create_model(
    "LossConfig",
    __base__=_Terms,
    __module__=__name__,
    __doc__="""The loss terms with their weights; every term is always present.

    A config names only the terms and keys it changes: ``{position: {weight: 2}}``
    keeps position's `discount_power` of 6 and every other term's default. A term
    with weight 0 adds nothing to the loss (it is still recorded in the history).
    """,
    **{name: (term, term()) for name, term in LOSS_TERMS.items()},
)
"""The training's `loss` block, a pydantic model with a field per term of `LOSS_TERMS`."""
