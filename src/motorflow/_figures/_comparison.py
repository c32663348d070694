"""The cross-experiment comparison figure: each replicate, the mean with its bootstrap
interval, paired replicates joined, each experiment's difference to the first, and
the training curves side by side (their panels in `_comparison_curves`, the grid in
`_comparison_layout`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ._comparison_curves import draw_alignment, draw_curves
from ._comparison_layout import (
    experiment_ticks,
    legend_columns,
    metric_width,
    tick_label_room,
    wrapped_grid,
)
from ._style import axis_label, log_scale_if_possible, suptitle

REPLICATE_COLOR = "tab:blue"
PAIRING_COLOR = "0.6"
_REPLICATE_SPREAD = 0.12  # half the width of a column's dots, in experiments
_INTERVAL_OFFSET = 0.22  # the interval stands right of the dots, never over them
_CURVE_WIDTH = 4.0  # inches: a curves panel without its legend
_LEGEND_WIDTH = 1.7  # inches per column of a legend beside a panel


def _replicate_offsets(n: int) -> np.ndarray:
    # Evenly spread, not random, so that a figure redraws identically and replicate r sits
    # at the same offset in every column, which the lines joining paired replicates need.
    return np.linspace(-_REPLICATE_SPREAD, _REPLICATE_SPREAD, n) if n > 1 else np.zeros(n)


def _replicate_column(values: xr.Dataset, metric: str, condition: str) -> np.ndarray:
    """One experiment's values of `metric` over its replicates (empty if it has none)."""
    if metric not in values:
        return np.empty(0)
    variable = values[metric]
    if "condition" in variable.dims:
        if condition not in variable.condition.values:
            return np.empty(0)
        variable = variable.sel(condition=condition)
    return np.asarray(variable.values, dtype=float).ravel()


def _shown_condition(summary: xr.Dataset, metric: str, condition: str | None) -> str:
    """`condition` if some experiment has `metric` there, else the first condition that
    has it (``""`` for a metric without conditions)."""
    defined = summary.defined.sel(metric=metric).any("experiment")
    candidates = [str(c) for c, has in zip(summary.condition.values, defined.values) if has]
    return condition if condition in candidates else candidates[0]


def _metric_label(summary: xr.Dataset, metric: str) -> str:
    if metric == "final_validation_loss":
        return "final validation loss, total (a.u.)"
    units = str(summary.units.sel(metric=metric).item()) if "units" in summary.coords else ""
    return axis_label(metric, units)


def _draw_estimate(
    ax: Axes, x: float, replicates: np.ndarray, estimate: float, low: float, high: float
) -> None:
    """Dots for the replicates, a bar at the mean and the interval beside them."""
    if replicates.size:
        ax.scatter(
            x + _replicate_offsets(replicates.size),
            replicates,
            s=18,
            color=REPLICATE_COLOR,
            alpha=0.8,
            zorder=2,
            gid="replicates",
        )
    if np.isfinite(estimate):
        ax.hlines(estimate, x - 0.28, x + 0.28, color="k", lw=2, zorder=3, gid="mean")
    if np.isfinite(low) and np.isfinite(high):
        at, cap = x + _INTERVAL_OFFSET, 0.04
        segments = [[(at, low), (at, high)], [(at - cap, low), (at + cap, low)]]
        segments.append([(at - cap, high), (at + cap, high)])
        ax.add_collection(
            mpl.collections.LineCollection(segments, colors="k", lw=1.2, zorder=3, gid="interval")
        )


def _join_pairs(ax: Axes, x: float, left: np.ndarray, right: np.ndarray) -> None:
    """Thin lines from each replicate at `x` to the same replicate at `x + 1`."""
    offsets = _replicate_offsets(left.size)
    segments = [
        [(x + offset, a), (x + 1 + offset, b)]
        for offset, a, b in zip(offsets, left, right)
        if np.isfinite(a) and np.isfinite(b)
    ]
    ax.add_collection(
        mpl.collections.LineCollection(
            segments, colors=PAIRING_COLOR, lw=0.7, zorder=1, gid="pairing"
        )
    )


