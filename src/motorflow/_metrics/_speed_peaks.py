"""How many speed peaks a reach has: its submovements."""

from __future__ import annotations

import xarray as xr

from ._base import AbstractMetric, Reach


class SpeedPeaks(AbstractMetric):
    """The number of peaks of the speed profile: steps where the speed rises into a
    maximum (higher than the step before, at least the step after) of at least
    `onset_fraction` of the trial's peak speed; a peak at the trial's first or last step
    is not counted. A smooth reach has one, a reach corrected by submovements more.
    NaN where the speed is NaN anywhere.

    The peaks metric of Rohrer et al. (2002), "Movement smoothness changes during
    stroke recovery", J Neurosci 22(18):8297-8304, one of their five smoothness
    measures; the threshold here is the onset's, which keeps noise ripples at rest out.
    """

    KIND = "speed_peaks"
    UNITS = "1"

    def compute(self, reach: Reach) -> xr.DataArray:
        speed = reach.speed
        threshold = reach.onset_fraction * speed.max("time", skipna=False)
        before, after = speed.shift(time=1), speed.shift(time=-1)
        peaks = (speed > before) & (speed >= after) & (speed >= threshold)
        counted = peaks.sum("time").astype(float)
        return counted.where(speed.notnull().all("time"))
