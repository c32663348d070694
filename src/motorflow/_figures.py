"""Figures of training histories, evaluated reaches and protocols.

Every function builds a standalone `matplotlib.figure.Figure` (no pyplot, so the
global backend is never touched) and leaves saving to the caller.
"""

from __future__ import annotations

import json
import math

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure

ANGLE_CMAP = "hsv"  # cyclic, and unlike "twilight" never fades into a white background
TRAIN_COLOR = "tab:blue"
VALIDATION_COLOR = "tab:orange"


def _angle_colors(goal_angle: xr.DataArray) -> np.ndarray:
    """RGBA per trial from its goal angle on a cyclic colormap, shape `(trial, 4)`."""
    turns = np.mod(np.asarray(goal_angle, dtype=float), 2 * np.pi) / (2 * np.pi)
    return mpl.colormaps[ANGLE_CMAP](turns)


def _add_angle_colorbar(fig: Figure, axes: Axes | list[Axes]) -> None:
    mappable = mpl.cm.ScalarMappable(
        norm=mpl.colors.Normalize(0, 2 * np.pi), cmap=mpl.colormaps[ANGLE_CMAP]
    )
    colorbar = fig.colorbar(mappable, ax=axes, shrink=0.8)
    colorbar.set_label("goal angle (rad)")
    colorbar.set_ticks(
        [0, np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi], labels=["0", "π/2", "π", "3π/2", "2π"]
    )


def _log_scale_if_possible(ax: Axes, values: np.ndarray) -> None:
    """Log y when every finite value is positive; symlog when some are zero; else linear.

    A loss term that is switched off is exactly zero, which a plain log axis would
    silently drop.
    """
    finite = values[np.isfinite(values)]
    nonzero = np.abs(finite[finite != 0])
    if finite.size and np.all(finite > 0):
        ax.set_yscale("log")
    elif nonzero.size:
        ax.set_yscale("symlog", linthresh=float(nonzero.min()))


def _no_data(ax: Axes, text: str = "no data") -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.5")


def _suptitle(fig: Figure, title: str) -> None:
    if title:
        fig.suptitle(title)


def diverged_replicates(dataset: xr.Dataset) -> dict[int, int]:
    """Replicate -> the batch it diverged at, from `dataset`'s ``diverged_at`` (a
    history variable or a states/metrics coord; none: nothing diverged)."""
    if "diverged_at" not in dataset.variables:
        return {}
    diverged_at = dataset["diverged_at"]
    return {
        int(replicate): int(batch)
        for replicate, batch in zip(diverged_at.replicate.values, diverged_at.values)
        if batch >= 0
    }


def _diverged_note(diverged: dict[int, int]) -> str:
    if not diverged:
        return ""
    which = ", ".join(f"{r} at batch {b}" for r, b in diverged.items())
    return f"diverged and frozen: replicate {which}"


# Thin lines for each term's weighted part of the total; none of the panels' own colours.
CONTRIBUTION_COLORS = ("tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")


def _loss_weights(history: xr.Dataset) -> dict[str, float]:
    """Each loss term's weight in the total, from the history's ``experiment`` settings
    (empty when the history does not carry them)."""
    try:
        loss = json.loads(history.attrs["experiment"])["training"]["loss"]
        return {term: float(settings["weight"]) for term, settings in loss.items()}
    except (KeyError, TypeError, ValueError):
        return {}


def _loss_panel_title(term: str, weights: dict[str, float]) -> str:
    if term == "total":
        return "total (weighted sum of the terms)"
    if term in weights:
        return f"{term}, unweighted (weight {weights[term]:g})"
    return f"{term}, unweighted"


