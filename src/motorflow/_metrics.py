"""Per-trial reach metrics from evaluated states, and their per-replicate summary table."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import xarray as xr

# Dims that lead the metrics and the table, in this order; any other dims follow.
_LEADING_DIMS = ("replicate", "condition", "trial")
# A start and goal closer than this (m) give no reach direction to measure against.
_MIN_REACH_LENGTH = 1e-9

METRIC_UNITS = {
    "endpoint_error": "m",
    "final_speed": "m/s",
    "peak_speed": "m/s",
    "movement_time": "s",
    "max_lateral_deviation": "m",
    "initial_angle_error": "rad",
    "path_length_ratio": "1",
    "max_displacement": "m",
    "onset_time": "s",
    "reaction_time": "s",
}


def _ordered_dims(dims: Iterable[str]) -> list[str]:
    """`dims` with `_LEADING_DIMS` first, in their order, then the rest as given."""
    dims = list(dims)
    return [dim for dim in _LEADING_DIMS if dim in dims] + [
        dim for dim in dims if dim not in _LEADING_DIMS
    ]


def _norm(vector: xr.DataArray) -> xr.DataArray:
    """Euclidean length over `component`, NaN if any component is NaN."""
    return np.sqrt((vector**2).sum("component", skipna=False))


def _dot(first: xr.DataArray, second: xr.DataArray) -> xr.DataArray:
    """Dot product over `component`, NaN if any component is NaN."""
    return (first * second).sum("component", skipna=False)


def _cross(first: xr.DataArray, second: xr.DataArray) -> xr.DataArray:
    """Scalar (x, y) cross product: positive when `second` is counter-clockwise of `first`."""
    first_x, first_y = first.isel(component=0, drop=True), first.isel(component=1, drop=True)
    second_x, second_y = second.isel(component=0, drop=True), second.isel(component=1, drop=True)
    return first_x * second_y - first_y * second_x


def _at_first(values: xr.DataArray, reached: xr.DataArray) -> xr.DataArray:
    """`values` at the first time step where `reached` holds; NaN where it never does."""
    first = reached.argmax("time")
    return values.drop_vars("time", errors="ignore").isel(time=first).where(reached.any("time"))


def _movement_time(distance: xr.DataArray, time: xr.DataArray, goal_radius: float) -> xr.DataArray:
    """Earliest time from which `distance` stays within `goal_radius` until the end; else NaN."""
    within = (distance <= goal_radius).astype(np.int64)
    # A running product from the end is 1 exactly on the final stretch spent inside the radius.
    n_settled = within.isel(time=slice(None, None, -1)).cumprod("time").sum("time")
    n_steps = time.sizes["time"]
    first_settled = (n_steps - n_settled).clip(max=n_steps - 1)
    settle_time = time.drop_vars("time").isel(time=first_settled)
    return settle_time.where(n_settled > 0)


def _max_lateral_deviation(offset: xr.DataArray, direction: xr.DataArray) -> xr.DataArray:
    """Signed distance of `offset` from the line along unit `direction`, largest in magnitude.

    Positive to the left of `direction`; a tie between sides goes to the left.
    """
    lateral = _cross(direction, offset)
    most_left, most_right = lateral.max("time", skipna=False), lateral.min("time", skipna=False)
    return xr.where(most_left >= -most_right, most_left, most_right)


def _initial_angle_error(
    offset: xr.DataArray, direction: xr.DataArray, threshold: xr.DataArray
) -> xr.DataArray:
    """Signed angle (rad) from `direction` to `offset` where `offset` first reaches `threshold`.

    Counter-clockwise is positive, wrapped into (-pi, pi]; NaN if the threshold is never
    reached or any offset is NaN.
    """
    first_offset = _at_first(offset, _norm(offset) >= threshold)
    angle = np.arctan2(_cross(direction, first_offset), _dot(direction, first_offset))
    angle = xr.where(angle == -np.pi, np.pi, angle)
    return angle.where(offset.notnull().all(("time", "component")))


def _path_length(pos: xr.DataArray) -> xr.DataArray:
    """Sum of the step lengths of `pos` over `time`, NaN if any position is NaN."""
    return _norm(pos.diff("time")).sum("time", skipna=False)


def _onset_time(speed: xr.DataArray, time: xr.DataArray, onset_fraction: float) -> xr.DataArray:
    """First time `speed` reaches `onset_fraction` of its peak; NaN if the peak is 0 or NaN."""
    peak = speed.max("time", skipna=False)
    return _at_first(time, speed >= onset_fraction * peak.where(peak > 0))


def reach_metrics(
    states: xr.Dataset,
    *,
    goal_radius: float = 0.05,
    initial_fraction: float = 0.2,
    onset_fraction: float = 0.1,
) -> xr.Dataset:
    """How well each replicate reaches on each trial.

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

    - ``endpoint_error`` (m): distance from the goal at the last time step.
    - ``final_speed`` (m/s): speed at the last time step.
    - ``peak_speed`` (m/s): the highest speed over the trial.
    - ``movement_time`` (s): the earliest time from which the position stays within
      `goal_radius` of that step's goal until the end of the trial; NaN if it never
      settles.
    - ``max_lateral_deviation`` (m): the signed perpendicular distance of the path
      from the straight start-to-final-goal line, at the step where it is largest in
      magnitude; positive to the left of the reach direction, negative to the right.
    - ``initial_angle_error`` (rad): the signed angle from the start-to-final-goal
      direction to the displacement from the start at the first step where that
      displacement reaches `initial_fraction` of the start-to-goal distance;
      positive counter-clockwise, in (-pi, pi]; NaN if never reached.
    - ``path_length_ratio`` (1): length of the path travelled over the straight
      start-to-final-goal distance; 1 for a straight reach that stops at the goal.
    - ``max_displacement`` (m): the largest distance of the position from the start
      over the trial; in a posture trial, how far a perturbation pushes the hand.
    - ``onset_time`` (s): the first time at which the speed reaches
      `onset_fraction` of the trial's peak speed; NaN if the peak speed is 0.
    - ``reaction_time`` (s): ``onset_time`` minus ``go_time``; present only when
      `states` has a ``go_time`` coord.
    """
    for name, fraction in [
        ("initial_fraction", initial_fraction),
        ("onset_fraction", onset_fraction),
    ]:
        if not 0 < fraction <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {fraction}")
    pos, goal = states.pos, states.goal
    final_goal = goal.isel(time=-1, drop=True) if "time" in goal.dims else goal
    start = pos.isel(time=0, drop=True)
    offset = pos - start
    reach_length = _norm(final_goal - start)
    reach_length = reach_length.where(reach_length >= _MIN_REACH_LENGTH)
    direction = (final_goal - start) / reach_length
    distance = _norm(pos - goal)
    speed = _norm(states.vel)
    last = {"time": -1}
    onset_time = _onset_time(speed, states.time, onset_fraction)
    metrics = {
        "endpoint_error": distance.isel(last),
        "final_speed": speed.isel(last),
        "peak_speed": speed.max("time", skipna=False),
        "movement_time": _movement_time(distance, states.time, goal_radius),
        "max_lateral_deviation": _max_lateral_deviation(offset, direction),
        "initial_angle_error": _initial_angle_error(
            offset, direction, initial_fraction * reach_length
        ),
        "path_length_ratio": _path_length(pos) / reach_length,
        "max_displacement": _norm(offset).max("time", skipna=False),
        "onset_time": onset_time,
    }
    if "go_time" in states.coords:
        metrics["reaction_time"] = onset_time - states.go_time
    metrics = xr.Dataset(metrics).drop_vars("time", errors="ignore")
    for name in metrics.data_vars:
        metrics[name].attrs["units"] = METRIC_UNITS[name]
    metrics.attrs.update(
        goal_radius=goal_radius, initial_fraction=initial_fraction, onset_fraction=onset_fraction
    )
    return metrics.transpose(*_ordered_dims(metrics.dims))


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
