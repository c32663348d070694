"""One experiment's numbers per replicate (its final validation loss and each reach
metric averaged over trials): the input of the summary's statistics and of the
comparison and sweep figures, which draw them without loading JAX."""

from __future__ import annotations

import xarray as xr

from .._metrics import METRIC_UNITS

FINAL_LOSS = "final_validation_loss"
# The condition of a number measured once per replicate, not per evaluation condition.
NO_CONDITION = ""


def replicate_values(history: xr.Dataset, metrics: xr.Dataset) -> xr.Dataset:
    """One experiment's numbers per replicate, the input of `summarise`.

    A replicate that diverged in training (``diverged_at >= 0`` in `history`) is NaN
    in every variable: `metrics` is already NaN there, and its frozen validation loss
    would otherwise count in one number but not the others.

    **Arguments:**

    - `history`: the Dataset from `history_dataset`, with ``validation_loss`` `(term,
      validation_step, replicate)`.
    - `metrics`: the Dataset from `reach_metrics` for the same replicates, dims
      `(replicate, [condition,] trial)`.

    **Returns:**

    A Dataset with ``final_validation_loss (replicate)``, the ``total`` validation loss
    at the last validation step (recorded in the attribute ``validation_step``), and
    each reach metric averaged over trials, `(replicate, condition)` (a trial whose
    metric is NaN is left out of the mean, as in `metrics_table`; metrics without
    conditions get the single condition ``""``), with its ``units`` attribute. Raises
    `ValueError` if the replicates of `history` and `metrics` differ.
    """
    final = history.validation_loss.sel(term="total").isel(validation_step=-1)
    validation_step = int(final.validation_step)
    final = final.reset_coords(drop=True)
    if "diverged_at" in history.variables:
        final = final.where(history.diverged_at.reset_coords(drop=True) < 0)
    final.attrs = {
        "description": f"total validation loss after {validation_step} batches",
        # a weighted sum of terms in different units: arbitrary units
        "units": "a.u.",
    }
    if "condition" not in metrics.dims:
        metrics = metrics.expand_dims(condition=[NO_CONDITION])
    averaged = metrics.mean("trial", keep_attrs=True).reset_coords(drop=True)
    averaged = averaged.transpose("replicate", "condition", ...)
    # Replicates must match one to one; an outer join would silently pad with NaN.
    final, averaged = xr.align(final, averaged, join="exact")
    # A store read back lists its variables in no fixed order: put them in the metrics'
    # own, so the summary's `metric` coord is the same however the stores were read.
    order = {name: index for index, name in enumerate(METRIC_UNITS)}
    names = sorted(averaged.data_vars, key=lambda name: (order.get(name, len(order)), name))
    values = xr.Dataset({FINAL_LOSS: final}).merge(averaged[names])
    if "diverged_at" in history.variables:
        values = values.assign_coords(diverged_at=history.diverged_at.reset_coords(drop=True))
    values.attrs = {"validation_step": validation_step}
    return values
