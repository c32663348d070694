"""The preferred-direction comparison across experiments, laid out as Lillicrap & Scott
(2013, Neuron 77:168, Fig. 3) draw theirs: a rose histogram of the well-tuned units'
preferred directions per body, with the axis of its two modes."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .._analysis._tuning_comparison import _min_r_squared, axial_mean, pooled_axis
from ._style import by_condition, condition_label, no_data, suptitle

N_ROSE_BINS = 24  # 15° bins
_ANGLE_TICKS = ([0, np.pi / 2, np.pi, 3 * np.pi / 2], ["0°", "90°", "180°", "270°"])
AXIS_COLOR = "tab:red"
ROSE_COLOR = "0.55"
AXIS_P = 1e-3  # the axis is solid where uniformity is rejected at this level


def tuned_directions(analysis: xr.Dataset, condition: str, min_r_squared: float) -> np.ndarray:
    """The preferred directions (rad) of the units whose cosine fit reaches
    `min_r_squared`, `(replicate, unit)` with NaN for the others."""
    one = analysis.sel(condition=condition)
    tuned = one.r_squared >= min_r_squared
    return one.preferred_direction.where(tuned).transpose("replicate", "unit").values


def _rose(ax: Axes, directions: np.ndarray, axis: float, *, small: bool, p: float) -> None:
    """A rose histogram (fraction of units per 15° bin) with the modes' axis drawn
    across it through the origin: solid where the doubled angles' Rayleigh `p` is
    below `AXIS_P`, else dashed."""
    ax.set_xticks(*_ANGLE_TICKS, fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    directions = directions[np.isfinite(directions)]
    if not directions.size:
        no_data(ax, "no tuned units")
        ax.set_yticks([])
        return
    edges = np.linspace(0, 2 * np.pi, N_ROSE_BINS + 1)
    counts, _ = np.histogram(np.mod(directions, 2 * np.pi), edges)
    fractions = counts / directions.size
    ax.bar(
        edges[:-1],
        fractions,
        width=np.diff(edges),
        align="edge",
        color=ROSE_COLOR,
        edgecolor="k",
        lw=0.4,
    )
    top = float(fractions.max()) * 1.1
    if np.isfinite(axis):
        style = "-" if p < AXIS_P else "--"
        for end in (axis, axis + np.pi):
            ax.plot([end, end], [0, top], color=AXIS_COLOR, lw=1.5 if small else 2, ls=style)
    ax.set_ylim(0, top)
    ax.set_yticks([] if small else [round(top / 2, 2)])
    if small:
        ax.set_xticklabels([])


def plot_tuning_comparison(analyses: Mapping[str, xr.Dataset], *, title: str = "") -> Figure:
    """Preferred directions per experiment (a column each, in the order of `analyses`):
    the rose histogram of every replicate's tuned units pooled, with the axis of its
    two modes (the doubled angles' mean halved, in red), the pooled bimodality `r`,
    Rayleigh p and unit count; below it a small rose per replicate with its own axis
    and `r`.

    Only units whose cosine fit has ``r_squared`` at least the analysis's
    ``min_r_squared`` count. Angles are the hand's frame: 0° to the right, 90° away
    from the body. With several evaluation conditions, the first is drawn.

    **Arguments:**

    - `analyses`: each experiment's analysis store (the tuning analysis's variables).
    - `title`: figure title.
    """
    if not analyses:
        raise ValueError("a comparison needs at least one experiment")
    n_replicates = max(analysis.sizes["replicate"] for analysis in analyses.values())
    columns = min(n_replicates, 3)
    rows = math.ceil(n_replicates / columns)
    fig = Figure(
        figsize=(max(3.4 * len(analyses), 7.0), 3.6 + 1.25 * rows + 0.5 * bool(title)),
        layout="constrained",
    )
    grid = fig.add_gridspec(2, len(analyses), height_ratios=[3.2, 1.25 * rows])
    for index, (name, analysis) in enumerate(analyses.items()):
        analysis = by_condition(analysis)
        condition = str(analysis.condition.values[0])
        min_r_squared = _min_r_squared(analysis)
        directions = tuned_directions(analysis, condition, min_r_squared)
        pooled = pooled_axis(analysis, condition, min_r_squared)
        ax = fig.add_subplot(grid[0, index], projection="polar")
        _rose(ax, directions, pooled["pd_axis"], small=False, p=pooled["pd_uniformity_p"])
        label = condition_label(analysis, condition)
        heading = name if not label or len(analysis.condition) == 1 else f"{name} ({label})"
        ax.set_title(
            f"{heading}\nr = {pooled['pd_bimodality']:.2f}, p = {pooled['pd_uniformity_p']:.1e}, "
            f"{int(pooled['pd_n_tuned'])} tuned units\naxis {_axis_degrees(pooled['pd_axis'])}",
            fontsize=9,
        )
        cells = grid[1, index].subgridspec(rows, columns)
        axes = np.asarray(analysis.pd_axis.sel(condition=condition).values, dtype=float)
        spread = np.degrees(axial_mean(axes)[1])
        for replicate in range(analysis.sizes["replicate"]):
            small = fig.add_subplot(
                cells[replicate // columns, replicate % columns], projection="polar"
            )
            one = analysis.sel(condition=condition).isel(replicate=replicate)
            r = float(one.pd_bimodality)
            p = float(one.pd_uniformity_p)
            _rose(small, directions[replicate], axes[replicate], small=True, p=p)
            small.set_title(f"#{replicate}: r = {r:.2f}", fontsize=8)
        if n_replicates > 1 and np.isfinite(spread):
            ax.set_title(ax.get_title() + f" (replicates' SD {spread:.0f}°)", fontsize=9)
    fig.supxlabel(
        "preferred directions of the tuned units, every replicate pooled (top) and each "
        "replicate (#k, below):\nfraction of units per 15° bin; 0° right, 90° away from "
        "the body; red: the axis of the two modes (dashed: uniformity not rejected, "
        "Rayleigh p ≥ 0.001)",
        fontsize=9,
    )
    suptitle(fig, title)
    return fig


def _axis_degrees(axis: float) -> str:
    if not np.isfinite(axis):
        return "n/a"
    degrees = float(np.degrees(axis)) % 180
    return f"{degrees:.0f}°/{degrees + 180:.0f}°"
