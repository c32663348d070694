"""When a training action runs: one schedule vocabulary for every action.

A schedule names batch counts: an action scheduled at ``b`` runs after the
``b``-th batch (``1 <= b <= n_batches``). The keys combine (the union of their
batches), as bobbin's CronTab and GoMLX's loop hooks do:

- ``every: N``: N, 2N, 3N, ...
- ``at: [b1, b2, ...]``: exactly these.
- ``first: N``: 1, 2, ..., N (every batch of the first N).
- ``exponential: {start, factor}``: start, then gaps growing by `factor`:
  start, start + start*f, start + start*f + start*f**2, ... (GoMLX's exponential hook).
- ``times: N``: N evenly spaced, the last one at the last batch.
- ``seconds: T`` (checkpoints and log lines only): at the first chunk boundary T
  seconds after the last time, by the wall clock. Results never depend on it.

Everything but ``seconds`` is a function of the batch count only, so a resumed run
takes the same actions as an uninterrupted one.
"""

from __future__ import annotations

import math
import time
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import Field, Strict

from .._config_base import Block, PositiveInt, PositiveNumber
from .._config_errors import ConfigError


class ExponentialSpacing(Block):
    """Batches with exponentially growing gaps: the first at `start`, each gap `factor`
    times the one before."""

    start: PositiveInt = 1
    factor: Annotated[float, Strict(), Field(ge=1)] = 2.0


class BatchSchedule(Block):
    """Batches at which an action runs (see the module docstring); names at least one key."""

    replaced_whole: ClassVar[bool] = True
    # Keys that other schedules accept, with why this one does not.
    key_hints: ClassVar[dict[str, str]] = {
        "seconds": "wall-time schedules drive only checkpoints and log lines, never an "
        "action whose results they would change; use every, at, first, exponential or times"
    }

    every: PositiveInt | None = None
    at: tuple[PositiveInt, ...] | None = None
    first: PositiveInt | None = None
    exponential: ExponentialSpacing | None = None
    times: PositiveInt | None = None

    def check_batches(self, n_batches: int, path: str) -> None:
        """Raise :class:`ConfigError` under `path` for a schedule that names nothing, or
        a batch beyond `n_batches`."""
        named = {k: v for k, v in self.to_dict().items() if v is not None}
        if not named:
            keys = ", ".join(type(self).model_fields)
            raise ConfigError(path, f"a schedule names at least one of: {keys}")
        late = [b for b in self.at or () if b > n_batches]
        if late:
            raise ConfigError(
                f"{path}.at",
                f"batch {late[0]} is beyond the last batch ({n_batches}, train.n_batches)",
            )

    def batches(self, n_batches: int) -> np.ndarray:
        """The scheduled batch counts in ``[1, n_batches]``, sorted, each once."""
        found: list[np.ndarray] = [np.asarray(self.at or (), np.int64)]
        if self.every is not None:
            found.append(np.arange(self.every, n_batches + 1, self.every))
        if self.first is not None:
            found.append(np.arange(1, min(self.first, n_batches) + 1))
        if self.times is not None:
            count = min(self.times, n_batches)
            found.append(np.round(np.arange(1, count + 1) * n_batches / count).astype(np.int64))
        if self.exponential is not None:
            found.append(_exponential(self.exponential, n_batches))
        every = np.unique(np.concatenate(found).astype(np.int64))
        return every[(every >= 1) & (every <= n_batches)]

    def mask(self, n_batches: int) -> np.ndarray:
        """`(n_batches,)` bools: whether the action runs after batch index i (count i+1)."""
        flags = np.zeros(n_batches, bool)
        flags[self.batches(n_batches) - 1] = True
        return flags


class TimedSchedule(BatchSchedule):
    """A batch schedule that may also run every `seconds` of wall time."""

    key_hints: ClassVar[dict[str, str]] = {}

    seconds: PositiveNumber | None = None


def _exponential(spacing: ExponentialSpacing, n_batches: int) -> np.ndarray:
    batches: list[int] = []
    total, gap = 0.0, float(spacing.start)
    while True:
        total += gap
        # Rounded to whole batches, at least one apart.
        batch = max(math.floor(total + 0.5), batches[-1] + 1 if batches else 1)
        if batch > n_batches:
            return np.asarray(batches, np.int64)
        batches.append(batch)
        gap *= spacing.factor


class WallClock:
    """Whether `period` seconds (None: never) have passed since the last time it fired."""

    def __init__(self, period: float | None, *, clock: Any = time.monotonic):
        self.period, self._clock = period, clock
        self._last = clock()

    def due(self) -> bool:
        """True (and restart the period) when the period has passed."""
        if self.period is None or self._clock() - self._last < self.period:
            return False
        self._last = self._clock()
        return True
