"""Recurrent cells: GRU, vanilla tanh RNN, leaky tanh RNN and a FORCE reservoir.

Each cell maps ``(input, hidden) -> hidden`` behind :class:`AbstractCell`, so the
network can hold any of them; its config block (a :class:`CellConfig`, the network's
``cell``) holds its settings and builds it. `CELLS` maps the config's kinds
(``model.network.cell.kind``) to those blocks. Adding a cell is its module (the cell
and its block), its entry here and its tests (``python -m motorflow docs`` gives it
its section in config/README.md).
"""

import json

from .._config_base import registry, tagged_union
from ._base import AbstractCell, CellConfig
from ._gru import GRUCell, GRUConfig
from ._leaky import LeakyCell, LeakyConfig
from ._reservoir import ReservoirCell, ReservoirConfig
from ._vanilla import VanillaCell, VanillaConfig

CELLS: dict[str, type[CellConfig]] = registry(
    GRUConfig, VanillaConfig, LeakyConfig, ReservoirConfig
)
"""Every cell kind (a network's `cell.kind`) to its config block, which builds the cell."""
# A network's `cell:` block: one of the registered kinds, chosen by its `kind` key, or
# the bare kind for that kind's defaults.
AnyCellConfig = tagged_union(list(CELLS.values()), shorthand=True)


def _owners() -> dict[str, list[type[CellConfig]]]:
    """Each setting of a cell (but `kind`) to the cells' blocks that have it."""
    owners: dict[str, list[type[CellConfig]]] = {}
    for config in CELLS.values():
        for name in config.model_fields:
            if name != "kind":
                owners.setdefault(name, []).append(config)
    return owners


def _cells(configs: list[type[CellConfig]]) -> str:
    """``the leaky cell``, ``the leaky and reservoir cells``, ``the a, b and c cells``."""
    kinds = [config.KIND for config in configs]
    listed = " and ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)
    return f"the {listed} cell{'s' * (len(kinds) > 1)}"


def moved_cell_settings() -> dict[str, str]:
    """The network's unknown-key hints for a cell's setting given to the network (as
    the cell's settings were before they had their block: ``network.tau``)."""
    hints = {}
    for name, configs in _owners().items():
        default = configs[0].model_fields[name].default
        # A switch is shown switched on (its default is off).
        example = json.dumps(not default if isinstance(default, bool) else default)
        hints[name] = (
            f"a cell's settings are in its block now: network: {{cell: {{kind: "
            f"{configs[0].KIND}, {name}: {example}}}}} (a setting of {_cells(configs)})"
        )
    return hints


def _hint_other_cells_settings() -> None:
    """Each block's unknown-key error for a setting of another cell names the cells
    that have it (``tau`` given to a gru: the leaky and reservoir cells)."""
    owners = _owners()
    for config in CELLS.values():
        config.key_hints = {
            name: f"a setting of {_cells(configs)}, not of the {config.KIND} cell "
            f"(cell: {{kind: {configs[0].KIND}, {name}: ...}})"
            for name, configs in owners.items()
            if name not in config.model_fields
        }


_hint_other_cells_settings()

__all__ = [
    "CELLS",
    "AbstractCell",
    "AnyCellConfig",
    "CellConfig",
    "GRUCell",
    "GRUConfig",
    "LeakyCell",
    "LeakyConfig",
    "ReservoirCell",
    "ReservoirConfig",
    "VanillaCell",
    "VanillaConfig",
]
