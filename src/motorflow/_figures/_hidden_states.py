"""Figures of the hidden-state analyses: PCA trajectories, fixed points, directional
tuning and jPCA planes.

Like `motorflow._figures`, every function builds a standalone `Figure` (no pyplot).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from ._style import (
    add_angle_colorbar,
    angle_colors,
    by_condition,
    condition_label,
    no_data,
    settled,
    suptitle,
)

N_DIRECTION_BINS = 16
_PLANE = {"pc": [1, 2]}
_ANGLE_TICKS = ([0, np.pi / 2, np.pi, 3 * np.pi / 2], ["0", "π/2", "π", "3π/2"])


def _plane(pca: xr.Dataset) -> xr.Dataset:
    """`pca` with a `condition` dim, checked to have the PC1–PC2 plane."""
    if pca.sizes["pc"] < 2:
        raise ValueError(f"a PC1–PC2 plane needs 2 components, the PCA has {pca.sizes['pc']}")
    return by_condition(pca)


def _label_axes(ax: Axes, ratio: xr.DataArray) -> None:
    """PC1 and PC2 axis labels with the share of variance each explains."""
    for pc, set_label in zip((1, 2), (ax.set_xlabel, ax.set_ylabel)):
        share = float(ratio.sel(pc=pc))
        set_label(
            f"PC{pc} (a.u.; {100 * share:.1f}% of variance)"
            if np.isfinite(share)
            else f"PC{pc} (a.u.)"
        )


def _draw_paths(ax: Axes, one: xr.Dataset, colors: np.ndarray, **style) -> bool:
    """Each trial's path in the PC1–PC2 plane of `one` (a replicate and condition);
    False when there is nothing finite to draw."""
    paths = one.projection.sel(_PLANE).transpose("trial", "time", "pc").values
    if not np.isfinite(paths).any():
        no_data(ax, "no data (NaN states)")
        return False
    for path, color in zip(paths, colors):
        ax.plot(path[:, 0], path[:, 1], color=color, **style)
    return True


_ENSEMBLE_COLUMNS = 5  # small panels of the ensemble per row


def plot_pca_trajectories(pca: xr.Dataset, *, replicate: int = 0, title: str = "") -> Figure:
    """One replicate's hidden trajectories in the plane of its first two principal
    components (one space shared by its conditions, as `hidden_pca` fits it; the
    panels share their axes), a panel per condition, coloured by goal angle; starts
    are black dots. Below, the ensemble: every replicate's paths in the first
    condition, each in its own PC1–PC2 plane (a small panel each, titled with its
    replicate; spaces differ between replicates, so compare shapes, not
    coordinates), and the share of variance each PC explains in each replicate.

    **Arguments:**

    - `pca`: the Dataset from `hidden_pca`, with ``projection`` `(replicate,
      condition, trial, time, pc)`, ``explained_variance_ratio`` and the
      ``goal_angle`` coord.
    - `replicate`: the replicate drawn large.
    - `title`: figure title.
    """
    pca = _plane(pca)
    shown = pca.sel(replicate=replicate)
    conditions = list(shown.condition.values)
    colors = angle_colors(pca.goal_angle)
    replicates = list(pca.replicate.values)
    n_small = len(replicates) + 1  # and the variance panel
    small_columns = min(n_small, _ENSEMBLE_COLUMNS)
    small_rows = -(-n_small // small_columns)
    width = max(4.0 * len(conditions), 2.7 * small_columns) + 1.2
    fig = Figure(figsize=(width, 4.4 + 2.9 * small_rows + 0.4), layout="constrained")
    outer = fig.add_gridspec(2, 1, height_ratios=[4.4, 2.9 * small_rows])
    # The panels keep their width (4 in each) in the middle of a wider figure.
    margin = (width - 1.2 - 4.0 * len(conditions)) / 2
    if margin > 0.1:
        ratios = [margin, *[4.0] * len(conditions), margin]
        top, first = outer[0].subgridspec(1, len(ratios), width_ratios=ratios), 1
    else:
        top, first = outer[0].subgridspec(1, len(conditions)), 0
    axes: list[Axes] = []
    for index, condition in enumerate(conditions):
        ax = fig.add_subplot(top[0, first + index], sharex=axes[0] if axes else None)
        if axes:
            ax.sharey(axes[0])
        # Square panels: a plane of two PCs in one unit, however wide the ensemble's
        # rows below make the figure (one condition's panel stretched to 3.5:1).
        ax.set_box_aspect(1)
        axes.append(ax)
        one = shown.sel(condition=condition)
        if _draw_paths(ax, one, colors, lw=1.2):
            starts = one.projection.sel(_PLANE).isel(time=0).transpose("trial", "pc").values
            ax.scatter(starts[:, 0], starts[:, 1], s=15, color="k", zorder=3)
        _label_axes(ax, one.explained_variance_ratio)
        ax.set_title(f"replicate {replicate}, {condition_label(pca, condition)}", fontsize="medium")
    ensemble = outer[1].subgridspec(small_rows, small_columns)
    for index, each in enumerate(replicates):
        ax = fig.add_subplot(ensemble[index // small_columns, index % small_columns])
        one = pca.sel(replicate=each).isel(condition=0)
        _draw_paths(ax, one, colors, lw=0.8)
        ratio = one.explained_variance_ratio.sel(pc=[1, 2]).values
        ax.set_title(f"replicate {each}", fontsize="medium")
        ax.set_xlabel(
            f"PC1 (a.u.; {100 * ratio[0]:.0f}%)" if np.isfinite(ratio[0]) else "PC1 (a.u.)"
        )
        ax.set_ylabel(
            f"PC2 (a.u.; {100 * ratio[1]:.0f}%)" if np.isfinite(ratio[1]) else "PC2 (a.u.)"
        )
        ax.tick_params(labelsize="small")
        axes.append(ax)
    last = len(replicates)
    _draw_variance_shares(
        fig.add_subplot(ensemble[last // small_columns, last % small_columns]), pca
    )
    start = Line2D([], [], ls="", marker="o", ms=4, color="k", label="start (first step)")
    fig.legend(handles=[start], loc="outside lower center", fontsize="small")
    add_angle_colorbar(fig, axes[: len(conditions)])
    heading = f"top: replicate {replicate}; below: every replicate in its own space"
    if conditions[0] or len(conditions) > 1:
        heading += f" ({conditions[0] or 'unperturbed'})"
    suptitle(fig, "\n".join(filter(None, [title, heading])))
    return settled(fig)


def _draw_variance_shares(ax: Axes, pca: xr.Dataset) -> None:
    """Each replicate's share of variance per PC (a dot each) and their mean (a bar)."""
    ratio = pca.explained_variance_ratio.transpose("replicate", "pc").values
    pcs = pca.pc.values
    for column, pc in enumerate(pcs):
        shares = 100 * ratio[:, column]
        spread = np.linspace(-0.15, 0.15, shares.size) if shares.size > 1 else np.zeros(1)
        ax.scatter(pc + spread, shares, s=12, color="tab:blue", alpha=0.8, gid="replicate share")
        if np.isfinite(shares).any():
            ax.hlines(np.nanmean(shares), pc - 0.3, pc + 0.3, color="k", lw=2)
    ax.set_xticks(pcs, [f"PC{pc}" for pc in pcs])
    ax.set_ylabel("variance explained (%)")
    ax.set_ylim(bottom=0)
    ax.set_title("every replicate (dots), mean (bar)", fontsize="medium")
    ax.tick_params(labelsize="small")


