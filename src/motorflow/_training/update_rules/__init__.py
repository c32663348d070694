"""Activity-dependent weight updates applied after the optimizer's step.

Each kind is a config block (``train.update_rules: [{kind: ...}, ...]``) that changes
one weight matrix ``W[post, pre]`` from the network states of the batch just
trained, averaged over its trials and time steps, on its own schedule of batches.
This is feedbax's model update functions (``TaskTrainer(model_update_funcs=...)``,
its ``ActivityDependentWeightUpdate``): a batch-averaged rule scaled by a rate,
with no update of a unit's weight onto itself. The rules act on

- ``recurrent``: the cell's recurrent matrix (a GRU's candidate-activation block of
  ``weight_hh``, as feedbax's ``HebbianGRUUpdate``), post = the hidden state at
  step t, pre = the hidden state at t (``lag: 0``, feedbax's choice) or at t - 1
  (``lag: 1``: the state that drove step t through ``W``; zeros before the first);
- ``readout``: the readout weights, post = the network output, pre = the hidden state.

`UPDATE_RULES` maps ``kind`` names to their classes; adding one is its module (a class
with its ``delta``), its entry there and its tests (``python -m motorflow docs`` gives
it a section in config/README.md).
"""

from __future__ import annotations

from ..._config_base import registry, tagged_union
from ._apply import UpdateRules
from ._base import AbstractUpdateRule
from ._hebbian import Hebbian
from ._oja import Oja

UPDATE_RULES: dict[str, type[AbstractUpdateRule]] = registry(Hebbian, Oja)
"""Every update rule kind (a training's `update_rules` entry) to its config block."""
# One update rule block of a config: a registered kind, chosen by its `kind` key.
AnyUpdateRule = tagged_union(list(UPDATE_RULES.values()))

__all__ = [
    "UPDATE_RULES",
    "AbstractUpdateRule",
    "AnyUpdateRule",
    "Hebbian",
    "Oja",
    "UpdateRules",
]
