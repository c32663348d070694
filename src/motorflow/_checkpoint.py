"""Resume state on disk: orbax checkpoints of (train state, history), asynchronous.

Keeps the newest `keep` steps plus the best by validation loss, and never deletes
the newest (a plain ``best_fn`` + ``max_to_keep`` manager would). A fingerprint of
the run's configuration is stored beside the checkpoints; checkpoints written for
another configuration are never resumed.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any, Self

import jax

from ._orbax import orbax_checkpoint, restore_target

logger = logging.getLogger("motorflow")

_FINGERPRINT = "motorflow-run.json"


class Checkpoints:
    """A context manager over one checkpoint directory.

    **Arguments:**

    - `directory`: where the steps are written (created if missing).
    - `fingerprint`: JSON-able description of the run; a directory holding another
      run's checkpoints is cleared, with a warning, before anything is written.
    - `keep`: how many of the newest steps to keep (the best is kept as well).
    """

    def __init__(self, directory: str | Path, *, fingerprint: dict[str, Any], keep: int = 2):
        self.directory = Path(directory).absolute()
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
        record = self.directory / _FINGERPRINT
        text = json.dumps(fingerprint, sort_keys=True, indent=1)
        if self.directory.exists() and any(self.directory.iterdir()):
            old = record.read_text() if record.exists() else None
            if old == text:
                return
            logger.warning(
                "Checkpoints in %s were written for a different configuration; "
                "starting afresh and removing them.",
                self.directory,
            )
            shutil.rmtree(self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = record.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(record)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Wait for pending asynchronous saves and release the manager."""
        self._manager.close()

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
