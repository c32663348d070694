"""Loss terms: named scores of a rollout, weighted from config.

Each term is a config block (its `weight` and settings) behind
:class:`AbstractLossTerm`, scoring each trial of a rollout; `LOSS_TERMS` maps the
names under the training's `loss` to them, and `LossConfig` holds them all. Adding a
term is its module (its `weight`'s description says what it scores), its entry in
`LOSS_TERMS` and its tests; ``python -m motorflow docs`` adds its rows to
config/README.md.
"""

from ._base import AbstractLossTerm, Span
from ._config import LOSS_TERMS, LossConfig
from ._effort import EffortTerm
from ._final_velocity import FinalVelocityTerm
from ._hidden import HiddenTerm
from ._hold import HoldTerm
from ._position import PositionTerm
from ._sum import loss_terms, total_loss

__all__ = [
    "LOSS_TERMS",
    "AbstractLossTerm",
    "EffortTerm",
    "FinalVelocityTerm",
    "HiddenTerm",
    "HoldTerm",
    "LossConfig",
    "PositionTerm",
    "Span",
    "loss_terms",
    "total_loss",
]
