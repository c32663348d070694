"""What a training run does besides training (logs, TensorBoard, checkpoints, its
record, stopping on a signal): callbacks that :func:`train`'s loop calls at fixed moments."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np

    from ._history import History
    from ._state import BatchRecords, TrainState


class ChunkEnd(NamedTuple):
    """A compiled call done: it trained batches ``start:stop`` (their `records`), was
    validated after them (`validation`: the losses; None: not validated), and left
    `state` and `history` (its batches recorded)."""

    start: int
    stop: int
    records: BatchRecords
    validation: dict[str, np.ndarray] | None
    state: TrainState
    history: History


class Callback:
    """Something a run does at the moments of :func:`train` named by these hooks; a
    hook does nothing unless a callback defines it. A callback that holds something
    open (a file, signal handlers) is a context manager as well, which :func:`train`
    enters around its loop."""

    def on_resume(self, done: int, history: History) -> None:
        """The run starts after `done` batches (0, or its newest checkpoint's) with
        `history` (restored from that checkpoint)."""

    def on_validation(self, batch: int, losses: dict[str, np.ndarray]) -> None:
        """The run was validated after `batch` batches: `losses` per term, `(replicate,)`
        (NaN for a diverged replicate)."""

    def on_loop_start(self, done: int) -> None:
        """The compiled calls start after `done` batches (after the starting validation)."""

    def on_chunk_end(self, chunk: ChunkEnd) -> None:
        """A compiled call is done (:class:`ChunkEnd`)."""


class Callbacks(Callback):
    """`callbacks` called in turn, in the order given, at each hook."""

    def __init__(self, *callbacks: Callback):
        self.callbacks = callbacks

    def on_resume(self, done: int, history: History) -> None:
        for callback in self.callbacks:
            callback.on_resume(done, history)

    def on_validation(self, batch: int, losses: dict[str, np.ndarray]) -> None:
        for callback in self.callbacks:
            callback.on_validation(batch, losses)

    def on_loop_start(self, done: int) -> None:
        for callback in self.callbacks:
            callback.on_loop_start(done)

    def on_chunk_end(self, chunk: ChunkEnd) -> None:
        for callback in self.callbacks:
            callback.on_chunk_end(chunk)


class OnLog(Callback):
    """:func:`train`'s `on_log` (None: nothing) as a callback: `on_log` is called after
    each compiled call with the number of batches done and the history so far."""

    def __init__(self, on_log: Callable[[int, History], None] | None):
        self.on_log = on_log

    def on_chunk_end(self, chunk: ChunkEnd) -> None:
        if self.on_log is not None:
            self.on_log(chunk.stop, chunk.history)
