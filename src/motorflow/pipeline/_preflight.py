"""The preflight: whether a config's estimated jobs (:mod:`._estimate`) fit this machine
(its memory, the memory each job asks for, the free disk), checked before any job runs.

A config whose estimate cannot fit is refused with the key that drives it, so Snakemake
never deletes or reruns a complete result for a run that would fail on its size; a job
that fits the machine but not the memory it asks for gets a warning line (SLURM would
kill it; a local run goes on).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .._config_errors import ConfigError
from ._estimate import Estimate, estimate, size_text
from ._sweeps import grid_points
from ._train_packs import train_packs

if TYPE_CHECKING:
    from ._experiments import Experiment
    from ._workflow_config import WorkflowConfig


def machine_memory() -> int:
    """Bytes of memory of this machine (or of its container's limit, when lower)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def free_disk(folder: str | Path) -> int:
    """Free bytes on the file system that holds `folder` (or its nearest existing parent)."""
    path = Path(folder).absolute()
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


def folder_size(folder: str | Path) -> int:
    """Bytes of the files under `folder` (0 when it does not exist)."""
    return sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())


def pack_memory(
    estimates: list[Estimate],
    experiments: Mapping[str, Experiment],
    packs: list[tuple[str, ...]],
) -> list[tuple[tuple[str, ...], int]]:
    """Each train pack (:func:`train_packs`) and its job's peak memory: one process's
    base (the largest of its plants') and each member's own part."""
    by_name = {item.experiment: item for item in estimates}
    found = []
    for pack in packs:
        bases = [experiments[name].model.plant.TRAIN_BASE_MEMORY for name in pack]
        own = sum(by_name[name].train_memory - base for name, base in zip(pack, bases))
        found.append((pack, max(bases) + own))
    return found


def _pack_name(pack: tuple[str, ...]) -> str:
    return f"the pack {pack[0]} .. {pack[-1]} ({len(pack)} experiments)"


def check_fits(
    estimates: list[Estimate],
    settings: WorkflowConfig,
    *,
    memory: int,
    disk_free: int,
    rewritten: int | Callable[[], int] = 0,
    packs: list[tuple[tuple[str, ...], int]] = (),
) -> None:
    """Raise a :class:`ConfigError` naming the key that drives the first estimate that
    cannot fit: a job's peak above both the `memory` of this machine and the memory the
    job asks for (``resources.<stage>.mem_mb``), or the whole config's disk above
    `disk_free` plus the `rewritten` bytes of a previous run that its jobs replace.
    `rewritten` may be a function giving them, called only where `disk_free` alone
    cannot hold the run: measuring a large results folder takes seconds, and every
    Snakemake run checks. A train pack's job (`packs`, :func:`pack_memory`) above both
    names ``resources.train.pack``."""
    for stage, attribute in (("train", "train_memory"), ("evaluate", "evaluate_memory")):
        asked = getattr(settings.resources, stage).mem_mb * 10**6
        allowed = max(memory, asked)
        for item in estimates:
            need = getattr(item, attribute)
            if need > allowed:
                path, value = item.drivers[attribute]
                raise ConfigError(
                    path,
                    f"with this value ({value:,}) the {stage} job of experiment "
                    f"{item.experiment!r} would need about {size_text(need)} of memory, more "
                    f"than this machine has ({size_text(memory)}) and than "
                    f"resources.{stage}.mem_mb asks for ({size_text(asked)}); make it smaller, "
                    f"or run where the memory is and raise resources.{stage}.mem_mb",
                )
    asked = settings.resources.train.mem_mb * 10**6
    for pack, need in packs:
        if need > max(memory, asked):
            raise ConfigError(
                "resources.train.pack",
                f"with this value ({settings.resources.train.pack:,}) the train job of "
                f"{_pack_name(pack)} would need about {size_text(need)} of memory, more than "
                f"this machine has ({size_text(memory)}) and than resources.train.mem_mb asks "
                f"for ({size_text(asked)}); make it smaller, or run where the memory is and "
                "raise resources.train.mem_mb",
            )
    total = sum(item.total_disk for item in estimates)
    if total > disk_free and total > disk_free + (
        rewritten() if callable(rewritten) else rewritten
    ):
        item = max(estimates, key=lambda e: e.total_disk)
        path, value = item.drivers["disk"]
        raise ConfigError(
            path,
            f"with this value ({value:,}) the config would write about {size_text(total)} "
            f"(experiment {item.experiment!r} alone {size_text(item.total_disk)}), but only "
            f"{size_text(disk_free)} is free there; make it smaller or free some disk",
        )


def warnings(
    estimates: list[Estimate],
    settings: WorkflowConfig,
    packs: list[tuple[tuple[str, ...], int]] = (),
) -> list[str]:
    """A line per job (an experiment's, or a train pack's: `packs`) whose estimated peak
    is above the memory it asks for (SLURM would kill it; a local run goes on)."""
    asked = settings.resources.train.mem_mb * 10**6
    lines = [
        f"{_pack_name(pack)}: its train job may need ~{size_text(need)}, more than "
        f"resources.train.mem_mb ({size_text(asked)}): raise it for SLURM"
        for pack, need in packs
        if need > asked
    ]
    for stage, attribute in (("train", "train_memory"), ("evaluate", "evaluate_memory")):
        asked = getattr(settings.resources, stage).mem_mb * 10**6
        lines += [
            f"{item.experiment}: the {stage} job may need ~{size_text(getattr(item, attribute))}, "
            f"more than resources.{stage}.mem_mb ({size_text(asked)}): raise it for SLURM"
            for item in estimates
            if getattr(item, attribute) > asked
        ]
    return lines




def preflight(
    settings: WorkflowConfig, experiments: Mapping[str, Experiment], results: str | Path
) -> tuple[list[Estimate], list[str]]:
    """Each experiment's estimate and the warnings (see :func:`warnings`) for a run that
    writes to the `results` folder; raises a :class:`ConfigError` naming the key that
    drives an estimate this machine cannot hold (see :func:`check_fits`)."""
    estimates = estimate(settings, experiments)
    sweeps = {name: grid_points(name, sweep) for name, sweep in settings.sweeps.items()}
    packs = pack_memory(
        estimates, experiments, train_packs(experiments, settings.resources.train.pack, sweeps)
    )
    check_fits(
        estimates,
        settings,
        memory=machine_memory(),
        disk_free=free_disk(results),
        rewritten=lambda: folder_size(results),
        packs=packs,
    )
    return estimates, warnings(estimates, settings, packs)


__all__ = [
    "check_fits",
    "folder_size",
    "free_disk",
    "machine_memory",
    "pack_memory",
    "preflight",
    "warnings",
]
