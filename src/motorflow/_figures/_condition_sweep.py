"""The figure of a condition sweep: each metric against the setting that varies across
evaluation conditions (a stimulation's time, a lesion's size), a line per experiment."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ._style import axis_label, suptitle
from ._sweep import _mark

# Each experiment's replicates are spread over this fraction of the gap between x
# values, and the experiments side by side over `_EXPERIMENT_SPREAD`.
_REPLICATE_SPREAD = 0.08
_EXPERIMENT_SPREAD = 0.2


def _centred(n: int, width: float) -> np.ndarray:
    return np.linspace(-width / 2, width / 2, n) if n > 1 else np.zeros(n)


def plot_condition_sweep(
    sweep: xr.Dataset,
    *,
    x_label: str,
    marks: dict[str, float] | None = None,
    title: str = "",
) -> Figure:
    """A panel per metric of `sweep` (from `condition_sweep`): each experiment's mean
    over its replicates at each condition's x value, joined by a line, with its
    bootstrap interval as a vertical bar and each replicate as a small dot beside it.
    With a baseline, the values are differences from it and a grey line marks zero
    (no effect). `marks` draws a labelled dashed vertical line at each value (e.g. the
    go cue at 0)."""
    baseline = sweep.attrs.get("baseline", "")
    experiments = [str(name) for name in sweep.experiment.values]
    colors = mpl.colormaps["tab10"].colors
    metrics = [str(metric) for metric in sweep.metric.values]
    fig = Figure(figsize=(0.4 + 3.6 * len(metrics), 3.6), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    offsets = _centred(len(experiments), _EXPERIMENT_SPREAD)
    for ax, metric in zip(axes, metrics):
        cells = sweep.sel(metric=metric)
        for index, experiment in enumerate(experiments):
            one = cells.sel(experiment=experiment)
            x = one.x.values
            gap = float(np.diff(np.unique(x)).min()) if np.unique(x).size > 1 else 1.0
            color = colors[index % len(colors)]
            ax.plot(
                x, one["mean"].values, "o-", color=color, ms=4, lw=1.5, label=experiment, gid="mean"
            )
            ax.vlines(x, one.ci_low.values, one.ci_high.values, color=color, lw=1.2, gid="interval")
            values = one.value.values  # (condition, replicate)
            spread = offsets[index] + _centred(values.shape[1], _REPLICATE_SPREAD)
            ax.scatter(
                (x[:, None] + spread[None, :] * gap).ravel(),
                values.ravel(),
                s=7,
                color=color,
                alpha=0.45,
                zorder=1,
                gid="replicates",
            )
        if baseline:
            ax.axhline(0, color="0.5", lw=0.8, zorder=0, gid="no effect")
        _mark(ax, marks or {})
        name = metric.replace("_", " ")
        units = str(cells.units.values)
        ax.set_ylabel(axis_label(f"{name} − {baseline}" if baseline else name, units))
        ax.set_xlabel(x_label)
    handles = axes[0].get_legend_handles_labels()[0]
    line = mpl.lines.Line2D
    handles += [
        line([], [], marker="o", ms=3, ls="none", color="0.4", label="a replicate"),
        line(
            [],
            [],
            marker="|",
            ms=10,
            ls="none",
            color="0.4",
            label=f"{sweep.attrs['confidence']:.0%} bootstrap interval of the mean",
        ),
    ]
    fig.legend(
        handles=handles, loc="outside lower center", ncols=min(len(handles), 4), fontsize="small"
    )
    suptitle(fig, title)
    return fig
