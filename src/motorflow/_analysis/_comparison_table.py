"""The rows of a comparison's table (``figures/comparison-<name>.csv``): a statistic of
one experiment and evaluation condition, each replicate's value and their mean with its
percentile bootstrap interval across replicates."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

if TYPE_CHECKING:
    from jaxtyping import PRNGKeyArray

COLUMNS = ("experiment", "condition", "statistic", "units", "mean", "low", "high")


def each_condition(analysis: xr.Dataset) -> Iterator[tuple[str, xr.Dataset]]:
    """An analysis store's evaluation conditions, each with its slice (one unnamed
    condition, ``""``, for a store without the dimension)."""
    if "condition" not in analysis.dims:
        yield "", analysis
        return
    for condition in analysis.condition.values:
        yield condition, analysis.sel(condition=condition)


def replicate_row(experiment: str, condition: str, statistic: str, units: str, values) -> dict:
    """The row's labels and each replicate's value (``replicate_<k>``)."""
    return {
        "experiment": experiment,
        "condition": str(condition),
        "statistic": statistic,
        "units": units,
        **{f"replicate_{index}": float(value) for index, value in enumerate(values)},
    }


def interval_row(
    experiment: str,
    condition: str,
    statistic: str,
    units: str,
    values: np.ndarray,
    *,
    key: PRNGKeyArray,
    n_resamples: int,
    confidence: float,
) -> dict:
    """:func:`replicate_row` with the replicates' mean and its interval
    (`bootstrap_interval`, resamples keyed by `key` and the experiment, condition and
    statistic names; NaN values, such as a diverged replicate's, are left out)."""
    from ._bootstrap import bootstrap_interval  # JAX, only where an interval is drawn

    low, high = bootstrap_interval(
        values,
        key=key,
        n_resamples=n_resamples,
        confidence=confidence,
        path=(experiment, str(condition), statistic),
    )
    finite = values[np.isfinite(values)]
    mean = float(finite.mean()) if finite.size else np.nan
    return replicate_row(experiment, condition, statistic, units, values) | {
        "mean": mean,
        "low": low,
        "high": high,
    }


def comparison_table(rows: list[dict], *, confidence: float, extra: tuple[str, ...] = ()):
    """The rows as a table: the label and interval columns, the `extra` ones, then the
    replicates' in order; `confidence` kept in its attributes."""
    table = pd.DataFrame(rows)
    replicates = sorted(
        (column for column in table.columns if column.startswith("replicate_")),
        key=lambda column: int(column.removeprefix("replicate_")),
    )
    table.attrs["confidence"] = confidence
    return table[[*COLUMNS, *extra, *replicates]]
