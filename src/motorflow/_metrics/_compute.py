"""Per-trial reach metrics from evaluated states, and their per-replicate summary table."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import xarray as xr

from ._base import AbstractMetric, Reach

# Dims that lead the metrics and the table, in this order; any other dims follow.
_LEADING_DIMS = ("replicate", "condition", "trial")


def _ordered_dims(dims: Iterable[str]) -> list[str]:
    """`dims` with `_LEADING_DIMS` first, in their order, then the rest as given."""
    dims = list(dims)
    return [dim for dim in _LEADING_DIMS if dim in dims] + [
        dim for dim in dims if dim not in _LEADING_DIMS
    ]


def compute_metrics(
    states: xr.Dataset,
    metrics: Iterable[AbstractMetric],
    *,
    goal_radius: float = 0.05,
    initial_fraction: float = 0.2,
    onset_fraction: float = 0.1,
) -> xr.Dataset:
    """How well each replicate reaches on each trial, by each of `metrics`.

    The reach runs from the start, ``pos`` at the first time step, to the final goal,
    ``goal`` at the last time step. Signed quantities follow the usual (x, y)
    convention: positive is counter-clockwise of, i.e. to the left of, the
    start-to-goal direction.

    **Arguments:**

    - `states`: the Dataset from `evaluate`, with ``pos`` and ``vel``
      `(replicate, [condition,] trial, time, component)`, ``goal`` either
      `([condition,] trial, time, component)` (the target at each step, which a
      target jump may move) or `(trial, component)`, a ``time`` coord in seconds and
      optionally a ``go_time`` coord (s) along `trial` or `(condition, trial)`. Any
      other dims are carried through.
    - `goal_radius`: distance (m) from the goal that counts as arrived.
    - `initial_fraction`: the fraction of the start-to-goal distance at which the
      initial direction of the movement is measured, in (0, 1].
    - `onset_fraction`: the fraction of the trial's peak speed that marks movement
      onset, in (0, 1].

    **Returns:**

    A Dataset with the dims of ``pos`` except `time` and `component`, led by
    `(replicate, [condition,] trial)`, that keeps the trial and condition coords and
    records `goal_radius`, `initial_fraction` and `onset_fraction` in its attributes.
    Each variable has a ``units`` attribute; a trial with NaN positions or
    velocities gives NaN, and the three geometric metrics are NaN when start and
    final goal coincide.

    :func:`reach_metrics` computes those of `METRICS`, in its order (each class
    documents its own):
    endpoint error, final speed, peak speed, movement time, maximum lateral deviation,
    initial angle error, path length ratio, maximum displacement, onset time and, only
    when `states` has a ``go_time`` coord, reaction time.
    """
    for name, fraction in [
        ("initial_fraction", initial_fraction),
        ("onset_fraction", onset_fraction),
    ]:
        if not 0 < fraction <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {fraction}")
    reach = Reach(states, goal_radius, initial_fraction, onset_fraction)
    values = {}
    for metric in metrics:
        value = metric.compute(reach)
        if value is not None:
            values[metric.KIND] = value
    dataset = xr.Dataset(values).drop_vars("time", errors="ignore")
    units = {metric.KIND: metric.UNITS for metric in metrics}
    for name in dataset.data_vars:
        dataset[name].attrs["units"] = units[name]
    dataset.attrs.update(
        goal_radius=goal_radius, initial_fraction=initial_fraction, onset_fraction=onset_fraction
    )
    return dataset.transpose(*_ordered_dims(dataset.dims))


def metrics_table(metrics: xr.Dataset) -> pd.DataFrame:
    """One row per replicate (and condition) with each metric averaged over trials, ready for CSV.

    A trial whose metric is NaN (e.g. ``movement_time`` of a reach that never
    settled) is left out of that metric's mean.

    **Arguments:**

    - `metrics`: the Dataset from `reach_metrics`, dims `(replicate, [condition,] trial)`.

    **Returns:**

    A DataFrame with a ``replicate`` column, a ``condition`` column when `metrics`
    has that dim, and one column per metric variable, in the order of `metrics`.
    Rows run over conditions within each replicate.
    """
    means = metrics.mean("trial", keep_attrs=False).reset_coords(drop=True)
    row_dims = _ordered_dims(means.dims)
    table = means.to_dataframe(dim_order=row_dims).reset_index()
    return table[[*row_dims, *metrics.data_vars]]
