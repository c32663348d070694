"""The cross-experiment comparison figure: each replicate, the mean with its bootstrap
interval, paired replicates joined, each experiment's difference to the first, and
the training curves side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ._style import (
    axis_label,
    log_scale_if_possible,
    suptitle,
)

REPLICATE_COLOR = "tab:blue"
PAIRING_COLOR = "0.6"
_REPLICATE_SPREAD = 0.12  # half the width of a column's dots, in experiments
_INTERVAL_OFFSET = 0.22  # the interval stands right of the dots, never over them


MAX_WIDTH = 16.0  # inches: a comparison of any size stays within a screen's width
_PANEL_HEIGHT = 3.6  # inches, per row of panels
_MAX_TILTED = 6  # experiments whose tick labels still fit tilted rather than upright
_MAX_TILTED_CHARACTERS = 14  # and the longest name that does
_CURVE_WIDTH = 4.0  # inches: a curves panel without its legend
_LEGEND_WIDTH = 1.7  # inches per column of a legend beside a panel
_LEGEND_ROWS = 12  # entries per legend column, so that a legend fits its panel's height


def _legend_columns(n_entries: int) -> int:
    return max(1, -(-n_entries // _LEGEND_ROWS))


def _metric_width(n_experiments: int) -> float:
    """A metric panel's width in inches: room for each experiment's tilted tick label
    (two lines of 8 pt text), never wider than the figure's bound."""
    return min(MAX_WIDTH, max(3.5, 0.42 * n_experiments + 1.5))


def _experiment_color(index: int, n_experiments: int) -> object:
    """An experiment's colour in the curves: the default cycle up to 10 experiments,
    past that the 20 of ``tab20`` (so that no two of up to 20 share one)."""
    if n_experiments <= 10:
        return f"C{index}"
    return mpl.colormaps["tab20"](index % 20)


def _label_room(labels: list[str]) -> float:
    """Inches below a panel that its upright tick labels take (about 0.07 in per
    character at the default 10 pt), so that long names do not squash the data."""
    longest = max(len(line) for label in labels for line in label.split("\n"))
    if len(labels) <= _MAX_TILTED and longest <= _MAX_TILTED_CHARACTERS:
        return 0.0
    return 0.07 * longest


def _wrapped_grid(
    fig: Figure,
    widths: list[float],
    n_rows: int,
    *,
    below: list[bool],
    label_room: list[float],
) -> np.ndarray:
    """Axes `(n_rows, len(widths))`: a column of `n_rows` panels per width, the columns
    wrapped into as many bands as keep each band within `MAX_WIDTH` inches; `fig` is
    sized to hold them. Each column's panels stay one above the other, and the axes are
    made row by row (every column's top panel first), so `fig.axes` reads like the grid.
    A band none of whose columns draws `below` (its lower panels) has the height of
    one row (its lower panels are empty stand-ins), and each band is as much taller as its columns' `label_room` (inches)."""
    bands: list[list[int]] = [[]]
    for column, width in enumerate(widths):
        if bands[-1] and sum(widths[c] for c in bands[-1]) + width > MAX_WIDTH:
            bands.append([])
        bands[-1].append(column)
    fig_width = max(sum(widths[c] for c in band) for band in bands)
    rows = [n_rows if any(below[c] for c in band) else 1 for band in bands]
    heights = [
        (_PANEL_HEIGHT + max(label_room[c] for c in band)) * used
        for band, used in zip(bands, rows, strict=True)
    ]
    fig.set_size_inches(fig_width, sum(heights) + 0.5)
    outer = fig.add_gridspec(len(bands), 1, height_ratios=heights)
    cells: dict[int, tuple] = {}
    for band_index, (band, used) in enumerate(zip(bands, rows, strict=True)):
        ratios = [widths[c] for c in band]
        spare = fig_width - sum(ratios)
        inner = outer[band_index].subgridspec(
            used, len(band) + (spare > 0.01), width_ratios=ratios + [spare] * (spare > 0.01)
        )
        cells.update({column: (inner, place, used) for place, column in enumerate(band)})

    def panel(row: int, column: int) -> Axes:
        inner, place, used = cells[column]
        if row < used:
            return fig.add_subplot(inner[row, place])
        # A band without lower panels: an empty stand-in, outside the layout and unseen.
        stand_in = fig.add_axes((0.0, 0.0, 1e-6, 1e-6))
        stand_in.set_in_layout(False)
        stand_in.set_axis_off()
        return stand_in

    return np.array(
        [[panel(row, c) for c in range(len(widths))] for row in range(n_rows)], dtype=object
    )


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


def _experiment_ticks(ax: Axes, labels: list[str]) -> None:
    tilt = len(labels) > 3 or any(len(line) > 12 for label in labels for line in label.split("\n"))
    # Past a few experiments, upright labels: tilted ones would cross their neighbours'.
    long = any(len(line) > _MAX_TILTED_CHARACTERS for label in labels for line in label.split("\n"))
    rotation = 90 if len(labels) > _MAX_TILTED or long else 30 if tilt else 0
    ax.set_xticks(
        range(len(labels)),
        labels,
        rotation=rotation,
        ha="right" if tilt else "center",
        va="center" if rotation == 90 else "top",
        rotation_mode="anchor",
    )
    ax.set_xlim(-0.6, len(labels) - 0.4)


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


