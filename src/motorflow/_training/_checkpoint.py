"""Resume state on disk: orbax checkpoints of (train state, history), asynchronous.

A :class:`CheckpointStore` is one experiment's checkpoint directory. It holds a
sub-directory per training run, named by the run's identity (a digest of
everything the trained result depends on), so a checkpoint can only ever be
resumed by a run whose result would be identical. The store keeps the runs of the
`keep_runs` most recently used configurations, so reverting an edit finds its
checkpoints again, and it refuses a directory holding files motorflow did not write.

A :class:`Checkpoints` manager writes one run's steps. It keeps the newest `keep`
steps plus the best by validation loss, and never deletes the newest (a plain
``best_fn`` + ``max_to_keep`` manager would).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any, Self

import jax

from .._orbax import orbax_checkpoint, restore_target
from ._folder_lock import LOCK_NAME, FolderLock

logger = logging.getLogger("motorflow")

_RUN_RECORD = "motorflow-run.json"
_STORE_RECORD = "motorflow-checkpoints.json"
_STORE_FORMAT = "motorflow.checkpoints/1"
_RUN_NAME = re.compile(r"^[0-9a-f]{16}$")
# What orbax writes inside a run directory: steps, and steps being written.
_STEP_NAME = re.compile(r"^[0-9]+(\.orbax-checkpoint-tmp.*)?$")


class ForeignFilesError(RuntimeError):
    """A checkpoint directory holds files that motorflow did not write."""

    def __init__(self, directory: Path, names: list[str]):
        self.directory, self.names = directory, names
        shown = ", ".join(sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
        super().__init__(
            f"The checkpoint directory {directory} holds files that motorflow did not "
            f"write ({shown}). motorflow removes old checkpoints from its checkpoint "
            "directories, so it does not use one that holds anything else. Move those "
            "files away, or give a new or empty directory as the checkpoint directory."
        )


def _foreign_in_run_dir(names: list[str], records: tuple[str, ...]) -> list[str]:
    """The entries of a run directory that are neither a run record nor an orbax step."""
    return [name for name in names if name not in records and not _STEP_NAME.match(name)]


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(f"{path.name}.tmp")
    tmp.write_text(json.dumps(value, sort_keys=True, indent=1))
    tmp.replace(path)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class CheckpointStore:
    """One experiment's checkpoint directory: a sub-directory per training run.

    **Arguments:**

    - `directory`: the store (created if missing). An existing directory must be
      empty or written by motorflow; otherwise :class:`ForeignFilesError`.
    - `keep_runs`: how many runs (configurations) keep their checkpoints; the least
      recently used beyond that are removed when another run opens.
    """

    def __init__(self, directory: str | Path, *, keep_runs: int = 3):
        if keep_runs < 1:
            raise ValueError(f"keep_runs must be >= 1, got {keep_runs}")
        self.directory = Path(directory).absolute()
        self.keep_runs = keep_runs
        self._claim()

    @property
    def _record(self) -> Path:
        return self.directory / _STORE_RECORD

    def _claim(self) -> None:
        exists = self.directory.exists()
        entries = sorted(p.name for p in self.directory.iterdir()) if exists else []
        if entries and not self._record.exists():
            if (self.directory / _RUN_RECORD).exists():
                self._remove_old_layout(entries)
            else:
                raise ForeignFilesError(self.directory, entries)
        foreign = [name for name in entries if not self._is_ours(name)]
        if foreign:
            raise ForeignFilesError(self.directory, foreign)
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self._record.exists():
            _write_json(self._record, {"format": _STORE_FORMAT, "outputs_from": None})

    def _is_ours(self, name: str) -> bool:
        if name in (_STORE_RECORD, f"{_STORE_RECORD}.tmp", LOCK_NAME):
            return True
        path = self.directory / name
        return bool(_RUN_NAME.match(name)) and path.is_dir() and _owned_run_dir(path)

    def _remove_old_layout(self, entries: list[str]) -> None:
        # Before stores had run sub-directories, steps lay in the directory itself.
        foreign = _foreign_in_run_dir(entries, (_RUN_RECORD, "motorflow-run.tmp"))
        if foreign:
            raise ForeignFilesError(self.directory, foreign)
        logger.info("Removing checkpoints in an older layout from %s.", self.directory)
        for name in entries:
            path = self.directory / name
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()

    def runs(self) -> list[str]:
        """The runs that have checkpoints here, least recently used first."""
        names = [p.name for p in self.directory.iterdir() if self._is_ours(p.name)]
        names = [n for n in names if _RUN_NAME.match(n)]
        return sorted(names, key=lambda n: (_last_used(self.directory / n), n))

    @property
    def outputs_from(self) -> str | None:
        """The run whose results were last written as the stage's outputs, if any."""
        record = _read_json(self._record) or {}
        return record.get("outputs_from")

    def record_outputs(self, run_id: str | None) -> None:
        """Note that the outputs now hold `run_id`'s results (None: no run's)."""
        _write_json(self._record, {"format": _STORE_FORMAT, "outputs_from": run_id})

    def open(
        self, run_id: str, *, fingerprint: dict[str, Any], keep: int = 2, fresh: bool = False
    ) -> Checkpoints:
        """The checkpoints of run `run_id`; `fresh` removes what it had first.

        The store is this process's to write until the checkpoints close: opening it
        while another training writes it raises ``CheckpointsInUseError``. Opening a
        run marks it as the most recently used and removes the checkpoints of runs
        beyond the newest `keep_runs`.
        """
        name = run_id[:16]
        if not _RUN_NAME.match(name):
            raise ValueError(f"a run id is a hex digest of at least 16 characters, got {run_id!r}")
        lock = FolderLock(self.directory)
        try:
            path = self.directory / name
            if fresh and path.exists():
                shutil.rmtree(path)
            checkpoints = Checkpoints(path, fingerprint=fingerprint, keep=keep, lock=lock)
        except BaseException:
            lock.release()
            raise
        os.utime(path / _RUN_RECORD, ns=(time.time_ns(), time.time_ns()))
        for old in self.runs()[: -self.keep_runs]:
            if old != name:
                logger.info("Removing the checkpoints of an older configuration, %s.", old)
                shutil.rmtree(self.directory / old, ignore_errors=True)
        return checkpoints