def _plot_contributions(
    ax: Axes, loss: xr.DataArray, batches: np.ndarray, weights: dict[str, float]
) -> list[np.ndarray]:
    """On the total's panel, each term's weighted part of it (weight × mean across
    replicates) as a thin line; terms that add nothing (all zero, or unrecorded) are
    left out. Returns the values drawn."""
    drawn = []
    terms = [t for t in loss.term.values if t != "total" and t in weights]
    for index, term in enumerate(terms):
        part = weights[term] * loss.sel(term=term, batch=batches).mean("replicate").values
        finite = part[np.isfinite(part)]
        if not finite.size or not np.any(finite != 0):
            continue
        color = CONTRIBUTION_COLORS[index % len(CONTRIBUTION_COLORS)]
        label = f"part of total: {term} × {weights[term]:g}"
        ax.plot(batches, part, color=color, lw=0.8, label=label)
        drawn.append(part)
    return drawn


def _figure_legend(fig: Figure, axes: list[Axes]) -> None:
    """One legend below the panels (never over data), each label once."""
    entries: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        fig.legend(
            list(entries.values()),
            list(entries),
            loc="outside lower center",
            ncols=min(len(entries), 4),
            fontsize="small",
        )


def plot_loss_history(history: xr.Dataset, *, title: str = "") -> Figure:
    """Training and validation loss against batch, one panel per loss term.

    Each panel shows the training loss as its mean across replicates with the
    min–max range across replicates shaded, and the validation loss (mean across
    replicates) at its validation steps. Batches that have not run (NaN) are left
    out. The ``total`` term (the weighted sum) comes first, with each term's weighted
    part of it (weight × the term's mean across replicates) as thin lines, so that
    the term that dominates shows; the other panels hold a term's unweighted values,
    their titles its weight (read from the history's ``experiment`` attribute). A
    replicate that diverged (``diverged_at``) is marked by a dotted red line at its
    batch and named in the title. One legend sits below the panels.

    **Arguments:**

    - `history`: the Dataset from `history_dataset`, with ``loss`` `(term, batch,
      replicate)` and ``validation_loss`` `(term, validation_step, replicate)`.
    - `title`: figure title.
    """
    diverged = diverged_replicates(history)
    weights = _loss_weights(history)
    terms = list(history.term.values)
    terms = ["total", *(t for t in terms if t != "total")] if "total" in terms else terms
    n_cols = min(len(terms), 3)
    n_rows = math.ceil(len(terms) / n_cols)
    fig = Figure(figsize=(4.2 * n_cols, 3.2 * n_rows + 0.6), layout="constrained")
    grid = fig.subplots(n_rows, n_cols, squeeze=False)
    for ax in grid.flat[len(terms) :]:
        fig.delaxes(ax)
    n_replicates = history.sizes["replicate"]
    for ax, term in zip(grid.flat, terms):
        loss = history.loss.sel(term=term)
        loss = loss.isel(batch=loss.notnull().any("replicate").values)
        validation = history.validation_loss.sel(term=term)
        validation = validation.isel(validation_step=validation.notnull().any("replicate").values)
        ax.set_title(_loss_panel_title(term, weights))
        ax.set_xlabel("batch")
        ax.set_ylabel("loss")
        if loss.sizes["batch"] == 0 and validation.sizes["validation_step"] == 0:
            _no_data(ax)
            continue
        ax.fill_between(
            loss.batch,
            loss.min("replicate"),
            loss.max("replicate"),
            color=TRAIN_COLOR,
            alpha=0.25,
            linewidth=0,
            label=f"train, min–max of {n_replicates}",
        )
        ax.plot(loss.batch, loss.mean("replicate"), color=TRAIN_COLOR, lw=1, label="train, mean")
        ax.plot(
            validation.validation_step,
            validation.mean("replicate"),
            "o-",
            color=VALIDATION_COLOR,
            ms=4,
            lw=1.5,
            label="validation, mean",
        )
        parts = []
        if term == "total":
            parts = _plot_contributions(ax, history.loss, loss.batch.values, weights)
        for index, batch in enumerate(sorted(set(diverged.values()))):
            ax.axvline(
                batch, color="tab:red", ls=":", lw=1.2, label="a replicate diverged" * (index == 0)
            )
        values = [loss.values.ravel(), validation.values.ravel(), *parts]
        _log_scale_if_possible(ax, np.concatenate(values))
    _figure_legend(fig, list(grid.flat[: len(terms)]))
    _suptitle(fig, "\n".join(filter(None, [title, _diverged_note(diverged)])))
    return fig


