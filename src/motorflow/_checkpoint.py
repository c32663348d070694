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

from ._orbax import orbax_checkpoint

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

    def restore(self, step: int, *, state_like: Any, history_like: Any) -> tuple[Any, Any]:
        """Read `step` into the structures of `state_like` and `history_like`."""
        abstract = jax.tree.map(self._ocp.utils.to_shape_dtype_struct, (state_like, history_like))
        restored = self._manager.restore(
            step,
            args=self._ocp.args.Composite(
                state=self._ocp.args.StandardRestore(abstract[0]),
                history=self._ocp.args.StandardRestore(abstract[1]),
            ),
        )
        return restored["state"], restored["history"]