def _owned_run_dir(path: Path) -> bool:
    names = [p.name for p in path.iterdir()]
    # An empty directory is a run whose first write was interrupted.
    return not names or _RUN_RECORD in names


def _last_used(path: Path) -> int:
    try:
        return (path / _RUN_RECORD).stat().st_mtime_ns
    except OSError:
        return 0


class Checkpoints:
    """A context manager over the checkpoint steps of one training run.

    **Arguments:**

    - `directory`: where the steps are written (created if missing).
    - `fingerprint`: JSON-able description of the run. A directory holding another
      run's checkpoints (written by motorflow) is cleared, with a warning, before
      anything is written; a non-empty directory that motorflow did not write is
      refused with :class:`ForeignFilesError`.
    - `keep`: how many of the newest steps to keep (the best is kept as well).
    - `lock`: the store's lock (`CheckpointStore.open`), released by :meth:`close`.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        fingerprint: dict[str, Any],
        keep: int = 2,
        lock: FolderLock | None = None,
    ):
        self.directory = Path(directory).absolute()
        self._lock = lock  # the store's, released as these close
        self._claim(fingerprint)
        self._drop_unreadable_metrics()
        ocp = self._ocp = orbax_checkpoint()
        policies = ocp.checkpoint_managers
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(
                enable_async_checkpointing=True,
                cleanup_tmp_directories=True,
                preservation_policy=policies.AnyPreservationPolicy(
                    [
                        policies.LatestN(n=keep),
                        # reverse=True: a lower validation loss is better.
                        policies.BestN(get_metric_fn=lambda m: m["loss"], reverse=True, n=1),
                    ]
                ),
                best_fn=lambda m: m["loss"],
                best_mode="min",
            ),
        )

    def _drop_unreadable_metrics(self) -> None:
        # The manager reads every step's metrics when it opens and fails on a damaged one.
        for metrics in self.directory.glob("*/metrics/metrics"):
            step_dir = metrics.parent.parent
            if not step_dir.name.isdigit():
                continue
            try:
                json.loads(metrics.read_text())
            except (OSError, ValueError) as error:
                logger.warning(
                    "The checkpoint at batch %s in %s is damaged and is removed "
                    "(unreadable metrics: %s).",
                    step_dir.name,
                    self.directory,
                    error,
                )
                shutil.rmtree(step_dir, ignore_errors=True)

    def _claim(self, fingerprint: dict[str, Any]) -> None:
        record = self.directory / _RUN_RECORD
        text = json.dumps(fingerprint, sort_keys=True, indent=1)
        entries = [p.name for p in self.directory.iterdir()] if self.directory.exists() else []
        if entries:
            if not record.exists():
                raise ForeignFilesError(self.directory, entries)
            foreign = _foreign_in_run_dir(entries, (_RUN_RECORD, f"{_RUN_RECORD}.tmp"))
            if foreign:
                raise ForeignFilesError(self.directory, foreign)
            if record.read_text() == text:
                return
            logger.warning(
                "Checkpoints in %s were written for a different configuration; "
                "starting afresh and removing them.",
                self.directory,
            )
            shutil.rmtree(self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = record.with_name(f"{record.name}.tmp")
        tmp.write_text(text)
        tmp.replace(record)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Wait for pending asynchronous saves and release the manager (and the
        store's lock)."""
        try:
            self._manager.close()
        finally:
            if self._lock is not None:
                self._lock.release()

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        return list(self._manager.all_steps())

    def best_step(self) -> int | None:
        return self._manager.best_step()

    def save(self, step: int, *, state: Any, history: Any, loss: float) -> None:
        """Start writing `step` (asynchronously); `loss` ranks it for keeping."""
        self._manager.save(
            step,
            args=self._ocp.args.Composite(
                state=self._ocp.args.StandardSave(state),
                history=self._ocp.args.StandardSave(history),
            ),
            metrics={"loss": float(loss)},
            force=True,
        )

    def restore_newest(self, *, state_like: Any, history_like: Any) -> tuple[int, Any, Any] | None:
        """The newest usable checkpoint as ``(step, state, history)``, or None.

        A damaged checkpoint (truncated or missing files) is removed with a warning
        naming its step, and the next older one is tried.
        """
        steps = sorted(self.all_steps(), reverse=True)
        for step in steps:
            try:
                state, history = self.restore(
                    step, state_like=state_like, history_like=history_like
                )
                _check_like((state, history), (state_like, history_like))
            except Exception as error:  # noqa: BLE001 - orbax/tensorstore raise many kinds
                logger.warning(
                    "The checkpoint at batch %d in %s is damaged and is removed (%s: %s).",
                    step,
                    self.directory,
                    type(error).__name__,
                    str(error).splitlines()[0][:300] if str(error) else "",
                )
                shutil.rmtree(self.directory / str(step), ignore_errors=True)
                self._manager.reload()
                continue
            if step != steps[0]:
                logger.warning("Resuming from the older checkpoint at batch %d.", step)
            return step, state, history
        if steps:
            logger.warning(
                "No usable checkpoint is left in %s; training starts afresh.", self.directory
            )
        return None

    def restore(self, step: int, *, state_like: Any, history_like: Any) -> tuple[Any, Any]:
        """Read `step` into the structures of `state_like` and `history_like`."""
        abstract = restore_target((state_like, history_like))
        restored = self._manager.restore(
            step,
            args=self._ocp.args.Composite(
                state=self._ocp.args.StandardRestore(abstract[0]),
                history=self._ocp.args.StandardRestore(abstract[1]),
            ),
        )
        return restored["state"], restored["history"]


def _check_like(restored: Any, like: Any) -> None:
    """Raise ValueError unless `restored` has the structure, shapes and dtypes of `like`."""
    leaves, structure = jax.tree.flatten(restored)
    like_leaves, like_structure = jax.tree.flatten(like)
    if structure != like_structure:
        raise ValueError("the restored tree does not have the structure of the train state")
    for leaf, like_leaf in zip(leaves, like_leaves):
        if (getattr(leaf, "shape", None), getattr(leaf, "dtype", None)) != (
            getattr(like_leaf, "shape", None),
            getattr(like_leaf, "dtype", None),
        ):
            raise ValueError(
                f"a restored array has shape {getattr(leaf, 'shape', None)} and dtype "
                f"{getattr(leaf, 'dtype', None)}, expected {like_leaf.shape} {like_leaf.dtype}"
            )
