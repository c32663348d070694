"""Reach metrics: named, unit-carrying quantities of each evaluated trial.

Each metric is an :class:`AbstractMetric` (its name, its unit and how it is computed
from the trial's :class:`Reach` geometry); `METRICS` registers them by kind, in the
order of the metrics store and tables, and the config's metric choices (sweeps,
protocols, summary) read it. Adding a metric is its class (in the module of its
quantity, or its own), its entry in `METRICS` and its tests (config/README.md's
tables list the metric choices from it: ``python -m motorflow docs``).
"""

from __future__ import annotations

from collections.abc import Iterable

import xarray as xr

from .._config_base import registry
from ._base import AbstractMetric, Reach
from ._compute import compute_metrics, metrics_table
from ._endpoint import EndpointError, FinalSpeed
from ._movement_time import MovementTime
from ._path import (
    DisplacementBeforeGo,
    InitialAngleError,
    MaxDisplacement,
    MaxLateralDeviation,
    MaxLateralDistance,
    PathLengthRatio,
)
from ._speed import OnsetTime, PeakSpeed, ReactionTime
from ._speed_peaks import SpeedPeaks

METRICS: dict[str, type[AbstractMetric]] = registry(
    EndpointError,
    FinalSpeed,
    PeakSpeed,
    MovementTime,
    MaxLateralDeviation,
    MaxLateralDistance,
    InitialAngleError,
    PathLengthRatio,
    MaxDisplacement,
    OnsetTime,
    ReactionTime,
    DisplacementBeforeGo,
    SpeedPeaks,
)
"""Every reach metric's name (its variable in `metrics.zarr`) to its class."""

# Each metric's unit, by name.
METRIC_UNITS = {name: metric.UNITS for name, metric in METRICS.items()}


def reach_metrics(
    states: xr.Dataset,
    *,
    goal_radius: float = 0.05,
    initial_fraction: float = 0.2,
    onset_fraction: float = 0.1,
    metrics: Iterable[str] | None = None,
) -> xr.Dataset:
    """Every metric of `METRICS` (or those named in `metrics`) of each trial of `states`;
    see :func:`compute_metrics`."""
    chosen = [METRICS[name]() for name in (METRICS if metrics is None else metrics)]
    return compute_metrics(
        states,
        chosen,
        goal_radius=goal_radius,
        initial_fraction=initial_fraction,
        onset_fraction=onset_fraction,
    )


__all__ = [
    "METRICS",
    "METRIC_UNITS",
    "AbstractMetric",
    "DisplacementBeforeGo",
    "EndpointError",
    "FinalSpeed",
    "InitialAngleError",
    "MaxDisplacement",
    "MaxLateralDeviation",
    "MaxLateralDistance",
    "MovementTime",
    "OnsetTime",
    "PathLengthRatio",
    "PeakSpeed",
    "Reach",
    "ReactionTime",
    "compute_metrics",
    "metrics_table",
    "reach_metrics",
]
