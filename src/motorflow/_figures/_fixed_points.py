"""The fixed-point figure: the points found under each goal on the plane where the
trials' end states spread, and their Jacobians' eigenvalues against the unit circle.

Like `motorflow._figures`, every function builds a standalone `Figure` (no pyplot).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ._style import add_angle_colorbar, angle_colors, no_data, settled, suptitle


def _plane_axes(fixed_points: xr.Dataset, pca: xr.Dataset | None, replicate: int):
    """The plane's mean `(unit,)`, loadings `(2, unit)`, trajectories `(trial, time, 2)`
    (or None) and axis labels: the end states' plane when the analysis holds it, else
    the trajectories' PC1–PC2 of the first condition (older stores)."""
    if "end_plane_loading" in fixed_points:
        one = fixed_points.sel(replicate=replicate)
        ratio = one.end_plane_ratio.values
        labels = [
            f"end-state PC{k + 1} (a.u.; {100 * r:.1f}% of end-state variance)"
            if np.isfinite(r)
            else f"end-state PC{k + 1} (a.u.)"
            for k, r in enumerate(ratio[:2])
        ]
        paths = one.end_plane_projection.isel(end_pc=[0, 1]).transpose("trial", "time", "end_pc")
        loading = one.end_plane_loading.isel(end_pc=[0, 1]).transpose("end_pc", "unit")
        return one.end_plane_mean.values, loading.values, paths.values, labels
    if pca is None:
        raise ValueError("the fixed points hold no end-state plane and no PCA was given")
    one = pca.sel(replicate=replicate)
    if "condition" in one.dims:
        one = one.isel(condition=0)
    one = one.sel(pc=[1, 2])
    ratio = one.explained_variance_ratio.values
    labels = [f"PC{k + 1} (a.u.; {100 * r:.1f}% of variance)" for k, r in enumerate(ratio)]
    paths = one.projection.transpose("trial", "time", "pc").values
    return one["mean"].values, one.loading.transpose("pc", "unit").values, paths, labels


def _eigenvalue_panel(ax: Axes, found: xr.Dataset, kept: np.ndarray, colors: np.ndarray) -> None:
    """Each kept point's Jacobian eigenvalues in the complex plane, with the unit circle
    (a discrete-time map's point is stable when all lie inside it)."""
    theta = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.cos(theta), np.sin(theta), color="0.4", lw=1.0, ls="--")
    if "eigenvalue_real" not in found or not kept.any():
        no_data(ax, "no fixed points")
    else:
        real = found.eigenvalue_real.transpose("trial", "start", "mode").values[kept]
        imag = found.eigenvalue_imag.transpose("trial", "start", "mode").values[kept]
        color = np.repeat(colors[kept], real.shape[-1], axis=0)
        ax.scatter(real.ravel(), imag.ravel(), s=10, c=color, alpha=0.7, linewidths=0)
    ax.set_aspect("equal")
    ax.set_xlabel("Re λ (1)")
    ax.set_ylabel("Im λ (1)")
    ax.set_title("Jacobian eigenvalues (circle: |λ| = 1)", fontsize="medium")


def plot_fixed_points(
    fixed_points: xr.Dataset,
    pca: xr.Dataset | None = None,
    *,
    replicate: int = 0,
    title: str = "",
) -> Figure:
    """One replicate's distinct converged fixed points, with the trials' end states.

    Left: the plane of the PCA of the trials' end states (``end_plane_*`` from
    `end_state_plane`; without them, the trajectories' PC1–PC2 from `pca`), where the
    points found under the different goals separate; the hidden trajectories are
    faint, each trial's end state is a cross and each point a circle, filled when
    stable and open when unstable, all coloured by the goal angle of the input. Right:
    the Jacobian eigenvalues of those points against the unit circle.

    **Arguments:**

    - `fixed_points`: the Dataset from `FixedPointsAnalysis` (or `find_fixed_points`),
      with ``fixed_point`` `(replicate, trial, start, unit)`, ``converged``,
      ``distinct`` and ``stable``; its ``goal_angle`` coord (or else the PCA's)
      colours the points.
    - `pca`: the Dataset from `hidden_pca`, used only without an end-state plane.
    - `replicate`: the replicate drawn.
    - `title`: figure title.
    """
    mean, loading, paths, labels = _plane_axes(fixed_points, pca, replicate)
    found = fixed_points.sel(replicate=replicate)
    fig = Figure(figsize=(10.5, 5.4), layout="constrained")
    ax, eig_ax = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.25, 1]})
    angle = found.goal_angle if "goal_angle" in found.coords else pca.goal_angle
    trial_colors = angle_colors(angle)
    if np.isfinite(paths).any():
        for path, color in zip(paths, trial_colors):
            ax.plot(path[:, 0], path[:, 1], color=color, lw=1.0, alpha=0.3)
        ends = paths[:, -1]
        ax.scatter(*ends.T, s=60, marker="x", c=trial_colors, zorder=3, label="end state")
    else:
        no_data(ax, "no data (NaN states)")
    points = found.fixed_point.transpose("trial", "start", "unit").values
    projected = (points - mean) @ loading.T
    colors = np.broadcast_to(trial_colors[:, None], (*projected.shape[:2], 4))
    kept = (found.converged & found.distinct).transpose("trial", "start").values
    stable = found.stable.transpose("trial", "start").values
    filled, hollow = kept & stable, kept & ~stable
    ax.scatter(
        *projected[filled].T, s=70, c=colors[filled], edgecolors="k", zorder=4, label="stable"
    )
    ax.scatter(
        *projected[hollow].T,
        s=70,
        facecolors="none",
        edgecolors=colors[hollow],
        linewidths=2.0,
        zorder=4,
        label="unstable",
    )
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.set_title("fixed points under each goal's steady input", fontsize="medium")
    _eigenvalue_panel(eig_ax, found, kept, colors)
    marker = {"ls": "", "marker": "o", "ms": 8}
    handles = [
        Line2D([], [], color="0.5", alpha=0.5, label="hidden trajectory"),
        Line2D([], [], ls="", marker="x", ms=8, color="0.3", label="end state"),
        Line2D([], [], **marker, mfc="0.5", mec="k", label="stable fixed point"),
        Line2D([], [], **marker, mfc="none", mec="0.3", mew=2, label="unstable fixed point"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize="small")
    add_angle_colorbar(fig, [ax, eig_ax])
    counts = f"{int(kept.sum())} fixed points found, {int(filled.sum())} stable"
    suptitle(fig, "\n".join(filter(None, [title, f"replicate {replicate}: {counts}"])))
    return settled(fig)
