"""The training log's progress lines: losses, validation, diverged replicates, rate;
and the progress bar on a terminal."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Self

import numpy as np
from tqdm.auto import tqdm

from ._config import TrainConfig
from ._callbacks import Callback, ChunkEnd
from ._divergence import HEALTHY
from ._state import TrainState

if TYPE_CHECKING:
    from ._history import History
    from ._plan import TrainingPlan

logger = logging.getLogger("motorflow")


def finite_mean(values: np.ndarray) -> float:
    """The mean over the replicates still training (finite values); NaN when none is."""
    values = np.asarray(values)
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else float("nan")


def format_losses(losses: dict[str, np.ndarray]) -> str:
    return "  ".join(f"{name} {finite_mean(value):.3g}" for name, value in losses.items())


def log_line(
    stop: int,
    n_batches: int,
    losses: dict[str, np.ndarray],
    validation: dict[str, np.ndarray] | None,
    state: TrainState,
) -> str:
    """The progress log line after `stop` batches: the last batch's training losses, the
    validation losses (when measured) and the diverged replicates (if any)."""
    line = (
        f"batch {stop}/{n_batches}  train: {format_losses({k: v[-1] for k, v in losses.items()})}"
    )
    if validation is not None:
        line += f"  validation: {format_losses(validation)}"
    diverged = np.flatnonzero(np.asarray(state.diverged_at) != HEALTHY)
    if diverged.size:
        line += f"  diverged replicate(s): {', '.join(map(str, diverged))}"
    return line


class BatchRate:
    """Batches per second (wall time) since the previous log line."""

    def __init__(self, done: int):
        self._time, self._done = time.perf_counter(), done

    def since_last(self, done: int) -> float:
        now = time.perf_counter()
        rate = (done - self._done) / max(now - self._time, 1e-9)
        self._time, self._done = now, done
        return rate


def batch_span(done: int, n_batches: int) -> str:
    """The batches a run trains when `done` (< `n_batches`) were done, in words."""
    if done + 1 == n_batches:
        return f"batch {n_batches} (the last)"
    return f"batches {done + 1} to {n_batches}"


class Progress(Callback):
    """A run's progress, as a callback of :func:`train`: what it trains in the log, a
    bar on a terminal (`bar`; closed on exit) and a log line on `plan`'s log schedule.

    **Arguments:**

    - `config`: the training config.
    - `plan`: its :class:`TrainingPlan`.
    - `bar`: show a progress bar (on a terminal only: never in a log file).
    """

    def __init__(self, config: TrainConfig, plan: TrainingPlan, *, bar: bool):
        self.config, self.plan, self.show_bar = config, plan, bar
        self._bar: tqdm | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc_info)

    def on_resume(self, done: int, history: History) -> None:
        config = self.config
        if done < config.n_batches:
            logger.info(
                "Training %d replicates for %s of %d trials each",
                config.n_replicates,
                batch_span(done, config.n_batches),
                config.batch_size,
            )
        else:
            logger.info(
                "Nothing to train: all %d batches were done already (the final checkpoint)",
                config.n_batches,
            )
        self._rate = BatchRate(done)

    def on_loop_start(self, done: int) -> None:
        self._bar = tqdm(
            total=self.config.n_batches,
            initial=done,
            # A bar on a terminal only (tqdm's None): never in a log file.
            disable=None if self.show_bar else True,
            unit="batch",
            desc="train",
        )

    def on_chunk_end(self, chunk: ChunkEnd) -> None:
        losses, stop = chunk.records.loss, chunk.stop
        self._bar.update(stop - chunk.start)
        self._bar.set_postfix(loss=f"{finite_mean(losses['total'][-1]):.3g}")
        if self.plan.logs_at(stop):
            line = log_line(stop, self.config.n_batches, losses, chunk.validation, chunk.state)
            logger.info("%s  %.1f batch/s", line, self._rate.since_last(stop))
