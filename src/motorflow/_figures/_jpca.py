"""jPCA's figure: one replicate's hidden trajectories in its top jPC plane (Churchland
et al. 2012, Fig. 3) and, beneath, its rotational ratio against the tensor maximum
entropy surrogates' (Elsayed & Cunningham 2017)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ._style import (
    add_angle_colorbar,
    angle_colors,
    by_condition,
    condition_label,
    no_data,
    settled,
    square_limits,
    suptitle,
)


def draw_jpc_paths(ax: Axes, paths: np.ndarray, colors, **start_style) -> None:
    """Trajectories `(trial, time, 2)` in a jPC plane as Churchland et al. (2012, Fig. 3)
    draw them: a line per trial in its colour, a dot at its start (`start_style`: the
    dot's scatter settings) and an arrowhead at its end, on square limits."""
    for path, color in zip(paths, colors):
        ax.plot(path[:, 0], path[:, 1], color=color, lw=1.2)
        ax.scatter(path[0, 0], path[0, 1], color=color, zorder=3, **start_style)
        if len(path) > 1:
            ax.annotate(
                "",
                xy=path[-1],
                xytext=path[-2],
                arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.2},
            )
    square_limits(ax, paths.reshape(-1, 2))


def fits_in_words(skew: float, best: float, ratio: float) -> str:
    """jPCA's two fits said in words: the share of the states' change (R² of their first
    differences) that a rotation explains, that any linear dynamics explain, and the
    ratio of the two (Michaels et al. 2016's R²_skew / R²_best)."""
    return (
        f"rotation explains {skew:.0%} of the change,\n"
        f"any linear dynamics {best:.0%}: ratio {ratio:.2f}"
    )


def plot_jpca(jpca: xr.Dataset, *, replicate: int = 0, title: str = "") -> Figure:
    """One replicate's hidden trajectories in its top jPC plane, a panel per condition,
    coloured by goal angle, as Churchland et al. (2012, Fig. 3) draw them: starts are
    dots, ends arrowheads; each panel's title gives the rotational fit's R² over the
    unconstrained fit's. Beneath each, where the store has surrogates, the histogram of
    the surrogates' ratios with the data's marked and its p-value (Elsayed & Cunningham
    2017's control).

    **Arguments:**

    - `jpca`: the Dataset from `hidden_jpca`, with ``jpca_projection`` `(replicate,
      condition, trial, jpca_time, jpc)`, the R² variables and the ``goal_angle`` coord
      (and ``jpca_surrogate_r2_ratio`` `(replicate, condition, surrogate)`, if any).
    - `replicate`: the replicate drawn.
    - `title`: figure title.
    """
    jpca = by_condition(jpca)
    shown = jpca.sel(replicate=replicate)
    conditions = list(shown.condition.values)
    colors = angle_colors(jpca.goal_angle)
    surrogates = "jpca_surrogate_r2_ratio" in shown
    fig = Figure(figsize=(4.0 * len(conditions) + 1.2, 6.4 if surrogates else 4.6))
    fig.set_layout_engine("constrained")
    grid = fig.add_gridspec(
        2 if surrogates else 1, len(conditions), height_ratios=([3.2, 1.0] if surrogates else [1.0])
    )
    axes = [fig.add_subplot(grid[0, column]) for column in range(len(conditions))]
    for column, (ax, condition) in enumerate(zip(axes, conditions)):
        one = shown.sel(condition=condition)
        paths = one.jpca_projection.transpose("trial", "jpca_time", "jpc").values
        if not np.isfinite(paths).any():
            no_data(ax, "no data (NaN states, or no rotation)")
        else:
            draw_jpc_paths(ax, paths, colors, s=12)
        ratio = float(one.jpca_r2_ratio)
        skew, best = float(one.jpca_r2_skew), float(one.jpca_r2_best)
        ax.set_xlabel("jPC1 (a.u.)")
        ax.set_ylabel("jPC2 (a.u.)")
        ax.set_title(
            f"{condition_label(jpca, condition)}\n{fits_in_words(skew, best, ratio)}",
            fontsize="medium",
        )
        if surrogates:
            draw_surrogates(fig.add_subplot(grid[1, column]), one)
    add_angle_colorbar(fig, axes)
    # What the dots mean, in the title: a legend below the panels met their axis labels.
    suptitle(fig, f"{title} jPCA (replicate {replicate}; dots: the window's start)".strip())
    return settled(fig)


def draw_surrogates(ax: Axes, one: xr.Dataset) -> None:
    """The ratios of one replicate's surrogates in one condition as a histogram, the
    data's ratio as a vertical line, and the p-value in the title."""
    ratios = np.asarray(one.jpca_surrogate_r2_ratio.values, np.float64)
    ratios = ratios[np.isfinite(ratios)]
    ratio, p = float(one.jpca_r2_ratio), float(one.jpca_surrogate_p)
    if not ratios.size or not np.isfinite(ratio):
        no_data(ax, "no surrogates")
        return
    ax.hist(ratios, bins=20, color="0.7", edgecolor="0.4", lw=0.5)
    ax.axvline(ratio, color="tab:purple", lw=2)
    ax.set_xlabel("ratio skew / best (line: the data's)")
    ax.set_ylabel("surrogates")
    ax.set_title(f"{ratios.size} maximum entropy surrogates: p = {p:.2g}", fontsize="medium")
