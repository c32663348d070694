"""The metric interface: a named, unit-carrying quantity of each evaluated trial, computed
from the reach's geometry (:class:`Reach`), which every metric shares."""

from __future__ import annotations

import abc
import dataclasses
import functools
from typing import ClassVar

import numpy as np
import xarray as xr

# A start and goal closer than this (m) give no reach direction to measure against.
MIN_REACH_LENGTH = 1e-9


def norm(vector: xr.DataArray) -> xr.DataArray:
    """Euclidean length over `component`, NaN if any component is NaN."""
    return np.sqrt((vector**2).sum("component", skipna=False))


def dot(first: xr.DataArray, second: xr.DataArray) -> xr.DataArray:
    """Dot product over `component`, NaN if any component is NaN."""
    return (first * second).sum("component", skipna=False)


def cross(first: xr.DataArray, second: xr.DataArray) -> xr.DataArray:
    """Scalar (x, y) cross product: positive when `second` is counter-clockwise of `first`."""
    first_x, first_y = first.isel(component=0, drop=True), first.isel(component=1, drop=True)
    second_x, second_y = second.isel(component=0, drop=True), second.isel(component=1, drop=True)
    return first_x * second_y - first_y * second_x


def at_first(values: xr.DataArray, reached: xr.DataArray) -> xr.DataArray:
    """`values` at the first time step where `reached` holds; NaN where it never does."""
    first = reached.argmax("time")
    return values.drop_vars("time", errors="ignore").isel(time=first).where(reached.any("time"))


@dataclasses.dataclass(frozen=True)
class Reach:
    """The geometry of every evaluated trial, which the metrics read.

    The reach runs from the start, ``pos`` at the first time step, to the final goal,
    ``goal`` at the last time step (a target jump may move it).
    """

    states: xr.Dataset
    goal_radius: float
    initial_fraction: float
    onset_fraction: float

    @functools.cached_property
    def pos(self) -> xr.DataArray:
        return self.states.pos

    @functools.cached_property
    def time(self) -> xr.DataArray:
        return self.states.time

    @functools.cached_property
    def final_goal(self) -> xr.DataArray:
        goal = self.states.goal
        return goal.isel(time=-1, drop=True) if "time" in goal.dims else goal

    @functools.cached_property
    def start(self) -> xr.DataArray:
        return self.pos.isel(time=0, drop=True)

    @functools.cached_property
    def offset(self) -> xr.DataArray:
        """The displacement from the start at every step."""
        return self.pos - self.start

    @functools.cached_property
    def reach_length(self) -> xr.DataArray:
        """Start-to-final-goal distance; NaN where it is too short to give a direction."""
        length = norm(self.final_goal - self.start)
        return length.where(length >= MIN_REACH_LENGTH)

    @functools.cached_property
    def direction(self) -> xr.DataArray:
        """The unit start-to-final-goal direction."""
        return (self.final_goal - self.start) / self.reach_length

    @functools.cached_property
    def distance(self) -> xr.DataArray:
        """The distance from that step's goal at every step."""
        return norm(self.pos - self.states.goal)

    @functools.cached_property
    def speed(self) -> xr.DataArray:
        return norm(self.states.vel)


class AbstractMetric(abc.ABC):
    """One per-trial metric: its name (the variable in the metrics store and the column
    in the tables), its SI unit (``1`` if dimensionless) and how it is computed."""

    KIND: ClassVar[str]
    UNITS: ClassVar[str]
    #: whether it is measured from the go cue (only trials of delayed reaches have it)
    NEEDS_GO_CUE: ClassVar[bool] = False

    @abc.abstractmethod
    def compute(self, reach: Reach) -> xr.DataArray | None:
        """The metric of each trial (the dims of ``pos`` but `time` and `component`), or
        None where the states do not have what it needs."""
        raise NotImplementedError
