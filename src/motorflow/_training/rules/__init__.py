"""Learning rules: how a training step gets its update from a batch.

Each kind is a config block (``train.learning: {kind: ...}``):

- ``bptt``: backpropagation through time over the whole rollout (the default);
- ``truncated_bptt``: backpropagation through at most `window` steps;
- ``eprop``: eligibility traces forward in time times a learning signal fed back
  from the output error (Bellec et al. 2020), for the ``rnn``, ``leaky`` and ``gru``
  cells (the traces: ``_eprop_leaky`` and ``_eprop_gru``), offline or in the online form that
  filters the traces through a linear plant (``_eprop_online``);
- ``rls``: recursive least squares on the readout toward the inverse dynamics of a
  minimum-jerk reach (FORCE's rule, Sussillo & Abbott 2009).

`LEARNING_RULES` maps ``kind`` names to their classes; adding one is a module with
an :class:`AbstractLearningRule` and one entry there.
"""

from ..._config_base import registry, tagged_union
from ._base import AbstractLearningRule, Batch, Pieces, ReplicateLoss
from ._bptt import BPTT, TruncatedBPTT
from ._eprop import EProp
from ._eprop_leaky import eligibility_gradient
from ._rls import RLS, rls_update
from ._targets import minimum_jerk, target_outputs

LEARNING_RULES = registry(BPTT, TruncatedBPTT, EProp, RLS)
"""Every learning rule kind (a training's `learning.kind`) to its config block."""
AnyLearningRule = tagged_union(tuple(LEARNING_RULES.values()), default="bptt")

__all__ = [
    "BPTT",
    "LEARNING_RULES",
    "RLS",
    "AbstractLearningRule",
    "AnyLearningRule",
    "Batch",
    "EProp",
    "Pieces",
    "ReplicateLoss",
    "TruncatedBPTT",
    "eligibility_gradient",
    "minimum_jerk",
    "rls_update",
    "target_outputs",
]
