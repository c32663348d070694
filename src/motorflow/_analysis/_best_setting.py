"""Which value of a swept hyperparameter (a learning rate, RLS's alpha) is best.

Model selection on held-out data: each value is judged by the loss on the validation
trials, never by the training loss the optimiser itself lowered (Hastie, Tibshirani &
Friedman 2009, *The Elements of Statistical Learning*, sec. 7.2: the training error
is a biased estimate of the error on new data).
"""

from collections.abc import Hashable, Mapping

import numpy as np
import xarray as xr
from numpy.typing import ArrayLike


def final_validation_losses(history: xr.Dataset) -> np.ndarray:
    """Each replicate's total validation loss at the last validation step of `history`
    (a training's ``history.zarr``); NaN for a replicate that diverged (``diverged_at
    >= 0``), whose loss froze where it stopped."""
    final = history.validation_loss.sel(term="total").isel(validation_step=-1)
    final = np.asarray(final.transpose("replicate").values, dtype=np.float64)
    if "diverged_at" in history.variables:
        diverged = np.asarray(history.diverged_at.transpose("replicate").values) >= 0
        final = np.where(diverged, np.nan, final)
    return final


def best_setting(losses: Mapping[Hashable, ArrayLike]) -> Hashable:
    """The swept value whose replicates' mean final validation loss is lowest.

    **Arguments:**

    - `losses`: for each swept value, the per-replicate final validation losses (from
      `final_validation_losses`; NaN where a replicate diverged).

    A value with a diverged (or non-finite) replicate ranks after every value whose
    replicates all trained: a rate that sometimes diverges is not the best one, however
    low its surviving replicates go. Raises `ValueError` if `losses` is empty.
    """
    if not losses:
        raise ValueError("no swept values to choose from")

    def rank(value: Hashable) -> tuple[bool, float]:
        replicates = np.asarray(losses[value], dtype=np.float64)
        finite = replicates[np.isfinite(replicates)]
        mean = float(finite.mean()) if finite.size else np.inf
        return (finite.size < replicates.size, mean)

    return min(losses, key=rank)


def validation_loss_at_budget(
    history: xr.Dataset, seconds_per_batch: float, budget_s: float
) -> np.ndarray:
    """Each replicate's total validation loss at a wall-clock budget: at the last
    validation step reached within `budget_s` seconds of training, the time of
    validation step k (after k batches) taken as ``k * seconds_per_batch`` (the run
    record's median; the comparison figure's seconds axis). A rule too slow to reach
    even its first validation after a batch within the budget gets its loss at step 0
    (untrained). NaN for a diverged replicate, as `final_validation_losses`."""
    if not (seconds_per_batch > 0 and budget_s >= 0):
        raise ValueError(
            f"seconds_per_batch must be > 0 and budget_s >= 0, got {seconds_per_batch}, {budget_s}"
        )
    steps = np.asarray(history.validation_step.values)
    reached = steps[steps * seconds_per_batch <= budget_s * (1 + 1e-9)]
    step = reached.max() if reached.size else steps.min()
    loss = history.validation_loss.sel(term="total", validation_step=step)
    loss = np.asarray(loss.transpose("replicate").values, dtype=np.float64)
    if "diverged_at" in history.variables:
        diverged = np.asarray(history.diverged_at.transpose("replicate").values) >= 0
        loss = np.where(diverged, np.nan, loss)
    return loss
