"""An arm's postures along its reaches."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ._style import (
    add_angle_colorbar,
    angle_colors,
    by_condition,
    final_goal,
    label_condition_row,
    settled,
    square_limits,
    suptitle,
)


def _arm_joints(angles: np.ndarray, arm: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shoulder, elbow and hand positions from joint angles `(..., joint)` and the arm's
    settings; elbow and hand are `(..., 2)`."""
    shoulder_angle, elbow_angle = angles[..., 0], angles[..., 1]
    shoulder = np.asarray(arm["shoulder_pos"], dtype=float)
    elbow = shoulder + arm["upper_arm_length"] * np.stack(
        [np.cos(shoulder_angle), np.sin(shoulder_angle)], -1
    )
    forearm = shoulder_angle + elbow_angle
    hand = elbow + arm["forearm_length"] * np.stack([np.cos(forearm), np.sin(forearm)], -1)
    return shoulder, elbow, hand


def plot_arm_postures(
    states: xr.Dataset, *, replicate: int = 0, n_postures: int = 3, title: str = ""
) -> Figure:
    """The arm as a stick figure (shoulder, elbow, hand) along its center-out reaches:
    small multiples, a row per condition and a column per time point, each panel the
    arm of every reach at that time, coloured by goal angle.

    Time points are evenly spaced from the first step to the last. Every panel shows
    all hand paths thin beneath the arms, the goals as open circles and the shoulder
    as a black dot, so that one arm per reach is drawn in a panel (postures of
    different times never pile up on each other).

    **Arguments:**

    - `states`: the Dataset from `evaluate` for an arm plant (``arm`` or
      ``muscle_arm``), with ``joint_angle`` `(replicate, condition, trial, time,
      joint)` and the model config in its attributes.
    - `replicate`: the replicate drawn.
    - `n_postures`: how many time points to draw (>= 1), a column each.
    - `title`: figure title.
    """
    if "joint_angle" not in states:
        raise ValueError("the states hold no joint angles: the arm figure needs an arm plant")
    if n_postures < 1:
        raise ValueError(f"n_postures must be at least 1, got {n_postures}")
    states = by_condition(states).sel(replicate=replicate)
    arm = json.loads(states.attrs["model_config"])["plant"]
    angles = states.joint_angle.transpose("condition", "trial", "time", "joint").values
    shoulder, elbows, hands = _arm_joints(angles, arm)
    colors = angle_colors(states.goal_angle)
    steps = np.unique(np.linspace(0, states.sizes["time"] - 1, n_postures).round().astype(int))
    conditions = list(states.condition.values)
    fig = Figure(
        figsize=(3.0 * len(steps) + 1.2, 3.2 * len(conditions) + 0.8), layout="constrained"
    )
    grid = fig.subplots(len(conditions), len(steps), squeeze=False, sharex=True, sharey=True)
    goals = final_goal(states).sel(component=["x", "y"])
    # One square frame for every panel (shared axes cannot adjust an equal aspect).
    points = np.concatenate(
        [
            shoulder[None],
            elbows.reshape(-1, 2),
            hands.reshape(-1, 2),
            goals.transpose(..., "component").values.reshape(-1, 2),
        ]
    )
    points = points[np.all(np.isfinite(points), axis=1)]
    for row, condition in enumerate(conditions):
        elbow, hand = elbows[row], hands[row]
        goal = goals.sel(condition=condition).transpose("trial", "component").values
        for column, step in enumerate(steps):
            ax = grid[row, column]
            for trial, color in enumerate(colors):
                ax.plot(hand[trial, :, 0], hand[trial, :, 1], color=color, lw=0.7, alpha=0.5)
            for trial, color in enumerate(colors):
                xs = [shoulder[0], elbow[trial, step, 0], hand[trial, step, 0]]
                ys = [shoulder[1], elbow[trial, step, 1], hand[trial, step, 1]]
                ax.plot(xs, ys, "-o", color=color, lw=1.6, ms=3)
            ax.scatter(goal[:, 0], goal[:, 1], s=50, facecolors="none", edgecolors=colors, lw=1.2)
            ax.scatter(*shoulder, s=40, color="k", zorder=3)
            ax.set_title(f"t = {float(states.time[step]):.2g} s", fontsize="medium")
            square_limits(ax, points)
            if row == len(conditions) - 1:
                ax.set_xlabel("x (m)")
            if column == 0:
                ax.set_ylabel("y (m)")
        if len(conditions) > 1 or condition:
            label_condition_row(grid[row, 0], states, condition)
    _arm_legend(fig)
    add_angle_colorbar(fig, list(grid.flat))
    suptitle(fig, f"{title} (replicate {replicate})".strip())
    return settled(fig)


def _arm_legend(fig: Figure) -> None:
    """What the marks are, below the panels."""
    handles = [
        Line2D([], [], color="0.3", lw=1.6, marker="o", ms=3, label="arm: shoulder–elbow–hand"),
        Line2D([], [], color="0.3", lw=0.7, alpha=0.5, label="hand path"),
        Line2D([], [], marker="o", ms=7, mfc="none", mec="0.3", ls="none", label="goal"),
        Line2D([], [], marker="o", ms=6, color="k", ls="none", label="shoulder"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize="small")
