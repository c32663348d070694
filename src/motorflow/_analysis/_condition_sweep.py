"""Metrics against a setting that varies across evaluation conditions: one experiment's
trained model evaluated under a series of interventions (a stimulation at successive
times, a lesion of growing size), each point its replicates' mean with a bootstrap
interval, optionally as the paired difference from a baseline condition."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr
from jaxtyping import PRNGKeyArray

from ._bootstrap import bootstrap_interval


def condition_sweep(
    values: Mapping[str, xr.Dataset],
    x: Mapping[str, Sequence[float]],
    *,
    conditions: Sequence[str],
    metrics: Sequence[str],
    key: PRNGKeyArray,
    baseline: str | None = None,
    n_resamples: int = 10000,
    confidence: float = 0.95,
) -> xr.Dataset:
    """Each experiment's `metrics` in each of `conditions`, over its replicates.

    With a `baseline` condition, a replicate's number is its value in the condition
    minus its own value in the baseline: every condition runs the same reaches with the
    same noise, so the difference is the intervention's effect alone (paired), and the
    interval is that of the mean difference.

    **Arguments:**

    - `values`: experiment name to its `replicate_values` (variables `(replicate,
      condition)`), in the figure's order.
    - `x`: experiment name to the x value of each of `conditions`, in order.
    - `conditions`: the conditions along the x axis.
    - `metrics`: the variables drawn, a panel each.
    - `key`: the bootstrap's `jax.random` key; each interval's resamples derive from it
      and the names of its experiment, metric and condition.
    - `baseline`: the condition subtracted (None: the values themselves).
    - `n_resamples`, `confidence`: as in `bootstrap_interval`.

    **Returns:**

    A Dataset with coords `experiment`, `metric`, `condition` and ``units (metric)``,
    and variables ``x (experiment, condition)``; ``value (experiment, metric, condition,
    replicate)`` (NaN beyond an experiment's replicates); ``mean``, ``ci_low``,
    ``ci_high`` and ``n`` `(experiment, metric, condition)`, over the finite replicates.
    Its ``baseline`` attribute names the baseline (``""``: none). Raises `ValueError`
    if an experiment lacks a metric or condition, or `x` has the wrong length.
    """
    per_experiment = []
    for name, dataset in values.items():
        points = list(x[name])
        if len(points) != len(conditions):
            raise ValueError(f"{name}: {len(points)} x values for {len(conditions)} conditions")
        missing = [m for m in metrics if m not in dataset] + [
            c
            for c in [*conditions, *([baseline] if baseline else [])]
            if c not in dataset.condition.values
        ]
        if missing:
            raise ValueError(f"{name} has no {', '.join(map(repr, missing))}")
        chosen = dataset[list(metrics)].to_dataarray("metric")
        value = chosen.sel(condition=list(conditions))
        if baseline:
            value = value - chosen.sel(condition=baseline, drop=True)
        value = value.drop_vars([v for v in value.coords if v not in value.dims])
        per_experiment.append(value.assign_coords(replicate=np.arange(value.sizes["replicate"])))
    value = xr.concat(per_experiment, pd.Index(list(values), name="experiment"), join="outer")
    value = value.transpose("experiment", "metric", "condition", "replicate")
    estimates = np.full(value.shape[:3] + (4,), np.nan)
    for (i, experiment), (j, metric), (k, condition) in _cells(value):
        finite = value.values[i, j, k][np.isfinite(value.values[i, j, k])]
        low, high = bootstrap_interval(
            finite,
            key=key,
            n_resamples=n_resamples,
            confidence=confidence,
            path=(experiment, metric, condition),
        )
        estimates[i, j, k] = (finite.mean() if finite.size else np.nan, low, high, finite.size)
    units = [_units(values, metric) for metric in metrics]
    cell = value.isel(replicate=0, drop=True)  # the layout of a per-cell estimate
    sweep = xr.Dataset(
        {
            "value": value,
            "mean": cell.copy(data=estimates[..., 0]),
            "ci_low": cell.copy(data=estimates[..., 1]),
            "ci_high": cell.copy(data=estimates[..., 2]),
            "n": cell.copy(data=estimates[..., 3].astype(np.int64)),
            "x": (("experiment", "condition"), np.array([list(x[n]) for n in values], float)),
        }
    ).assign_coords(units=("metric", units))
    sweep.attrs = {"baseline": baseline or "", "confidence": confidence}
    return sweep


def _cells(value: xr.DataArray):
    """((index, name), ...) of every experiment, metric and condition of `value`."""
    names = [list(value[dim].values) for dim in ("experiment", "metric", "condition")]
    for i, experiment in enumerate(names[0]):
        for j, metric in enumerate(names[1]):
            for k, condition in enumerate(names[2]):
                yield (i, str(experiment)), (j, str(metric)), (k, str(condition))


def _units(values: Mapping[str, xr.Dataset], metric: str) -> str:
    return next(iter(values.values()))[metric].attrs.get("units", "")


def condition_sweep_table(sweep: xr.Dataset) -> pd.DataFrame:
    """A row per experiment, condition and metric: the x value, mean, interval, finite
    replicate count, units and the baseline subtracted (empty: none)."""
    numbers = sweep[["mean", "ci_low", "ci_high", "n"]].reset_coords("units", drop=True)
    table = numbers.to_dataframe().reset_index()
    table = table.merge(sweep.x.to_dataframe().reset_index(), on=["experiment", "condition"])
    table["units"] = table.metric.map(dict(zip(sweep.metric.values, sweep.units.values)))
    table["baseline"] = sweep.attrs["baseline"]
    return table[
        [
            "experiment",
            "condition",
            "x",
            "metric",
            "mean",
            "ci_low",
            "ci_high",
            "n",
            "units",
            "baseline",
        ]
    ]
