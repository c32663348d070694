"""Recurrent cells: GRU, vanilla tanh RNN, leaky tanh RNN and a FORCE reservoir.

Each cell maps ``(input, hidden) -> hidden`` behind :class:`AbstractCell`, so the
network can hold any of them; `CELLS` maps the config's names
(``model.network.cell``) to them. Adding a cell is its module, its entry here and its
tests (``python -m motorflow docs`` lists it in config/README.md).
"""

from .._config_base import registry
from ._base import AbstractCell
from ._gru import GRUCell
from ._leaky import LeakyCell
from ._reservoir import ReservoirCell
from ._vanilla import VanillaCell

CELLS: dict[str, type[AbstractCell]] = registry(GRUCell, VanillaCell, LeakyCell, ReservoirCell)
"""Every cell kind (a network's `cell`) to its class."""

__all__ = ["CELLS", "AbstractCell", "GRUCell", "LeakyCell", "ReservoirCell", "VanillaCell"]
