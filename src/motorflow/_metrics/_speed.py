"""How fast the movement goes, and when it starts."""

from __future__ import annotations

import xarray as xr

from ._base import AbstractMetric, Reach, at_first


class PeakSpeed(AbstractMetric):
    """The highest speed (m/s) over the trial."""

    KIND = "peak_speed"
    UNITS = "m/s"

    def compute(self, reach: Reach) -> xr.DataArray:
        return reach.speed.max("time", skipna=False)


def onset_time(reach: Reach) -> xr.DataArray:
    """First time at which the speed reaches `onset_fraction` of the trial's peak speed;
    NaN if the peak is 0 or NaN."""
    peak = reach.speed.max("time", skipna=False)
    return at_first(reach.time, reach.speed >= reach.onset_fraction * peak.where(peak > 0))


class OnsetTime(AbstractMetric):
    """The first time (s) at which the speed reaches `onset_fraction` of the trial's peak
    speed; NaN if the peak speed is 0."""

    KIND = "onset_time"
    UNITS = "s"

    def compute(self, reach: Reach) -> xr.DataArray:
        return onset_time(reach)


class ReactionTime(AbstractMetric):
    """``onset_time`` minus the trial's ``go_time`` (s); only for states with a go cue."""

    KIND = "reaction_time"
    UNITS = "s"
    NEEDS_GO_CUE = True

    def compute(self, reach: Reach) -> xr.DataArray | None:
        if "go_time" not in reach.states.coords:
            return None
        return onset_time(reach) - reach.states.go_time
