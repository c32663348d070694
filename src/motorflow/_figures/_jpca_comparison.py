"""The rotational-dynamics comparison across experiments: each experiment's hidden
trajectories in its top jPC plane, side by side, and the rotational fit against the
unconstrained one per experiment (Churchland et al. 2012, Nature 487:51, Fig. 3;
Michaels et al. 2016's R²_skew / R²_best).

Like `motorflow._figures`, the function builds a standalone `Figure` (no pyplot).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ._jpca import draw_jpc_paths, fits_in_words
from ._style import add_angle_colorbar, angle_colors, by_condition, no_data, settled, suptitle

# The statistics of the right-hand panel: the store's variable, label and colour.
_FITS = (
    ("jpca_r2_skew", "R² rotation (skew)", "tab:red"),
    ("jpca_r2_best", "R² linear (best)", "tab:blue"),
    ("jpca_r2_ratio", "ratio skew / best", "tab:purple"),
)
_SHUFFLED = "jpca_shuffled_r2_skew"
_SURROGATES = "jpca_surrogate_r2_ratio"


def _rosette(ax: Axes, analysis: xr.Dataset, replicate: int, name: str) -> None:
    """One replicate's trajectories (first condition) in its jPC1-2 plane: a trace per
    reach coloured by its direction, a dot at its start, an arrowhead at its end."""
    one = by_condition(analysis).isel(condition=0).sel(replicate=replicate)
    paths = one.jpca_projection.transpose("trial", "jpca_time", "jpc").values
    ax.set_xlabel("jPC1 (a.u.)")
    ax.set_ylabel("jPC2 (a.u.)")
    if not np.isfinite(paths).any():
        no_data(ax, "no data (NaN states, or no rotation)")
        ax.set_title(name, fontsize="medium")
        return
    colors = angle_colors(analysis.goal_angle)
    draw_jpc_paths(ax, paths, colors, s=14, edgecolor="k", lw=0.4)
    ax.plot(0, 0, "k+", ms=6)
    fits = (float(one[f"jpca_r2_{fit}"]) for fit in ("skew", "best", "ratio"))
    ax.set_title(f"{name}\n{fits_in_words(*fits)}", fontsize="medium")


def _fit_panel(ax: Axes, analyses: Mapping[str, xr.Dataset]) -> list[Line2D]:
    """Per experiment, each replicate's R² of both fits and their ratio (small dots),
    their mean (a bar), the condition-shuffle control's 95th percentile of R²_skew
    (grey dashes on its bar: the ratio of shuffled data stays high wherever units
    oscillate, so R²_skew is what the shuffle tells apart) and the maximum entropy
    surrogates' 95th percentile of the ratio (black dashes on the ratio's bar); returns
    the legend's handles."""
    width = 0.8 / len(_FITS)
    for x, analysis in enumerate(analyses.values()):
        one = by_condition(analysis).isel(condition=0)
        for index, (variable, _, color) in enumerate(_FITS):
            values = np.asarray(one[variable].values, dtype=float)
            position = x + (index - (len(_FITS) - 1) / 2) * width
            finite = values[np.isfinite(values)]
            if finite.size:
                ax.bar(position, finite.mean(), width * 0.9, color=color, alpha=0.35)
            ax.scatter(np.full(values.shape, position), values, s=12, color=color, zorder=3)
        if _SHUFFLED in one:
            shuffled = np.asarray(one[_SHUFFLED].values, dtype=float)
            position = x - (len(_FITS) - 1) / 2 * width
            ax.scatter(np.full(shuffled.shape, position), shuffled, marker="_", s=120, color="0.3")
        if _SURROGATES in one:
            p95 = np.nanpercentile(one[_SURROGATES].values, 95, axis=-1)
            position = x + (len(_FITS) - 1) / 2 * width
            ax.scatter(np.full(p95.shape, position), p95, marker="_", s=120, color="k")
    ax.set_xticks(range(len(analyses)), list(analyses), rotation=20)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("R² of the first differences, or ratio (1)")
    ax.axhline(1, color="0.8", lw=0.8, zorder=0)
    handles = [
        Line2D([], [], ls="", marker="s", ms=7, color=color, alpha=0.6, label=label)
        for _, label, color in _FITS
    ]
    handles.append(
        Line2D([], [], ls="", marker="_", ms=10, color="0.3", label="R² skew, shuffled p95")
    )
    if any(_SURROGATES in analysis for analysis in analyses.values()):
        handles.append(
            Line2D([], [], ls="", marker="_", ms=10, color="k", label="ratio, surrogates p95")
        )
    return handles


def plot_jpca_comparison(
    analyses: Mapping[str, xr.Dataset], *, replicate: int = 0, title: str = ""
) -> Figure:
    """Rotational dynamics across experiments: a panel per experiment with one
    replicate's hidden trajectories in its top jPC plane (Churchland et al. 2012, Fig. 3
    layout: a trace per reach direction, coloured by direction, dots at the window's
    start, arrowheads at its end; the first evaluation condition), and a panel of each
    experiment's R²_skew, R²_best and their ratio for every replicate (dots) and their
    mean (bars), with R²_skew's condition-shuffle control (the 95th percentile over
    shuffles, one dash per replicate).

    **Arguments:**

    - `analyses`: each experiment's name mapped to its analysis store (`hidden_jpca`'s
      variables and the ``goal_angle`` coord), in the panels' order.
    - `replicate`: the replicate whose trajectories are drawn.
    - `title`: figure title.
    """
    if not analyses:
        raise ValueError("a jPCA comparison needs at least one experiment")
    n = len(analyses)
    fig = Figure(figsize=(3.3 * n + 4.6, 4.4), layout="constrained")
    grid = fig.add_gridspec(1, n + 1, width_ratios=[1] * n + [1.15])
    rosettes = [fig.add_subplot(grid[0, k]) for k in range(n)]
    for ax, (name, analysis) in zip(rosettes, analyses.items()):
        _rosette(ax, analysis, replicate, name)
    fits = fig.add_subplot(grid[0, n])
    handles = _fit_panel(fits, analyses)
    fits.set_title("rotational vs linear fit", fontsize="medium")
    add_angle_colorbar(fig, rosettes)
    start = Line2D([], [], ls="", marker="o", ms=4, color="0.5", mec="k", label="window start")
    fig.legend(
        handles=[start, *handles],
        loc="outside lower center",
        ncols=len(handles) + 1,
        fontsize="small",
    )
    suptitle(fig, f"{title} jPCA (trajectories: replicate {replicate})".strip())
    return settled(fig)