def _comparison_legend(fig: Figure, confidence: float, *, paired: bool, contrasts: bool) -> None:
    line = mpl.lines.Line2D
    handles = [
        line([], [], marker="o", ls="none", color=REPLICATE_COLOR, alpha=0.8, label="a replicate"),
        line([], [], color="k", lw=2, label="mean of the replicates"),
        line(
            [],
            [],
            marker="|",
            ms=10,
            mew=1.2,
            ls="none",
            color="k",
            label=f"{confidence:.0%} bootstrap interval",
        ),
    ]
    if paired:
        handles.append(line([], [], color=PAIRING_COLOR, lw=0.7, label="same replicate (paired)"))
    if contrasts:
        handles.append(line([], [], color="0.3", lw=0.8, ls="--", label="no difference"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize="small")


def _differs_from_bptt(cosine: xr.DataArray) -> bool:
    """Whether a gradient alignment `cosine` is anything but 1 (or missing) somewhere."""
    return bool((cosine.notnull() & (cosine != 1.0)).any())


def plot_comparison(
    values: dict[str, xr.Dataset],
    summary: xr.Dataset,
    *,
    metrics: Sequence[str] = ("final_validation_loss", "endpoint_error", "max_lateral_deviation"),
    condition: str | None = None,
    curves: Mapping[str, xr.DataArray] | None = None,
    alignment: Mapping[str, xr.DataArray] | None = None,
    trials_per_batch: Mapping[str, float] | None = None,
    seconds_per_batch: Mapping[str, float] | None = None,
    title: str = "",
) -> Figure:
    """Experiments side by side: a column per metric; on top each experiment's
    replicates, mean and interval, below each experiment's difference to the first.

    Each replicate is a dot (spread sideways so that none hide each other), the mean
    across replicates a horizontal bar and its bootstrap interval a capped vertical
    line beside it. Where two adjacent experiments are paired (`pairing`: a shared seed
    or ancestor, and as many replicates), lines join each replicate to itself. The
    second row (with two or more experiments) shows each experiment minus the first:
    the per-replicate differences as dots and their mean when paired, else the
    difference of the means; the tick says which, and a dashed line marks zero. Every
    mean, interval and pairing is read from `summary`, so the figure and the summary
    table agree.

    **Arguments:**

    - `values`: experiment name to its `replicate_values` (variables with dim
      `replicate` and optionally `condition`); drawn left to right in the dict's order.
    - `summary`: the Dataset from `summarise` over the same `values`, in the same order.
    - `metrics`: the metrics drawn, a column each; those not in `summary` are skipped.
    - `condition`: the evaluation condition of metrics that have one; None (or one
      that a metric lacks): the first condition that has the metric.
    - `curves`: each experiment's total validation loss `(validation_step, replicate)`;
      if given, a last column shows them against batch (its lower cell stays empty).
    - `alignment`: each experiment's gradient alignment `(group, validation_step,
      replicate)` (the history's ``gradient_alignment``), keyed like `values` (an
      experiment without it, or whose alignment is 1 wherever recorded (BPTT's), left
      out; colours match the curves' when `curves` has the same experiments); drawn
      below the curves, or in a column of its own.
    - `trials_per_batch`, `seconds_per_batch`: per experiment (those without are left
      out), with `curves`: a column each draws the curves against the trials trained
      and against the training's seconds (batches times the run's median seconds per
      batch after compilation), for a comparison at the same budget.
    - `title`: figure title.
    """
    names = list(values)
    reference = names[0]
    metrics = [metric for metric in metrics if metric in summary.metric.values]
    if not metrics:
        raise ValueError(f"none of the metrics is in the summary ({list(summary.metric.values)})")
    contrasts = len(names) > 1
    paired = summary.paired.sel(experiment=names, reference=names).values
    adjacent_paired = [bool(paired[index + 1, index]) for index in range(len(names) - 1)]
    n_rows = 2 if contrasts else 1
    # Only where a rule's update differs from the BPTT gradient: a line at 1 (BPTT itself)
    # carries no information, and a comparison of BPTT trainings gets no alignment panel.
    alignment = {name: a for name, a in (alignment or {}).items() if _differs_from_bptt(a)}
    below_curves = curves is not None and contrasts
    budgets = [
        (per_batch, label)
        for per_batch, label in (
            (trials_per_batch, "trials"),
            (seconds_per_batch, "training time (s)"),
        )
        if curves is not None and per_batch
    ]
    n_columns = (
        len(metrics) + (curves is not None) + len(budgets) + bool(alignment and not below_curves)
    )
    # The curves' legend (one for every curve panel: the colours are the same) beside
    # the first; the alignment's beside it.
    widths = [metric_width(len(names))] * len(metrics)
    if curves is not None:
        widths.append(_CURVE_WIDTH + _LEGEND_WIDTH * legend_columns(len(curves)))
    widths += [_CURVE_WIDTH] * len(budgets)
    widths += [_CURVE_WIDTH + _LEGEND_WIDTH] * (n_columns - len(widths))
    fig = Figure(layout="constrained")
    n_other = n_columns - len(metrics)
    # Below the curves: the alignment, if it has no column of its own.
    below = [contrasts] * len(metrics) + [below_curves and bool(alignment)] * (n_other > 0)
    below += [False] * (n_columns - len(below))
    room = [tick_label_room(names)] * len(metrics) + [0.0] * n_other
    grid = wrapped_grid(fig, widths, n_rows, below=below, label_room=room)
    curve_column = len(metrics) if curves is not None else None
    if curve_column is not None:
        draw_curves(grid[0, curve_column], curves, names)
        if contrasts and not alignment:
            grid[1, curve_column].set_axis_off()
        for offset, (per_batch, label) in enumerate(budgets, start=1):
            draw_curves(
                grid[0, curve_column + offset],
                curves,
                names,
                per_batch=per_batch,
                xlabel=label,
                legend=False,
            )
            if contrasts:
                grid[1, curve_column + offset].set_axis_off()
    if alignment:
        draw_alignment(grid[1, curve_column] if below_curves else grid[0, -1], alignment, names)
        if contrasts and not below_curves:
            grid[1, -1].set_axis_off()
    for column, metric in enumerate(metrics):
        shown = _shown_condition(summary, metric, condition)
        cell = summary.sel(metric=metric, condition=shown)
        columns = [_replicate_column(values[name], metric, shown) for name in names]
        ax = grid[0, column]
        for x, name in enumerate(names):
            at = cell.sel(experiment=name)
            _draw_estimate(
                ax, x, columns[x], float(at["mean"]), float(at.ci_low), float(at.ci_high)
            )
        for x, joined in enumerate(adjacent_paired):
            if joined:
                _join_pairs(ax, x, columns[x], columns[x + 1])
        experiment_ticks(ax, names)
        label = _metric_label(summary, metric)
        ax.set_ylabel(label)
        ax.set_title(f"evaluated in: {shown}" if shown else "", fontsize="medium")
        drawn = np.concatenate(columns)
        if metric == "final_validation_loss":
            log_scale_if_possible(ax, drawn)
        elif np.isfinite(drawn).any() and np.nanmin(drawn) >= 0:
            ax.set_ylim(bottom=0)
        if not contrasts:
            continue
        ax = grid[1, column]
        ax.axhline(0.0, color="0.3", lw=0.8, ls="--", zorder=1, gid="zero")
        ticks = [f"{reference}\n(reference)"]
        for x, name in enumerate(names[1:], start=1):
            at = cell.sel(experiment=name, reference=reference)
            differences = columns[x] - columns[0] if paired[x, 0] else np.empty(0)
            _draw_estimate(
                ax,
                x,
                differences,
                float(at.difference),
                float(at.difference_ci_low),
                float(at.difference_ci_high),
            )
            ticks.append(f"{name}\n{'paired' if paired[x, 0] else 'unpaired'}")
        experiment_ticks(ax, ticks)
        ax.set_ylabel(f"{label}\nminus {reference}")
    _comparison_legend(
        fig, summary.attrs["confidence"], paired=any(adjacent_paired), contrasts=contrasts
    )
    suptitle(fig, title)
    return fig
