"""Which experiments a workflow trains together: its train packs
(``resources.train.pack``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._experiments import Experiment


def train_packs(
    experiments: Mapping[str, Experiment],
    size: int,
    sweeps: Mapping[str, Iterable[str]] | None = None,
) -> list[tuple[str, ...]]:
    """The packs of `size` experiments one train job each trains.

    Each sweep's experiments (`sweeps`: each sweep's experiment names, in grid order)
    and then the config's other experiments (in config order) are cut into runs of
    `size`, leaving out those with ``init_from`` (an experiment that starts from
    another's model waits for it, and trains alone). Membership depends on positions
    only, so an edit of one experiment's settings changes no pack, and its pack is all
    that reruns; and a sweep whose last grid key is the seed, with `size` a multiple of
    its seed count, packs whole runs of seeds, which share a compiled program. A run of
    one (the last, or `size` 1) is no pack: that experiment trains alone.
    """
    groups = [list(names) for names in (sweeps or {}).values()]
    in_sweeps = {name for names in groups for name in names}
    groups.append([name for name in experiments if name not in in_sweeps])
    packs = []
    for names in groups:
        free = [name for name in names if experiments[name].init_from is None]
        runs = [tuple(free[start : start + size]) for start in range(0, len(free), size)]
        packs += [run for run in runs if len(run) > 1]
    return packs
