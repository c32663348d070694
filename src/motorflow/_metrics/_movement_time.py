"""When the hand settles at the goal."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._base import AbstractMetric, Reach


class MovementTime(AbstractMetric):
    """The earliest time (s) from which the position stays within `goal_radius` of that
    step's goal until the end of the trial; NaN if it never settles."""

    KIND = "movement_time"
    UNITS = "s"

    def compute(self, reach: Reach) -> xr.DataArray:
        within = (reach.distance <= reach.goal_radius).astype(np.int64)
        # A running product from the end is 1 exactly on the final stretch spent inside
        # the radius.
        n_settled = within.isel(time=slice(None, None, -1)).cumprod("time").sum("time")
        n_steps = reach.time.sizes["time"]
        first_settled = (n_steps - n_settled).clip(max=n_steps - 1)
        settle_time = reach.time.drop_vars("time").isel(time=first_settled)
        return settle_time.where(n_settled > 0)
