"""The figure of a sweep: each metric against the first grid setting, a line per
combination of the other settings."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ._comparison import _metric_label, _replicate_column, _shown_condition
from ._style import log_scale_if_possible, suptitle

# Replicates of a point are spread over this fraction of the gap between grid values,
# and the groups' spreads side by side over `_GROUP_SPREAD`: enough to tell the dots
# apart, small enough that none is mistaken for a neighbouring grid value.
_REPLICATE_SPREAD = 0.06
_GROUP_SPREAD = 0.2
# A numeric setting spanning this factor or more (all positive) gets a log axis, and so
# do a metric's values.
_LOG_AXIS_RATIO = 100
# Past this many lines (the colours of tab10) a grid's seeds are pooled: a line per
# combination of the other settings, over the seeds' means.
_MOST_LINES = 10
# The grid key of the seed (a replication, not a condition).
_SEED = "seed"


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _spans_decades(values: np.ndarray) -> bool:
    """Positive finite values spanning a factor of `_LOG_AXIS_RATIO` or more."""
    finite = values[np.isfinite(values)]
    return bool(
        finite.size and np.all(finite > 0) and finite.max() / finite.min() >= _LOG_AXIS_RATIO
    )


def _short_names(settings: Sequence[str]) -> dict[str, str]:
    """Each dotted setting by its last part, unless two settings share it."""
    last = [setting.split(".")[-1] for setting in settings]
    return {s: short if last.count(short) == 1 else s for s, short in zip(settings, last)}


def _centred(n: int, width: float) -> np.ndarray:
    """`n` evenly spaced offsets spanning `width`, centred on 0."""
    return np.linspace(-width / 2, width / 2, n) if n > 1 else np.zeros(n)


def _format(value: object) -> str:
    return f"{value:g}" if _is_number(value) else str(value)


class _Axis:
    """Where each swept value sits on the x axis, and how to step beside it."""

    def __init__(self, swept: list[object], scale: str = "auto"):
        self.numeric = all(_is_number(value) for value in swept)
        if scale != "auto" and not self.numeric:
            raise ValueError(f"x_scale {scale!r} needs numeric swept values, got {swept}")
        if self.numeric:
            self.categories: list[object] = []
            numbers_ = np.array(swept, dtype=float)
            if scale == "log" and not np.all(numbers_ > 0):
                raise ValueError(f"a logarithmic axis needs positive values, got {swept}")
            self.log = scale == "log" or bool(
                scale == "auto"
                and np.all(numbers_ > 0)
                and numbers_.max() / numbers_.min() >= _LOG_AXIS_RATIO
            )
        else:
            self.categories = list(dict.fromkeys(map(_format, swept)))
            self.log = False
        scaled = np.unique([self._scaled(self.position(value)) for value in swept])
        self.gap = float(np.diff(scaled).min()) if len(scaled) > 1 else 1.0

    def position(self, value: object) -> float:
        return float(value) if self.numeric else float(self.categories.index(_format(value)))

    def _scaled(self, position: float) -> float:
        return np.log10(position) if self.log else position

    def beside(self, position: float, offsets: np.ndarray) -> np.ndarray:
        """`position` moved by `offsets`, in gaps between neighbouring grid values."""
        moved = self._scaled(position) + offsets * self.gap
        return 10**moved if self.log else moved

    def style(self, ax: Axes, setting: str, ticks: Sequence[float]) -> None:
        ax.set_xlabel(setting)
        if self.log:
            ax.set_xscale("log")
            # The swept values themselves as ticks: a doubling grid reads as its values,
            # not as powers of ten.
            ax.set_xticks(ticks, [_format(tick) for tick in ticks])
            ax.minorticks_off()
        if self.categories:
            ax.set_xticks(range(len(self.categories)), self.categories)
            ax.set_xlim(-0.5, len(self.categories) - 0.5)


def _mark(ax: Axes, marks: Mapping[str, float]) -> None:
    """A dashed vertical line at each mark, its label along it at the top."""
    for label, value in marks.items():
        ax.axvline(value, color="0.35", ls="--", lw=1, zorder=0, gid="mark")
        ax.text(
            value,
            0.98,
            f" {label}",
            transform=ax.get_xaxis_transform(),
            rotation=90,
            ha="right",
            va="top",
            fontsize="x-small",
            color="0.35",
            gid="mark label",
        )


def _groups(
    points: Mapping[str, Mapping[str, object]], others: list[str]
) -> dict[tuple[str, ...], list[str]]:
    """The experiments of each combination of the `others` settings, in order of first
    appearance."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, point in points.items():
        groups.setdefault(tuple(_format(point[setting]) for setting in others), []).append(name)
    return groups


def _mean_interval(seed_means: np.ndarray) -> tuple[float, float, float]:
    """The mean of the seeds' means and its 95% interval, ±1.96 standard errors (no
    random stream: the seeds are the sample)."""
    finite = seed_means[np.isfinite(seed_means)]
    if not finite.size:
        return (np.nan, np.nan, np.nan)
    mean = float(finite.mean())
    half = 1.96 * float(finite.std(ddof=1)) / np.sqrt(finite.size) if finite.size > 1 else 0.0
    return (mean, mean - half, mean + half)


def _sweep_legend(fig: Figure, lines: list, confidence: float, pooled: bool = False) -> None:
    line = mpl.lines.Line2D
    dot, mean = (
        ("a seed's mean", "mean over the seeds")
        if pooled
        else ("a replicate", "mean of the replicates")
    )
    handles = [
        *lines,
        line([], [], marker="o", ms=3, ls="none", color="0.4", label=dot),
        line([], [], marker="o", color="0.4", label=mean),
        line([], [], marker="|", ms=10, ls="none", color="0.4"),
    ]
    handles[-1].set_label(
        "95% interval (±1.96 s.e. over seeds)" if pooled else f"{confidence:.0%} bootstrap interval"
    )
    fig.legend(
        handles=handles, loc="outside lower center", ncols=min(len(handles), 4), fontsize="small"
    )


