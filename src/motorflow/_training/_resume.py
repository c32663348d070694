"""Opening a run's checkpoints and resuming from the newest, with what the log says."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._checkpoint import Checkpoints, CheckpointStore
from ._config import TrainConfig
from ._history import History
from ._state import TrainState

logger = logging.getLogger("motorflow")


@contextlib.contextmanager
def closing(checkpoints: Checkpoints | None) -> Iterator[None]:
    """Close `checkpoints` (waiting for its writes) however the block ends."""
    try:
        yield
    finally:
        if checkpoints is not None:
            checkpoints.close()


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
