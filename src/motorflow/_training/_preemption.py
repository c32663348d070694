"""Preemption: SIGTERM or SIGUSR1 asks a training run to checkpoint and stop.

A cluster sends SIGTERM before it kills a job, and SLURM sends the signal named by
``sbatch --signal=USR1@<seconds>`` that long before a job's time limit. While a
:class:`PreemptionWatch` is entered, those signals only set a flag; the trainer
checks it between compiled calls, writes a checkpoint there and raises
:class:`TrainingPreempted`, so the job exits non-zero and its retry resumes.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import TYPE_CHECKING, Any, Self

from ._callbacks import Callback, ChunkEnd

if TYPE_CHECKING:
    from ._checkpoint import Checkpoints

logger = logging.getLogger("motorflow")

SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


class TrainingPreempted(RuntimeError):
    """Training stopped on a signal after writing a checkpoint; running again resumes."""

    def __init__(self, *, batch: int, signal_name: str, where: str):
        self.batch, self.signal_name = batch, signal_name
        super().__init__(
            f"Training stopped at batch {batch} on {signal_name} (a time limit or a "
            f"preemption is near) after writing a checkpoint {where}. Run the same "
            "command again to resume from it; the result equals an uninterrupted run."
        )


# The watches entered in the main thread, in order, and the handlers before the first:
# one handler of ours is installed while any watch is entered, and it tells them all. A
# pack of runs (motorflow.train_pack) enters one watch per run and leaves them in any
# order (a run that finishes first leaves first), so no watch may restore the handler
# it found while others still watch.
_WATCHES: list[PreemptionWatch] = []
_BEFORE: dict[int, Any] = {}


def _on_signal(signum: int, frame: Any) -> None:
    name = signal.Signals(signum).name
    if any(watch.requested is None for watch in _WATCHES):
        logger.warning(
            "Received %s: training stops at the end of the running compiled call, "
            "after writing a checkpoint.",
            name,
        )
    for watch in _WATCHES:
        watch.requested = name


class PreemptionWatch:
    """While entered (in the main thread), SIGTERM and SIGUSR1 set :attr:`requested`
    (the signal's name) instead of ending the process; the handlers before are
    restored when the last watch entered leaves. Watches entered together (the runs of
    a pack) each see every signal, and may leave in any order. In another thread it
    watches nothing (Python delivers signals to the main thread only)."""

    def __init__(self):
        self.requested: str | None = None

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():
            if not _WATCHES:
                for sig in SIGNALS:
                    _BEFORE[sig] = signal.signal(sig, _on_signal)
            _WATCHES.append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self not in _WATCHES:
            return
        _WATCHES.remove(self)
        if not _WATCHES:
            for sig, handler in _BEFORE.items():
                signal.signal(sig, handler)
            _BEFORE.clear()


class Preemption(Callback):
    """A :class:`PreemptionWatch` as a callback of :func:`train`, watching while entered:
    after the compiled call in which a signal came (and its checkpoint, written before
    this is called), it raises :class:`TrainingPreempted` unless that call ended the run.

    **Arguments:**

    - `n_batches`: the run's batches.
    - `checkpoints`: the run's checkpoints (None: none are written).
    """

    def __init__(self, n_batches: int, checkpoints: Checkpoints | None):
        self.n_batches, self.checkpoints = n_batches, checkpoints
        self.watch = PreemptionWatch()

    @property
    def requested(self) -> str | None:
        """The name of the signal that asked the run to stop (None: none did)."""
        return self.watch.requested

    def __enter__(self) -> Self:
        self.watch.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.watch.__exit__(*exc_info)

    def on_chunk_end(self, chunk: ChunkEnd) -> None:
        if self.requested and chunk.stop < self.n_batches:
            raise TrainingPreempted(
                batch=chunk.stop,
                signal_name=self.requested,
                where="(none: no checkpoint directory was given)"
                if self.checkpoints is None
                else f"in {self.checkpoints.directory}",
            )