def plot_sweep(
    values: Mapping[str, xr.Dataset],
    points: Mapping[str, Mapping[str, object]],
    summary: xr.Dataset,
    *,
    metrics: Sequence[str],
    condition: str | None = None,
    marks: Mapping[str, float] | None = None,
    x_scale: str = "auto",
    title: str = "",
) -> Figure:
    """A sweep's metrics against its first grid setting, a panel per metric.

    A line per combination of the other grid settings joins the means across
    replicates, with each mean's bootstrap interval as a vertical line, both read from
    `summary`; each replicate is a small dot set slightly aside (sideways by its line,
    then by replicate) so that none hide each other. Where that would be more than 10
    lines and ``seed`` is a grid setting, the seeds are pooled: a line per combination
    of the other settings joins the means over the seeds of each experiment's mean, with
    their 95% interval (±1.96 standard errors over the seeds), and each seed's mean is
    a dot. A numeric first setting lies on a
    numeric axis (by default logarithmic when its positive values span a factor of 100
    or more); any other is drawn as categories in order of appearance. A metric's y
    axis is logarithmic where its values are positive and span a factor of 100 or more
    (the validation loss's wherever it can be). `marks` draws a dashed vertical line,
    labelled, at each of its values in every panel.

    **Arguments:**

    - `values`: experiment name to its `replicate_values`; must hold every experiment
      of `points`.
    - `points`: each of the sweep's experiments to its grid values, setting to value
      (e.g. ``{"model.feedback.noise_std": 0.05, "model.network.hidden_size": 16}``),
      every experiment with the same settings in the same order.
    - `summary`: the Dataset from `summarise` over (at least) these experiments.
    - `metrics`: the metrics drawn, a panel each.
    - `condition`: the evaluation condition of metrics that have one; None (or one
      that a metric lacks): the first condition that has the metric.
    - `marks`: label to a value of the first setting, e.g. ``{"feedback loop": 3}``;
      needs a numeric first setting.
    - `x_scale`: ``"auto"``, ``"linear"`` or ``"log"`` (positive values only).
    - `title`: figure title.
    """
    names = list(points)
    settings = list(points[names[0]])
    for name in names:
        if list(points[name]) != settings:
            raise ValueError(
                f"{name!r} has the grid settings {list(points[name])}, "
                f"{names[0]!r} has {settings}: a sweep's points share their settings"
            )
    first, others = settings[0], settings[1:]
    swept = [points[name][first] for name in names]
    axis = _Axis(swept, x_scale)
    marks = dict(marks or {})
    if marks and not axis.numeric:
        raise ValueError(f"marks need numeric swept values, got {swept}")
    pooled = _SEED in others and len(_groups(points, others)) > _MOST_LINES
    if pooled:
        others = [setting for setting in others if setting != _SEED]
    groups = _groups(points, others)
    short = _short_names(others)
    colors = mpl.colormaps["tab10"].colors
    fig = Figure(figsize=(4.2 * len(metrics), 3.8), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    group_centres = _centred(len(groups), _GROUP_SPREAD)
    legend_lines = []
    for ax, metric in zip(axes, metrics):
        shown = _shown_condition(summary, metric, condition)
        cells = summary.sel(metric=metric, condition=shown)
        drawn = []
        for index, (combination, members) in enumerate(groups.items()):
            color = colors[index % len(colors)]
            label = ", ".join(f"{short[s]} = {v}" for s, v in zip(others, combination))
            at = {}  # x position -> the experiments there (several seeds where pooled)
            for name in members:
                at.setdefault(axis.position(points[name][first]), []).append(name)
            x = np.array(sorted(at))
            if pooled:
                seed_means = [cells.sel(experiment=at[position])["mean"].values for position in x]
                mean, low, high = (np.array(v) for v in zip(*map(_mean_interval, seed_means)))
                dots = seed_means
            else:
                cell = cells.sel(experiment=[at[position][0] for position in x])
                mean, low, high = cell["mean"].values, cell.ci_low.values, cell.ci_high.values
                dots = [_replicate_column(values[at[position][0]], metric, shown) for position in x]
            line = ax.plot(x, mean, "o-", color=color, lw=1.5, ms=5, label=label, gid="mean")[0]
            if ax is axes[0] and label:
                legend_lines.append(line)
            ax.vlines(x, low, high, color=color, lw=1.2, gid="interval")
            for position, points_here in zip(x, dots):
                spread = _centred(points_here.size, _REPLICATE_SPREAD)
                ax.scatter(
                    axis.beside(position, group_centres[index] + spread),
                    points_here,
                    s=8,
                    color=color,
                    alpha=0.5,
                    zorder=1,
                    gid="replicates",
                )
                drawn.append(points_here)
            drawn += [low, high]
        _mark(ax, marks)
        axis.style(ax, first, sorted({float(value) for value in swept}) if axis.log else ())
        ax.set_ylabel(_metric_label(summary, metric))
        ax.set_title(f"evaluated in: {shown}" if shown else "", fontsize="medium")
        spread = np.concatenate(drawn)
        if metric == "final_validation_loss":
            log_scale_if_possible(ax, spread)
        elif _spans_decades(spread):
            ax.set_yscale("log")
    _sweep_legend(fig, legend_lines, summary.attrs["confidence"], pooled)
    suptitle(fig, title)
    return fig
