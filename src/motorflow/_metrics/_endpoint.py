"""Where and how fast the trial ends."""

from __future__ import annotations

import xarray as xr

from ._base import AbstractMetric, Reach


class EndpointError(AbstractMetric):
    """Distance (m) from the goal at the last time step."""

    KIND = "endpoint_error"
    UNITS = "m"

    def compute(self, reach: Reach) -> xr.DataArray:
        return reach.distance.isel(time=-1)


class FinalSpeed(AbstractMetric):
    """Speed (m/s) at the last time step."""

    KIND = "final_speed"
    UNITS = "m/s"

    def compute(self, reach: Reach) -> xr.DataArray:
        return reach.speed.isel(time=-1)
