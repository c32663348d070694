"""The training log's progress lines: losses, validation, diverged replicates, rate."""

from __future__ import annotations

import time

import numpy as np

from ._divergence import HEALTHY
from ._state import TrainState


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
