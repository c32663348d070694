"""A comparison of many experiments: each metric's experiment means in rank order.

Side by side (:func:`plot_comparison`), a column per experiment stops being readable
past a few dozen; a sweep of 1,000 would be 1,000 columns of 16 thousandths of an inch.
So past a few dozen experiments (motorflow.pipeline's `EACH_EXPERIMENT_UP_TO`) the
comparison draws each metric's means ranked, with their intervals, the first
experiment (every contrast's reference, then) marked and the extremes named: how the
experiments spread, and where the reference stands among them. Every number is in the
summary table, and a sweep's figure shows its experiments against their settings.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ._comparison import _metric_label, _shown_condition
from ._style import log_scale_if_possible, suptitle

_PANEL_SIZE = (4.8, 3.6)  # inches, per metric
_NAMED = "C3"  # the first experiment and the extremes
_MEAN_COLOR = "tab:blue"


def plot_ranked_comparison(
    summary: xr.Dataset,
    *,
    metrics: Sequence[str] = ("final_validation_loss", "endpoint_error", "max_lateral_deviation"),
    condition: str | None = None,
    title: str = "",
) -> Figure:
    """Each experiment's mean of each metric, ranked from lowest to highest, with its
    bootstrap interval; the first experiment circled and the lowest and highest named.

    **Arguments:**

    - `summary`: the Dataset from `summarise` (its means and intervals are drawn, so
      the figure and the summary table agree).
    - `metrics`: the metrics drawn, a panel each; those not in `summary` are skipped.
    - `condition`: the evaluation condition of metrics that have one; None (or one a
      metric lacks): the first condition that has the metric.
    - `title`: figure title.
    """
    names = [str(name) for name in summary.experiment.values]
    metrics = [metric for metric in metrics if metric in summary.metric.values]
    if not metrics:
        raise ValueError(f"none of the metrics is in the summary ({list(summary.metric.values)})")
    fig = Figure(figsize=(_PANEL_SIZE[0] * len(metrics), _PANEL_SIZE[1]), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    confidence = summary.attrs["confidence"]
    for ax, metric in zip(axes, metrics, strict=True):
        shown = _shown_condition(summary, metric, condition)
        cell = summary.sel(metric=metric, condition=shown)
        mean, low, high = (cell[v].values.astype(float) for v in ("mean", "ci_low", "ci_high"))
        # Lowest first; experiments without a finite mean (diverged, or without the
        # metric) are left out and counted in the axis label.
        finite = np.flatnonzero(np.isfinite(mean))
        order = finite[np.argsort(mean[finite], kind="stable")]
        ranks = np.arange(order.size)
        ax.vlines(ranks, low[order], high[order], color="0.75", lw=0.8,
                  label=f"{confidence:.0%} interval", gid="intervals")  # fmt: skip
        ax.plot(ranks, mean[order], ".", ms=3, color=_MEAN_COLOR, label="mean over replicates",
                gid="means")  # fmt: skip
        if 0 in order:
            at = int(np.flatnonzero(order == 0)[0])
            ax.plot(at, mean[0], "o", ms=7, mfc="none", color=_NAMED,
                    label=f"{names[0]} (first)", gid="first")  # fmt: skip
        for rank, align in ((0, "left"), (order.size - 1, "right")) if order.size else ():
            ax.annotate(names[order[rank]], (rank, mean[order[rank]]), xytext=(0, 8),
                        textcoords="offset points", ha=align, fontsize="x-small",
                        color=_NAMED, gid="extreme")  # fmt: skip
        left_out = len(names) - order.size
        ax.set_xlabel(
            f"{order.size} experiments ranked by mean"
            + (f"\n({left_out} without a finite mean left out)" if left_out else "")
        )
        ax.set_ylabel(_metric_label(summary, metric))
        ax.set_title(f"evaluated in: {shown}" if shown else "", fontsize="medium")
        if metric == "final_validation_loss":
            log_scale_if_possible(ax, mean[order])
        elif order.size and np.nanmin(low[order]) >= 0:
            ax.set_ylim(bottom=0)
    axes[0].legend(fontsize="small", loc="upper left")
    suptitle(fig, title)
    return fig
