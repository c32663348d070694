"""Which experiments one job of a stage takes together: its packs
(``resources.<stage>.pack``)."""

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
    free = [name for name, experiment in experiments.items() if experiment.init_from is None]
    return stage_packs(free, size, sweeps)


def stage_packs(
    names: Iterable[str], size: int, sweeps: Mapping[str, Iterable[str]] | None = None
) -> list[tuple[str, ...]]:
    """The packs of `size` of the experiments `names` (those a stage's rule makes
    files for, in config order) that one job each of the stage takes: each sweep's
    (in grid order), then the others, cut into runs of `size`, as :func:`train_packs`
    cuts them. A run of one is no pack."""
    names = list(names)
    taken = set(names)
    groups = [[name for name in members if name in taken] for members in (sweeps or {}).values()]
    in_sweeps = {name for members in groups for name in members}
    groups.append([name for name in names if name not in in_sweeps])
    packs = []
    for members in groups:
        runs = [tuple(members[start : start + size]) for start in range(0, len(members), size)]
        packs += [run for run in runs if len(run) > 1]
    return packs
