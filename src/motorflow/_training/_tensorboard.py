"""Optional TensorBoard event files of a training run (``train.tensorboard: true``).

Written with tensorboardX (``pip install 'motorflow[tensorboard]'``), which only the
runs that ask for it import. Tags, one scalar series per loss term and replicate:

- ``loss/<term>/replicate_<r>``: the training loss of each batch (step = batch index);
- ``grad_norm/<term>/replicate_<r>``: the gradient norm of each batch (``total``, and
  each term with ``gradient_norms: per_term``);
- ``validation_loss/<term>/replicate_<r>``: at each validation (step = batches done);
- ``learning_rate``: of each batch.

A resumed run writes a new event file into the same directory that starts at its
first batch (tensorboardX's ``purge_step``), so TensorBoard drops what the
interrupted run wrote past its checkpoint and shows each step once.
"""

from __future__ import annotations

import contextlib
import importlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ._callbacks import Callback, ChunkEnd
from ._history import History, validation_at

if TYPE_CHECKING:
    from ._plan import TrainingPlan

INSTALL_HINT = "pip install 'motorflow[tensorboard]' (tensorboardX)"


def _writer_class() -> Any:
    try:
        return importlib.import_module("tensorboardX").SummaryWriter
    except ImportError:
        raise ImportError(
            f"train.tensorboard is on, but tensorboardX is not installed: {INSTALL_HINT}, "
            "or set train.tensorboard: false"
        ) from None


class TensorBoardLog:
    """The event files of one training run, in `directory` (created if missing).

    Raises :class:`ImportError` saying what to install when tensorboardX is missing,
    before anything is written.
    """

    def __init__(self, directory: str | Path):
        self._writer_class = _writer_class()
        self.directory = Path(directory)
        self._writer: Any = None

    def start(self, first_batch: int) -> None:
        """Open a new event file for a run that trains from `first_batch` (0, or where
        it resumes); any event of an earlier file at or past it is superseded."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._writer = self._writer_class(
            str(self.directory),
            purge_step=first_batch,
            flush_secs=30,
            # Event files are named by the second they open in; two runs in one second
            # must not share a file.
            filename_suffix=f".from_batch_{first_batch}.{uuid.uuid4().hex[:8]}",
        )

    def batches(self, start: int, records: Any) -> None:
        """The losses, gradient norms and learning rates of the batches from `start`
        (:class:`BatchRecords`, with only the run batches)."""
        for name, values in (("loss", records.loss), ("grad_norm", records.grad_norm)):
            for term, series in values.items():
                self._per_replicate(f"{name}/{term}", start, np.asarray(series))
        for offset, rate in enumerate(np.asarray(records.learning_rate)):
            self._writer.add_scalar("learning_rate", float(rate), start + offset)

    def validation(self, batch: int, losses: dict[str, np.ndarray]) -> None:
        """The validation losses per term and replicate after `batch` batches."""
        for term, values in losses.items():
            self._per_replicate(f"validation_loss/{term}", batch, np.asarray(values)[None])

    def _per_replicate(self, tag: str, start: int, series: np.ndarray) -> None:
        """`series` `(batch, replicate)` from step `start`; NaN (skipped, or a diverged
        replicate) is not written."""
        for offset, row in enumerate(series):
            for replicate, value in enumerate(row):
                if np.isfinite(value):
                    self._writer.add_scalar(
                        f"{tag}/replicate_{replicate}", float(value), start + offset
                    )

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


class _NoTensorBoard:
    """Stands in for a :class:`TensorBoardLog` when none is written."""

    def start(self, first_batch: int) -> None:
        pass

    def batches(self, start: int, records: Any) -> None:
        pass

    def validation(self, batch: int, losses: dict[str, np.ndarray]) -> None:
        pass


@contextlib.contextmanager
def open_tensorboard(directory: str | Path | None) -> Iterator[TensorBoardLog | _NoTensorBoard]:
    """The run's TensorBoard log in `directory` (None: a log that writes nothing),
    closed however the run ends."""
    if directory is None:
        yield _NoTensorBoard()
        return
    board = TensorBoardLog(directory)
    try:
        yield board
    finally:
        board.close()


class TensorBoardEvents(Callback):
    """A training run's TensorBoard log in `directory` (None: none) as a callback of
    :func:`train`, run on `plan`: open while entered (see :func:`open_tensorboard`)."""

    def __init__(self, directory: str | Path | None, plan: TrainingPlan):
        self.directory, self.plan = directory, plan

    def __enter__(self) -> Self:
        self._opened = open_tensorboard(self.directory)
        self._board = self._opened.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._opened.__exit__(*exc_info)

    def on_resume(self, done: int, history: History) -> None:
        self._board.start(done)
        if done and self.plan.validates_at(done):
            # The new event file supersedes the old ones from `done` on, this
            # validation included: write it again, from the restored history.
            self._board.validation(done, validation_at(history, done))

    def on_validation(self, batch: int, losses: dict[str, np.ndarray]) -> None:
        self._board.validation(batch, losses)

    def on_chunk_end(self, chunk: ChunkEnd) -> None:
        self._board.batches(chunk.start, chunk.records)
