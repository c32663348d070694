"""Opening a run's checkpoints, resuming from the newest and writing new ones, with
what the log says."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import jax
import numpy as np

from .._faults import kill_point
from ._callbacks import Callback, ChunkEnd
from ._checkpoint import Checkpoints, CheckpointStore
from ._config import TrainConfig
from ._history import History
from ._progress import finite_mean
from ._state import TrainState

if TYPE_CHECKING:
    from ._plan import TrainingPlan
    from ._preemption import Preemption

logger = logging.getLogger("motorflow")


def open_checkpoints(
    checkpoint_dir: str | Path | None,
    identity: str,
    fingerprint: dict[str, Any],
    config: TrainConfig,
    restart: bool,
) -> Checkpoints | None:
    """This run's checkpoints in the store at `checkpoint_dir` (None: no checkpoints)."""
    if checkpoint_dir is None:
        return None
    store = CheckpointStore(checkpoint_dir)
    others = [run for run in store.runs() if run != identity[:16]]
    if others:
        logger.info(
            "%s holds the checkpoints of %d other configuration(s); they are kept "
            "(for reverting an edit) and never applied to this one.",
            store.directory,
            len(others),
        )
    return store.open(
        identity, fingerprint=fingerprint, keep=config.keep_checkpoints, fresh=restart
    )


def resume(
    checkpoints: Checkpoints | None, state: TrainState, history: History, config: TrainConfig
) -> tuple[int, TrainState, History]:
    """The batches done, state and history of the newest checkpoint, else the given
    ones with 0 batches done."""
    restored = (
        checkpoints.restore_newest(state_like=state, history_like=history)
        if checkpoints is not None
        else None
    )
    if restored is None:
        if checkpoints is not None:
            logger.info(
                "Training from the first batch; checkpoints go to %s", checkpoints.directory
            )
        return 0, state, history
    _, state, restored_history = restored
    # Restored mappings come back in sorted key order; keep the loss terms' order.
    history = _in_order_of(history, restored_history)
    done = int(state.step)
    if done == config.n_batches:
        logger.info(
            "This configuration finished training earlier (checkpoint at batch %d in "
            "%s); its results are written without training again.",
            done,
            checkpoints.directory,
        )
    else:
        logger.info("Resuming from the checkpoint at batch %d in %s", done, checkpoints.directory)
    return done, state, history


def _in_order_of(template: Any, tree: Any) -> Any:
    """`tree`'s values, with every mapping's keys in the order of `template`'s."""
    if isinstance(template, dict):
        return {key: _in_order_of(value, tree[key]) for key, value in template.items()}
    return tree


def resume_hint(checkpoints: Checkpoints | None) -> str:
    if checkpoints is None:
        return "No checkpoints were being written."
    latest = checkpoints.latest_step()
    if latest is None:
        return f"No checkpoint had been written yet in {checkpoints.directory}."
    return f"The last good checkpoint (batch {latest}) is kept in {checkpoints.directory}."


class CheckpointWriter(Callback):
    """Writes a run's `checkpoints` (None: none), as a callback of :func:`train`: after
    each compiled call that `plan` checkpoints at or a signal asks to stop after
    (`preemption`); closes them (waiting for their writes) on exit, however the run ends.
    """

    def __init__(
        self, checkpoints: Checkpoints | None, plan: TrainingPlan, preemption: Preemption
    ):
        self.checkpoints, self.plan, self.preemption = checkpoints, plan, preemption

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.checkpoints is not None:
            self.checkpoints.close()

    def on_chunk_end(self, chunk: ChunkEnd) -> None:
        if self.checkpoints is None:
            return
        if self.plan.checkpoints_at(chunk.stop) or self.preemption.requested:
            self.checkpoints.save(
                chunk.stop,
                state=chunk.state,
                history=jax.tree.map(np.copy, chunk.history),
                # Ranks the checkpoints for keeping: unvalidated ones (and ones with every
                # replicate diverged) rank last.
                loss=np.inf
                if chunk.validation is None
                else np.nan_to_num(finite_mean(chunk.validation["total"]), nan=np.inf),
            )
            kill_point("checkpoint")
