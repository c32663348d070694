"""Keep the last complete run's outputs while a run that replaces them is under way.

Snakemake deletes a job's old outputs when the job starts, so a run that fails midway
(a diverging training, a job killed for memory) would leave less than the run before
it. So when a run starts, the results folder's files are hard-linked (no copy, no extra
disk; the small logs and benchmark tables are copied) into ``<results>/.last-complete/``; a job never writes into an old file (each
output is written to a new file and renamed into place), so those links keep the old
contents whatever the run deletes or rewrites. When the run succeeds the folder is
removed; when it fails it stays, and the next run keeps it until one succeeds: it
always holds the outputs as the last successful run left them.

Not kept: the resume state (``checkpoints/``, written in place and never deleted by a
failure), TensorBoard event files and exports (written in place), and the folders of
other configs inside this one (each with a results mark of its own).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ._results_folder import OWNER_MARK

LAST_COMPLETE = ".last-complete"
# Folders whose files are written in place (or are not outputs of a run).
NOT_KEPT = frozenset({"checkpoints", "tensorboard", "exports"})
# Folders of small files that Snakemake itself may write in place (a job's log and
# benchmark table): copied, not linked.
COPIED = frozenset({"logs", "benchmarks"})


def _kept_files(results: Path):
    """Every file of the `results` folder that a run's outputs consist of."""
    for folder, subfolders, files in os.walk(results):
        here = Path(folder)
        subfolders[:] = sorted(
            name
            for name in subfolders
            if not name.startswith(".")
            and name not in NOT_KEPT
            and not (here / name / OWNER_MARK).exists()
        )
        for name in sorted(files):
            if here != results or not name.startswith("."):
                yield here / name


def _link_or_copy(path: Path, target: Path, *, copy: bool) -> None:
    if not copy:
        try:
            os.link(path, target)
            return
        except OSError:  # a file system without hard links: a copy then
            pass
    shutil.copy2(path, target)


def keep_last_complete(results: str | Path) -> Path | None:
    """Link the files of `results` into its ``.last-complete/`` folder, unless that
    holds a complete run's files already (a run since then failed); returns the folder,
    or None where there is nothing to keep."""
    results = Path(results)
    kept = results / LAST_COMPLETE
    if kept.exists() or not results.is_dir():
        return kept if kept.exists() else None
    partial = results / f"{LAST_COMPLETE}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    count = 0
    for path in _kept_files(results):
        target = partial / path.relative_to(results)
        target.parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(path, target, copy=path.relative_to(results).parts[0] in COPIED)
        count += 1
    if not count:
        shutil.rmtree(partial, ignore_errors=True)
        return None
    partial.rename(kept)
    return kept


def drop_last_complete(results: str | Path) -> None:
    """Remove the kept files: the run that just succeeded is the last complete one."""
    shutil.rmtree(Path(results) / LAST_COMPLETE, ignore_errors=True)


def last_complete_message(results: str | Path) -> str | None:
    """What a failed run tells the user about the kept files (None: nothing kept)."""
    kept = Path(results) / LAST_COMPLETE
    if not kept.is_dir():
        return None
    return (
        f"The outputs of the last complete run are kept, unchanged, in {kept}/ "
        "until a run succeeds."
    )