def _final_goal(states: xr.Dataset) -> xr.DataArray:
    """The goal at the last step (where a jumped target ended up), without a time dim."""
    return states.goal.isel(time=-1) if "time" in states.goal.dims else states.goal


def _by_condition(states: xr.Dataset) -> xr.Dataset:
    """`states` with a `condition` dim (a store from before conditions gets one, unnamed)."""
    if "condition" in states.dims:
        return states
    return states.expand_dims(condition=[""])


_CURL_ARROWS = {"cw": "↻", "ccw": "↺"}


def _describe(perturbation: dict) -> str:
    """A perturbation's settings in a few words, e.g. ``curl ↻ 10 N s/m``."""
    kind = perturbation["kind"]

    def value(name: str) -> str:
        setting = perturbation[name]
        return f"{setting[0]:g}–{setting[1]:g}" if isinstance(setting, list) else f"{setting:g}"

    if kind == "curl":
        return f"curl {_CURL_ARROWS[perturbation['direction']]} {value('strength')} N s/m"
    if kind == "constant_field":
        return f"field {value('strength')} N at {value('angle')}°"
    if kind == "force_pulse":
        return f"pulse {value('amplitude')} N at {value('angle')}° from {value('start')} s"
    if kind == "feedback_offset":
        return f"feedback +{value('distance')} m at {value('angle')}° from {value('start')} s"
    if kind == "target_jump":
        return f"jump {value('distance')} m at {value('angle')}° at {value('time')} s"
    return kind


def condition_label(states: xr.Dataset, condition: str) -> str:
    """The condition's name and what its perturbations are (from the states' attrs)."""
    described = json.loads(states.attrs.get("conditions", "{}")).get(condition)
    if not described:
        return condition or "unperturbed"
    return f"{condition}: " + ", ".join(_describe(p) for p in described)


def _square_limits(ax: Axes, points: np.ndarray) -> None:
    if len(points):
        low, high = points.min(0), points.max(0)
        half = max(float((high - low).max()) / 2 * 1.1, 1e-3)
        center = (low + high) / 2
        ax.set_xlim(center[0] - half, center[0] + half)
        ax.set_ylim(center[1] - half, center[1] + half)
    ax.set_aspect("equal", adjustable="box")


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
    states = _by_condition(states)
    xy = {"component": ["x", "y"]}
    diverged = diverged_replicates(states)
    shown = states.isel(replicate=slice(0, max_replicates))
    n_cols, n_rows = shown.sizes["replicate"], shown.sizes["condition"]
    colors = _angle_colors(states.goal_angle)
    fig = Figure(figsize=(3.2 * n_cols + 1.0, 3.4 * n_rows), layout="constrained")
    grid = fig.subplots(n_rows, n_cols, squeeze=False)
    goals = _final_goal(shown).sel(xy)
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
            _square_limits(ax, points)
        if n_rows > 1 or condition:
            grid[row, 0].annotate(
                condition_label(states, condition),
                xy=(0, 1.12),
                xycoords="axes fraction",
                fontweight="bold",
                annotation_clip=False,
            )
    grid[0, 0].legend(fontsize="small", loc="best")
    _add_angle_colorbar(fig, list(grid.flat))
    n_total = states.sizes["replicate"]
    if n_cols < n_total:
        title = f"{title} (first {n_cols} of {n_total} replicates)".strip()
    _suptitle(fig, title)
    return fig


def _mark_go_cue(ax, states: xr.Dataset) -> None:
    """A dashed line at each distinct go time of a delayed reach's trials."""
    if "go_time" not in states.coords:
        return
    for index, go_time in enumerate(np.unique(states.go_time.values)):
        label = "go cue" if index == 0 else None
        ax.axvline(go_time, color="0.3", ls="--", lw=1, label=label)
    ax.legend(loc="upper right", fontsize="small")


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
    states = _by_condition(states)
    speeds = np.sqrt((states.vel**2).sum("component", skipna=False))
    time = states.time.values
    colors = _angle_colors(states.goal_angle)
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
            _no_data(ax)
        _mark_go_cue(ax, states)
        heading = f"mean (line) and min–max (band) of {n_replicates} replicate(s)"
        if n_conditions > 1 or condition:
            heading = f"{condition_label(states, condition)}\n{heading}"
        ax.set_title(heading, fontsize="medium")
        ax.set_ylabel("speed (m/s)")
        ax.set_ylim(bottom=0)
    axes[-1].set_xlabel("time (s)")
    _add_angle_colorbar(fig, list(axes))
    _suptitle(fig, "\n".join(filter(None, [title, _diverged_note(diverged_replicates(states))])))
    return fig