def _draw_curves(
    ax: Axes,
    curves: Mapping[str, xr.DataArray],
    order: list[str],
    *,
    per_batch: Mapping[str, float] | None = None,
    xlabel: str = "batch",
    legend: bool = True,
) -> None:
    """Each experiment's validation loss against batch (or, with `per_batch`, against
    batch times each experiment's value there: trials or seconds; an experiment without
    one is left out): a thin line per replicate and a thick one for their mean, one
    colour per experiment (its place in `order`), named in a legend beside the panel
    (with `legend`)."""
    drawn = []
    for name, curve in curves.items():
        if per_batch is not None and name not in per_batch:
            continue
        color = _experiment_color(order.index(name), len(order))
        curve = curve.isel(validation_step=curve.notnull().any("replicate").values)
        x = curve.validation_step.values * (1 if per_batch is None else per_batch[name])
        for replicate in curve.replicate.values:
            ax.plot(
                x,
                curve.sel(replicate=replicate),
                color=color,
                lw=0.6,
                alpha=0.4,
                gid="replicate curve",
            )
        ax.plot(x, curve.mean("replicate"), color=color, lw=2, label=name, gid="mean curve")
        drawn.append(np.ravel(curve.values))
    if drawn:
        log_scale_if_possible(ax, np.concatenate(drawn))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("validation loss, total (a.u.)")
    ax.set_title(
        "training: replicates (thin) and mean"
        if per_batch is None
        else f"the same against {xlabel.split(' (')[0]}",
        fontsize="medium",
    )
    if legend:
        ax.legend(
            fontsize="small",
            title="experiment",
            title_fontsize="small",
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            ncols=_legend_columns(len(curves)),
        )


_GROUP_STYLES = ("-", "--", ":", "-.")


def _draw_alignment(ax: Axes, alignment: Mapping[str, xr.DataArray], order: list[str]) -> None:
    """Each experiment's gradient alignment against batch: the mean over replicates of
    the cosine between its rule's update and the BPTT gradient, a line per trained
    array (line style) in the experiment's colour (as in the training curves)."""
    groups: list[str] = []
    for name, cosine in alignment.items():
        index = order.index(name)
        cosine = cosine.isel(validation_step=cosine.notnull().any(("group", "replicate")).values)
        for group in cosine.group.values:
            if str(group) not in groups:
                groups.append(str(group))
            ax.plot(
                cosine.validation_step.values,
                cosine.sel(group=group).mean("replicate"),
                color=_experiment_color(index, len(order)),
                ls=_GROUP_STYLES[groups.index(str(group)) % len(_GROUP_STYLES)],
                lw=1.4,
                gid="alignment curve",
            )
    ax.axhline(0.0, color="0.3", lw=0.8, ls="--", zorder=1)
    ax.set_ylim(-1.05, 1.05)
    ax.set_xlabel("batch")
    ax.set_ylabel("cosine with the BPTT gradient (1)")
    ax.set_title("gradient alignment: mean of the replicates", fontsize="medium")
    handles = [
        mpl.lines.Line2D([], [], color="0.2", ls=_GROUP_STYLES[i % len(_GROUP_STYLES)], label=g)
        for i, g in enumerate(groups)
    ]
    ax.legend(
        handles=handles,
        fontsize="small",
        title="trained array",
        title_fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
    )


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
      experiment without it left out; colours match the curves' when `curves` has the
      same experiments); drawn below the curves, or in a column of its own.
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
    alignment = {name: a for name, a in (alignment or {}).items() if a.size}
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
    widths = [_metric_width(len(names))] * len(metrics)
    if curves is not None:
        widths.append(_CURVE_WIDTH + _LEGEND_WIDTH * _legend_columns(len(curves)))
    widths += [_CURVE_WIDTH] * len(budgets)
    widths += [_CURVE_WIDTH + _LEGEND_WIDTH] * (n_columns - len(widths))
    fig = Figure(layout="constrained")
    n_other = n_columns - len(metrics)
    # Below the curves: the alignment, if it has no column of its own.
    below = [contrasts] * len(metrics) + [below_curves and bool(alignment)] * (n_other > 0)
    below += [False] * (n_columns - len(below))
    room = [_label_room(names)] * len(metrics) + [0.0] * n_other
    grid = _wrapped_grid(fig, widths, n_rows, below=below, label_room=room)
    curve_column = len(metrics) if curves is not None else None
    if curve_column is not None:
        _draw_curves(grid[0, curve_column], curves, names)
        if contrasts and not alignment:
            grid[1, curve_column].set_axis_off()
        for offset, (per_batch, label) in enumerate(budgets, start=1):
            _draw_curves(
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
        _draw_alignment(grid[1, curve_column] if below_curves else grid[0, -1], alignment, names)
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
        _experiment_ticks(ax, names)
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
        _experiment_ticks(ax, ticks)
        ax.set_ylabel(f"{label}\nminus {reference}")
    _comparison_legend(
        fig, summary.attrs["confidence"], paired=any(adjacent_paired), contrasts=contrasts
    )
    suptitle(fig, title)
    return fig
