"""Per-trial reach metrics from evaluated states, and their per-replicate summary table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr


def _norm(vector: xr.DataArray) -> xr.DataArray:
    """Euclidean length over `component`, NaN if any component is NaN."""
    return np.sqrt((vector**2).sum("component", skipna=False))


def _movement_time(distance: xr.DataArray, time: xr.DataArray, goal_radius: float) -> xr.DataArray:
    """Earliest time from which `distance` stays within `goal_radius` until the end; else NaN."""
    within = (distance <= goal_radius).astype(np.int64)
    # A running product from the end is 1 exactly on the final stretch spent inside the radius.
    n_settled = within.isel(time=slice(None, None, -1)).cumprod("time").sum("time")
    n_steps = time.sizes["time"]
    first_settled = (n_steps - n_settled).clip(max=n_steps - 1)
    settle_time = time.drop_vars("time").isel(time=first_settled)
    return settle_time.where(n_settled > 0)


def reach_metrics(states: xr.Dataset, *, goal_radius: float = 0.05) -> xr.Dataset:
    """How well each replicate reaches on each trial.

    **Arguments:**

    - `states`: the Dataset from `evaluate`, with ``pos`` and ``vel``
      `(replicate, trial, time, component)`, ``goal`` `(trial, component)` and a
      ``time`` coord in seconds.
    - `goal_radius`: distance from the goal that counts as arrived.

    **Returns:**

    A Dataset with dims `(replicate, trial)` that keeps the trial coords
    (``goal_angle``, ``goal_distance``) and records `goal_radius` in its attributes:

    - ``endpoint_error``: distance from the goal at the last time step.
    - ``final_speed``: speed at the last time step.
    - ``peak_speed``: the highest speed over the trial.
    - ``movement_time``: the earliest time (s) from which the position stays within
      `goal_radius` of the goal until the end of the trial; NaN if it never settles.
    """
    distance = _norm(states.pos - states.goal)
    speed = _norm(states.vel)
    last = {"time": -1}
    metrics = xr.Dataset(
        {
            "endpoint_error": distance.isel(last),
            "final_speed": speed.isel(last),
            "peak_speed": speed.max("time", skipna=False),
            "movement_time": _movement_time(distance, states.time, goal_radius),
        }
    ).drop_vars("time", errors="ignore")
    units = {"endpoint_error": "m", "final_speed": "m/s", "peak_speed": "m/s", "movement_time": "s"}
    for name, unit in units.items():
        metrics[name].attrs["units"] = unit
    metrics.attrs["goal_radius"] = goal_radius
    return metrics.transpose("replicate", "trial")


def metrics_table(metrics: xr.Dataset) -> pd.DataFrame:
    """One row per replicate with each metric averaged over trials, ready for CSV.

    A trial whose metric is NaN (e.g. ``movement_time`` of a reach that never
    settled) is left out of that metric's mean.

    **Arguments:**

    - `metrics`: the Dataset from `reach_metrics`, dims `(replicate, trial)`.

    **Returns:**

    A DataFrame with a ``replicate`` column and one column per metric variable.
    """
    means = metrics.mean("trial", keep_attrs=False)
    table = means.reset_coords(drop=True).to_dataframe().reset_index()
    return table[["replicate", *metrics.data_vars]]
