"""The shape of the path: how far it strays from the straight reach, and how long it is."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._base import AbstractMetric, Reach, at_first, cross, dot, norm


class MaxLateralDeviation(AbstractMetric):
    """The signed perpendicular distance (m) of the path from the straight
    start-to-final-goal line, at the step where it is largest in magnitude; positive to
    the left of the reach direction, negative to the right (a tie goes to the left)."""

    KIND = "max_lateral_deviation"
    UNITS = "m"

    def compute(self, reach: Reach) -> xr.DataArray:
        lateral = cross(reach.direction, reach.offset)
        most_left = lateral.max("time", skipna=False)
        most_right = lateral.min("time", skipna=False)
        return xr.where(most_left >= -most_right, most_left, most_right)


class MaxLateralDistance(AbstractMetric):
    """The largest perpendicular distance (m) of the path from the straight
    start-to-final-goal line, either side: the size of `max_lateral_deviation`. A field
    that pushes some reaches left and others right (Shadmehr & Mussa-Ivaldi 1994's B)
    averages the signed deviation out over directions; this does not."""

    KIND = "max_lateral_distance"
    UNITS = "m"

    def compute(self, reach: Reach) -> xr.DataArray:
        return np.abs(cross(reach.direction, reach.offset)).max("time", skipna=False)


class InitialAngleError(AbstractMetric):
    """The signed angle (rad) from the start-to-final-goal direction to the displacement
    at the first step where it reaches `initial_fraction` of the start-to-goal distance;
    counter-clockwise positive, in (-pi, pi]; NaN if never reached or any offset is NaN."""

    KIND = "initial_angle_error"
    UNITS = "rad"

    def compute(self, reach: Reach) -> xr.DataArray:
        offset, direction = reach.offset, reach.direction
        threshold = reach.initial_fraction * reach.reach_length
        first_offset = at_first(offset, norm(offset) >= threshold)
        angle = np.arctan2(cross(direction, first_offset), dot(direction, first_offset))
        angle = xr.where(angle == -np.pi, np.pi, angle)
        return angle.where(offset.notnull().all(("time", "component")))


class PathLengthRatio(AbstractMetric):
    """The length of the path travelled over the straight start-to-final-goal distance
    (1 for a straight reach that stops at the goal); NaN if any position is NaN."""

    KIND = "path_length_ratio"
    UNITS = "1"

    def compute(self, reach: Reach) -> xr.DataArray:
        path_length = norm(reach.pos.diff("time")).sum("time", skipna=False)
        return path_length / reach.reach_length


class MaxDisplacement(AbstractMetric):
    """The largest distance (m) of the position from the start over the trial; in a
    posture trial, how far a perturbation pushes the hand."""

    KIND = "max_displacement"
    UNITS = "m"

    def compute(self, reach: Reach) -> xr.DataArray:
        return norm(reach.offset).max("time", skipna=False)


class DisplacementBeforeGo(AbstractMetric):
    """The largest distance (m) of the position from the start before the go cue (the
    steps whose time is below the trial's ``go_time``): how far the hand moves while it
    should hold, e.g. under a stimulation during the delay; only for states with a go
    cue."""

    KIND = "displacement_before_go"
    UNITS = "m"
    NEEDS_GO_CUE = True

    def compute(self, reach: Reach) -> xr.DataArray | None:
        if "go_time" not in reach.states.coords:
            return None
        holding = reach.time < reach.states.go_time
        return norm(reach.offset).where(holding, 0.0).max("time", skipna=False)
