"""Evaluated reaches: center-out trajectories and speed profiles, a row per condition."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ._style import (
    add_angle_colorbar,
    angle_colors,
    by_condition,
    condition_label,
    diverged_note,
    diverged_replicates,
    figure_legend,
    final_goal,
    label_condition_row,
    no_data,
    settled,
    square_limits,
    suptitle,
)


def plot_trajectories(states: xr.Dataset, *, max_replicates: int = 5, title: str = "") -> Figure:
    """Hand paths in the plane: a row per condition, a panel per replicate, coloured by
    goal angle.

    Goals (where each ended up, if it jumped) are open circles in their trial's
    colour; starts are black dots. Each row is labelled with its condition and what
    its perturbations are (a curl field's direction as ↻ or ↺). A replicate that
    diverged in training (coord ``diverged_at``) has its panel titled so, in red.

    **Arguments:**

    - `states`: the Dataset from `evaluate`, with ``pos`` `(replicate, condition,
      trial, time, component)`, ``goal`` and the ``goal_angle`` coord.
    - `max_replicates`: the first this many replicates are drawn.
    - `title`: figure title.
    """
    if max_replicates < 1:
        raise ValueError(f"max_replicates must be at least 1, got {max_replicates}")
    states = by_condition(states)
    xy = {"component": ["x", "y"]}
    diverged = diverged_replicates(states)
    shown = states.isel(replicate=slice(0, max_replicates))
    n_cols, n_rows = shown.sizes["replicate"], shown.sizes["condition"]
    colors = angle_colors(states.goal_angle)
    fig = Figure(figsize=(3.2 * n_cols + 1.0, 3.4 * n_rows), layout="constrained")
    grid = fig.subplots(n_rows, n_cols, squeeze=False)
    goals = final_goal(shown).sel(xy)
    # Same limits everywhere so panels compare at a glance, without sharing axes,
    # which an equal aspect ratio cannot adjust.
    points = np.concatenate([shown.pos.values.reshape(-1, 2), goals.values.reshape(-1, 2)])
    points = points[np.all(np.isfinite(points), axis=1)]
    for row, condition in enumerate(shown.condition.values):
        goal = goals.sel(condition=condition).transpose("trial", "component").values
        for col, replicate in enumerate(shown.replicate.values):
            ax = grid[row, col]
            pos = shown.pos.sel(replicate=replicate, condition=condition, **xy)
            pos = pos.transpose("trial", "time", "component").values
            for path, color in zip(pos, colors):
                ax.plot(path[:, 0], path[:, 1], color=color, lw=1.2)
            ax.scatter(
                goal[:, 0],
                goal[:, 1],
                s=70,
                facecolors="none",
                edgecolors=colors,
                lw=1.5,
                label="goal",
            )
            ax.scatter(pos[:, 0, 0], pos[:, 0, 1], s=15, color="k", zorder=3, label="start")
            if int(replicate) in diverged:
                ax.set_title(
                    f"replicate {replicate}: diverged at batch {diverged[int(replicate)]}",
                    fontsize="medium",
                    color="tab:red",
                )
            else:
                ax.set_title(f"replicate {replicate}", fontsize="medium")
            ax.set_xlabel("x (m)")
            ax.set_ylabel("y (m)")
            square_limits(ax, points)
        if n_rows > 1 or condition:
            label_condition_row(grid[row, 0], states, condition)
    _marker_legend(fig)
    add_angle_colorbar(fig, list(grid.flat))
    n_total = states.sizes["replicate"]
    if n_cols < n_total:
        title = f"{title} (first {n_cols} of {n_total} replicates)".strip()
    suptitle(fig, title)
    return settled(fig)


def _marker_legend(fig: Figure) -> None:
    """What the goal and start marks are, below the panels (never over a path or goal)."""
    handles = [
        Line2D([], [], marker="o", ms=8, mfc="none", mec="k", ls="none", label="goal"),
        Line2D([], [], marker="o", ms=4, color="k", ls="none", label="start"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize="small")


def _mark_go_cue(ax, states: xr.Dataset) -> None:
    """A dashed line at each distinct go time of a delayed reach's trials."""
    if "go_time" not in states.coords:
        return
    for index, go_time in enumerate(np.unique(states.go_time.values)):
        label = "go cue" if index == 0 else None
        ax.axvline(go_time, color="0.3", ls="--", lw=1, label=label)


def plot_speed_profiles(states: xr.Dataset, *, title: str = "") -> Figure:
    """Hand speed against time, a panel per condition, a line per trial coloured by goal
    angle.

    Each line is the mean across replicates; the shading around it is the
    min–max range across replicates.

    **Arguments:**

    - `states`: the Dataset from `evaluate`, with ``vel`` `(replicate, condition,
      trial, time, component)` and the ``time`` (s) and ``goal_angle`` coords; a
      ``go_time`` coord (delayed reaches) is drawn as a dashed line.
    - `title`: figure title.
    """
    states = by_condition(states)
    speeds = np.sqrt((states.vel**2).sum("component", skipna=False))
    time = states.time.values
    colors = angle_colors(states.goal_angle)
    n_conditions = states.sizes["condition"]
    fig = Figure(figsize=(6.0, 3.6 * n_conditions), layout="constrained")
    axes = fig.subplots(n_conditions, 1, squeeze=False, sharex=True)[:, 0]
    n_replicates = states.sizes["replicate"]
    for ax, condition in zip(axes, states.condition.values):
        speed = speeds.sel(condition=condition).transpose("trial", "replicate", "time")
        for trial_speed, color in zip(speed.values, colors):
            finite = np.isfinite(trial_speed).any(axis=0)
            if not finite.any():
                continue
            per_time = trial_speed[:, finite]
            ax.fill_between(
                time[finite],
                np.nanmin(per_time, 0),
                np.nanmax(per_time, 0),
                color=color,
                alpha=0.15,
                lw=0,
            )
            ax.plot(time[finite], np.nanmean(per_time, 0), color=color, lw=1.5)
        if not ax.lines:
            no_data(ax)
        _mark_go_cue(ax, states)
        heading = f"mean (line) and min–max (band) of {n_replicates} replicate(s)"
        if n_conditions > 1 or condition:
            heading = f"{condition_label(states, condition)}\n{heading}"
        ax.set_title(heading, fontsize="medium")
        ax.set_ylabel("speed (m/s)")
        ax.set_ylim(bottom=0)
    axes[-1].set_xlabel("time (s)")
    figure_legend(fig, list(axes))
    add_angle_colorbar(fig, list(axes))
    suptitle(fig, "\n".join(filter(None, [title, diverged_note(diverged_replicates(states))])))
    return fig
