"""Constraints on the network's weights, applied at initialisation and after every update.

Each kind is a config block (``train.constraints: [{kind: ...}, ...]``) that maps one
replicate's weights to the nearest ones that obey it. They act on the recurrent
weight matrix ``W[post, pre]`` of a cell that has one (``rnn``, ``leaky``) and, for
Dale's law, optionally on the readout's columns. Projections (signs, masks) run
before rescaling (norm caps), so a cap never breaks a sign or a missing
connection: scaling by a positive factor keeps both. `CONSTRAINTS` maps ``kind``
names to their classes; adding one is its module, its entry there and its tests
(``python -m motorflow docs`` gives it a section in config/README.md).
"""

from __future__ import annotations

from ..._config_base import registry, tagged_union
from ._apply import Constraints
from ._base import AbstractConstraint
from ._caps import SpectralNorm, SpectralRadius
from ._connectivity import Connectivity
from ._dale import Dale

CONSTRAINTS: dict[str, type[AbstractConstraint]] = registry(
    Dale, Connectivity, SpectralRadius, SpectralNorm
)
"""Every weight constraint kind (a training's `constraints` entry) to its config block."""
# One constraint block of a config: a registered kind, chosen by its `kind` key.
AnyConstraint = tagged_union(list(CONSTRAINTS.values()))

__all__ = [
    "CONSTRAINTS",
    "AbstractConstraint",
    "AnyConstraint",
    "Connectivity",
    "Constraints",
    "Dale",
    "SpectralNorm",
    "SpectralRadius",
]