def _emptiest_direction(counts: np.ndarray, edges: np.ndarray) -> float:
    """The middle of the bin farthest from the units (rad): the bins' counts, each
    weighed by its closeness around the circle (1 / (1 + bins apart)), least."""
    n = counts.size
    apart = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    apart = np.minimum(apart, n - apart)
    crowding = (counts[None, :] / (1.0 + apart)).sum(axis=1)
    best = int(np.argmin(crowding))
    return float(edges[best] + (edges[best + 1] - edges[best]) / 2)


def plot_tuning(tuning: xr.Dataset, *, title: str = "") -> Figure:
    """The units' preferred directions (a polar histogram per condition) and tuning
    depths (one histogram, a line per condition).

    Every unit of every replicate counts once; units with NaN fits (a diverged
    replicate) are left out.

    **Arguments:**

    - `tuning`: the Dataset from `directional_tuning`, with ``preferred_direction``
      (rad), ``tuning_depth`` and ``r_squared`` `(replicate, condition, unit)`.
    - `title`: figure title.
    """
    tuning = by_condition(tuning)
    conditions = list(tuning.condition.values)
    fig = Figure(figsize=(3.6 * (len(conditions) + 1), 4.0), layout="constrained")
    grid = fig.add_gridspec(1, len(conditions) + 1)
    edges = np.linspace(0, 2 * np.pi, N_DIRECTION_BINS + 1)
    depth_ax = fig.add_subplot(grid[0, -1])
    depths = tuning.tuning_depth.values[np.isfinite(tuning.tuning_depth.values)]
    depth_edges = np.histogram_bin_edges(depths, bins=20) if depths.size else None
    for index, condition in enumerate(conditions):
        ax = fig.add_subplot(grid[0, index], projection="polar")
        one = tuning.sel(condition=condition)
        direction = one.preferred_direction.values.ravel()
        direction = direction[np.isfinite(direction)]
        label = condition_label(tuning, condition)
        ax.set_title(f"{label}\npreferred direction, fraction of units", fontsize="medium")
        ax.set_xticks(*_ANGLE_TICKS)
        if not direction.size:
            no_data(ax)
            continue
        counts, _ = np.histogram(direction, edges)
        # Few radial ticks in small type, along the emptiest direction, so their
        # labels sit off the bars.
        ax.yaxis.set_major_locator(MaxNLocator(3))
        ax.tick_params(axis="y", labelsize="x-small")
        ax.set_rlabel_position(np.degrees(_emptiest_direction(counts, edges)))
        ax.bar(
            edges[:-1],
            counts / direction.size,
            width=np.diff(edges),
            align="edge",
            color=angle_colors(edges[:-1] + np.pi / N_DIRECTION_BINS),
            edgecolor="k",
            lw=0.5,
        )
        depth = one.tuning_depth.values.ravel()
        depth = depth[np.isfinite(depth)]
        r_squared = one.r_squared.values[np.isfinite(one.r_squared.values)]
        median = f"{np.median(r_squared):.2f}" if r_squared.size else "n/a"
        depth_ax.hist(
            depth,
            bins=depth_edges,
            weights=np.full(depth.size, 1 / depth.size),
            histtype="step",
            lw=1.5,
            label=f"{label} ({depth.size} units, median R² {median})",
        )
    depth_ax.set_xlabel("tuning depth of the hidden activity (a.u.)")
    depth_ax.set_ylabel("fraction of units (1)")
    if depth_ax.patches:
        fig.legend(handles=depth_ax.patches, loc="outside lower right", fontsize="small")
    else:
        no_data(depth_ax)
    suptitle(fig, title)
    return fig