def protocol_summary(
    metrics: dict[str, xr.Dataset], *, metric: str = "max_lateral_deviation"
) -> xr.DataArray:
    """A protocol's numbers: `metric` averaged over trials, dims `(stage, condition,
    replicate)`.

    **Arguments:**

    - `metrics`: stage (experiment) name to its `reach_metrics` Dataset, in order; the
      stages must share their conditions and replicate count.
    - `metric`: the per-trial metric.
    """
    per_stage = [
        _by_condition(stage_metrics)[metric].mean("trial").reset_coords(drop=True)
        for stage_metrics in metrics.values()
    ]
    summary = xr.concat(per_stage, dim=xr.DataArray(list(metrics), dims="stage", name="stage"))
    summary.name = metric
    summary.attrs["units"] = per_stage[0].attrs.get("units", "")
    return summary.transpose("stage", "condition", "replicate")


def plot_protocol(summary: xr.DataArray, *, title: str = "") -> Figure:
    """A metric across the stages of a protocol, a panel per evaluation condition.

    Each replicate is a thin line through the stages; the mean across replicates is a
    thick line with markers. A dashed line marks zero (a straight reach has no
    lateral deviation; positive is to the left of the movement).

    **Arguments:**

    - `summary`: the DataArray from `protocol_summary`, dims `(stage, condition,
      replicate)`.
    - `title`: figure title.
    """
    conditions = list(summary.condition.values)
    stages = list(summary.stage.values)
    fig = Figure(figsize=(3.0 + 1.0 * len(stages), 3.0 * len(conditions)), layout="constrained")
    axes = fig.subplots(len(conditions), 1, squeeze=False, sharex=True)[:, 0]
    x = np.arange(len(stages))
    units = summary.attrs.get("units", "")
    for ax, condition in zip(axes, conditions):
        values = summary.sel(condition=condition).transpose("stage", "replicate").values
        ax.plot(x, values, color="0.6", lw=0.8, alpha=0.8)
        ax.plot(x, np.nanmean(values, axis=1), "o-", color="k", lw=2.2, ms=6, label="mean")
        ax.axhline(0.0, color="0.3", lw=0.8, ls="--")
        ax.set_title(f"evaluated in: {condition}" if condition else "", fontsize="medium")
        ax.set_ylabel(f"{summary.name} ({units})" if units else str(summary.name))
    axes[0].plot(
        [], [], color="0.6", lw=0.8, label=f"each of {summary.sizes['replicate']} replicates"
    )
    axes[0].legend(fontsize="small")
    axes[-1].set_xticks(x, stages)
    axes[-1].set_xlabel("stage (experiment)")
    _suptitle(fig, title)
    return fig


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
    states = _by_condition(states).sel(replicate=replicate)
    arm = json.loads(states.attrs["model_config"])["plant"]
    angles = states.joint_angle.transpose("condition", "trial", "time", "joint").values
    shoulder, elbows, hands = _arm_joints(angles, arm)
    colors = _angle_colors(states.goal_angle)
    steps = np.unique(np.linspace(0, states.sizes["time"] - 1, n_postures).round().astype(int))
    conditions = list(states.condition.values)
    fig = Figure(figsize=(4.2 * len(conditions) + 1.0, 4.4), layout="constrained")
    axes = list(fig.subplots(1, len(conditions), squeeze=False).flat)
    goals = _final_goal(states)
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
    _add_angle_colorbar(fig, axes)
    _suptitle(fig, f"{title} (replicate {replicate}, postures at t = {times} s)".strip())
    return fig
