"""An arm's postures along its reaches."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ._style import (
    add_angle_colorbar,
    angle_colors,
    by_condition,
    condition_label,
    final_goal,
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
    """The arm as a stick figure (shoulder, elbow, hand) at a few time points of each
    center-out reach, a panel per condition, coloured by goal angle.

    Postures are evenly spaced in time from the first step to the last, fainter
    early and darker late; the hand's path is drawn beneath them.

    **Arguments:**

    - `states`: the Dataset from `evaluate` for an arm plant (``arm`` or
      ``muscle_arm``), with ``joint_angle`` `(replicate, condition, trial, time,
      joint)` and the model config in its attributes.
    - `replicate`: the replicate drawn.
    - `n_postures`: how many time points to draw (>= 1).
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
    fig = Figure(figsize=(4.2 * len(conditions) + 1.0, 4.4), layout="constrained")
    axes = list(fig.subplots(1, len(conditions), squeeze=False).flat)
    goals = final_goal(states)
    for index, (ax, condition) in enumerate(zip(axes, conditions)):
        elbow, hand = elbows[index], hands[index]
        for trial, color in enumerate(colors):
            ax.plot(hand[trial, :, 0], hand[trial, :, 1], color=color, lw=1.0)
            for order, step in enumerate(steps):
                alpha = 0.25 + 0.75 * (order + 1) / len(steps)
                xs = [shoulder[0], elbow[trial, step, 0], hand[trial, step, 0]]
                ys = [shoulder[1], elbow[trial, step, 1], hand[trial, step, 1]]
                ax.plot(xs, ys, "-o", color=color, alpha=alpha, lw=1.4, ms=2.5)
        goal = (
            goals.sel(condition=condition).sel(component=["x", "y"]).transpose("trial", "component")
        )
        ax.scatter(goal[:, 0], goal[:, 1], s=60, facecolors="none", edgecolors=colors, lw=1.3)
        ax.scatter(*shoulder, s=40, color="k", zorder=3)
        ax.set_title(condition_label(states, condition), fontsize="medium")
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.set_aspect("equal", adjustable="datalim")
    times = ", ".join(f"{float(states.time[step]):.2g}" for step in steps)
    add_angle_colorbar(fig, axes)
    suptitle(fig, f"{title} (replicate {replicate}, postures at t = {times} s)".strip())
    return fig
