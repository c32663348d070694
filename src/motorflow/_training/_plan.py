"""A training run's calendar: which batches end a compiled chunk, and what runs there.

Every scheduled action runs between compiled calls, so the calls end at the union
of the scheduled batches. Each call runs a fixed number of scan steps
(`chunk_length`), the ones past its end skipped, so one compiled program serves
every chunk whatever the schedules, and a schedule edit never recompiles.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np

from ._config import TrainConfig
from ._schedule import WallClock

# Batches per compiled call at most: bounds how long a wall-time checkpoint, a log
# line or a preemption signal waits for the running call.
MAX_CHUNK_LENGTH = 100


class TrainingPlan:
    """The batches at which a run validates, logs, checkpoints and snapshots, and its chunks.

    **Arguments:**

    - `config`: the training config.
    """

    def __init__(self, config: TrainConfig):
        n = self.n_batches = config.n_batches
        # Validation also before the first batch (the starting point) and after the
        # last (the result); log lines and checkpoints also after the last.
        self.validate = np.union1d([0, n], config.validation.batches(n)).astype(np.int64)
        self.log = np.union1d([n], config.log.batches(n)).astype(np.int64)
        self.checkpoint = np.union1d([n], config.checkpoint.batches(n)).astype(np.int64)
        # Snapshots (if any) also before the first batch: the starting point.
        snapshots = config.snapshots
        self.snapshot = (
            np.union1d([0], snapshots.batches.batches(n)).astype(np.int64)
            if snapshots is not None
            else np.zeros(0, np.int64)
        )
        # Per batch index, whether each update rule runs after it, `(batch, rule)`.
        self.rule_flags = np.zeros((n, len(config.update_rules)), bool)
        for index, rule in enumerate(config.update_rules):
            self.rule_flags[:, index] = rule.batches.mask(n)
        self.boundaries = functools.reduce(
            np.union1d, (self.validate, self.log, self.checkpoint, self.snapshot)
        )
        self.chunk_length = min(MAX_CHUNK_LENGTH, n)
        self.log_clock = WallClock(config.log.seconds)
        self.checkpoint_clock = WallClock(config.checkpoint.seconds)

    def chunks(self, done: int) -> Iterator[tuple[int, int]]:
        """``(start, stop)`` batch ranges from `done` to the end: each stops at the next
        scheduled batch or after `chunk_length` batches."""
        start = done
        while start < self.n_batches:
            later = self.boundaries[self.boundaries > start]
            stop = int(min(later[0], start + self.chunk_length))
            yield start, stop
            start = stop

    def validates_at(self, batch: int) -> bool:
        return bool(np.isin(batch, self.validate))

    def snapshots_at(self, batch: int) -> bool:
        return bool(np.isin(batch, self.snapshot))

    def logs_at(self, batch: int) -> bool:
        """Whether a log line is due after `batch` (scheduled, or by the wall clock)."""
        return bool(np.isin(batch, self.log)) | self.log_clock.due()

    def checkpoints_at(self, batch: int) -> bool:
        """Whether a checkpoint is due after `batch` (scheduled, or by the wall clock)."""
        return bool(np.isin(batch, self.checkpoint)) | self.checkpoint_clock.due()
