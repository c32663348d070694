"""A chained protocol's figure: a metric along its stages (a learning curve)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ._style import (
    by_condition,
    suptitle,
)


def protocol_summary(
    metrics: dict[str, xr.Dataset], *, metric: str = "max_lateral_deviation"
) -> xr.DataArray:
    """A protocol's numbers: `metric` averaged over trials, dims `(stage, condition,
    replicate)`.

    **Arguments:**

    - `metrics`: stage (experiment) name to its `reach_metrics` Dataset, in order; the
      stages must share their conditions and replicate count.
    - `metric`: the per-trial metric.
    """
    per_stage = [
        by_condition(stage_metrics)[metric].mean("trial").reset_coords(drop=True)
        for stage_metrics in metrics.values()
    ]
    summary = xr.concat(per_stage, dim=xr.DataArray(list(metrics), dims="stage", name="stage"))
    summary.name = metric
    summary.attrs["units"] = per_stage[0].attrs.get("units", "")
    return summary.transpose("stage", "condition", "replicate")


def plot_protocol(summary: xr.DataArray, *, title: str = "") -> Figure:
    """A metric across the stages of a protocol, a panel per evaluation condition.

    Each replicate is a thin line through the stages; the mean across replicates is a
    thick line with markers. A dashed line marks zero (a straight reach has no
    lateral deviation; positive is to the left of the movement).

    **Arguments:**

    - `summary`: the DataArray from `protocol_summary`, dims `(stage, condition,
      replicate)`.
    - `title`: figure title.
    """
    conditions = list(summary.condition.values)
    stages = list(summary.stage.values)
    fig = Figure(figsize=(3.0 + 1.0 * len(stages), 3.0 * len(conditions)), layout="constrained")
    axes = fig.subplots(len(conditions), 1, squeeze=False, sharex=True)[:, 0]
    x = np.arange(len(stages))
    units = summary.attrs.get("units", "")
    for ax, condition in zip(axes, conditions):
        values = summary.sel(condition=condition).transpose("stage", "replicate").values
        ax.plot(x, values, color="0.6", lw=0.8, alpha=0.8)
        ax.plot(x, np.nanmean(values, axis=1), "o-", color="k", lw=2.2, ms=6, label="mean")
        ax.axhline(0.0, color="0.3", lw=0.8, ls="--")
        ax.set_title(f"evaluated in: {condition}" if condition else "", fontsize="medium")
        ax.set_ylabel(f"{summary.name} ({units})" if units else str(summary.name))
    axes[0].plot(
        [], [], color="0.6", lw=0.8, label=f"each of {summary.sizes['replicate']} replicates"
    )
    axes[0].legend(fontsize="small")
    axes[-1].set_xticks(x, stages)
    axes[-1].set_xlabel("stage (experiment)")
    suptitle(fig, title)
    return fig


