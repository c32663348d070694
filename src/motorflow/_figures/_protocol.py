"""A chained protocol's figure: the paper's panels of hand paths, the learning curve
along the stages' batches, and a metric per stage (each optional but the last)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure

from ._style import (
    angle_colors,
    axis_label,
    by_condition,
    condition_label,
    final_goal,
    settled,
    square_limits,
    suptitle,
)

if TYPE_CHECKING:
    import jax

REPLICATE_COLOR = "0.6"


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
        by_condition(stage_metrics)[metric].mean("trial").reset_coords(drop=True)
        for stage_metrics in metrics.values()
    ]
    summary = xr.concat(per_stage, dim=xr.DataArray(list(metrics), dims="stage", name="stage"))
    summary.name = metric
    summary.attrs["units"] = per_stage[0].attrs.get("units", "")
    return summary.transpose("stage", "condition", "replicate")


def protocol_curve(
    curves: Mapping[str, xr.Dataset],
    *,
    metric: str = "max_lateral_deviation",
    stage_batches: Mapping[str, int],
) -> xr.DataArray:
    """The learning curve across stages: `metric` averaged over trials at each snapshot,
    dims `(point, condition, replicate)`, with coords ``stage`` and ``batch`` along
    `point` (batches from the start of the first stage here, each stage following the
    one before after its `stage_batches`).

    **Arguments:**

    - `curves`: stage (experiment) name to its learning curve (the metrics of each
      snapshot, dim ``snapshot_step``), in order.
    - `metric`: the per-trial metric.
    - `stage_batches`: each stage's batches trained.
    """
    parts, offset = [], 0
    for stage, curve in curves.items():
        values = by_condition(curve)[metric].mean("trial").reset_coords(drop=True)
        steps = values.snapshot_step.values
        values = values.rename(snapshot_step="point").drop_vars("point", errors="ignore")
        parts.append(
            values.assign_coords(
                batch=("point", steps + offset), stage=("point", [stage] * len(steps))
            )
        )
        offset += stage_batches[stage]
    combined = xr.concat(parts, dim="point")
    combined.name = metric
    combined.attrs["units"] = parts[0].attrs.get("units", "")
    return combined.transpose("point", "condition", "replicate")


def curve_interval(
    curve: xr.DataArray, *, key: jax.Array, n_resamples: int, confidence: float
) -> xr.DataArray:
    """Bootstrap interval of the mean over replicates at each point and condition
    (:func:`bootstrap_interval`), dims `(bound, point, condition)` with bound ``low``,
    ``high``; each cell's resamples follow from `key` and the cell's stage, batch
    and condition."""
    # JAX loads here, not with the module: a figure job without a curve never needs it.
    from .._analysis._bootstrap import bootstrap_interval

    bounds = np.full((2, curve.sizes["point"], curve.sizes["condition"]), np.nan)
    for i, (stage, batch) in enumerate(zip(curve.stage.values, curve.batch.values)):
        for j, condition in enumerate(curve.condition.values):
            bounds[:, i, j] = bootstrap_interval(
                curve.isel(point=i, condition=j).values,
                key=key,
                n_resamples=n_resamples,
                confidence=confidence,
                path=(str(stage), int(batch), str(condition)),
            )
    return xr.DataArray(
        bounds,
        dims=("bound", "point", "condition"),
        coords={"bound": ["low", "high"], **curve.drop_vars("replicate", errors="ignore").coords},
    )


def _label(name: str, units: str) -> str:
    return axis_label(name, units)


def _draw_paths(
    fig: SubFigure,
    states: Mapping[str, xr.Dataset],
    panels: Sequence[Mapping[str, str]],
    summary: xr.DataArray,
) -> None:
    """A panel per (stage, condition): each replicate's hand paths thin, their mean
    over replicates thick, coloured by reach direction; the stage's metric in the
    corner."""
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    xy = {"component": ["x", "y"]}
    points = []
    for ax, panel in zip(axes, panels):
        stage_states = by_condition(states[panel["stage"]]).sel(condition=panel["condition"])
        pos = stage_states.pos.sel(xy).transpose("replicate", "trial", "time", "component").values
        goals = final_goal(stage_states).sel(xy).transpose("trial", "component").values
        colors = angle_colors(stage_states.goal_angle)
        for trial, color in enumerate(colors):
            for path in pos[:, trial]:
                ax.plot(path[:, 0], path[:, 1], color=color, lw=0.6, alpha=0.35)
            mean = np.nanmean(pos[:, trial], axis=0)
            ax.plot(mean[:, 0], mean[:, 1], color=color, lw=1.8)
        ax.scatter(goals[:, 0], goals[:, 1], s=60, facecolors="none", edgecolors=colors, lw=1.3)
        ax.scatter(pos[0, :, 0, 0], pos[0, :, 0, 1], s=12, color="k", zorder=3)
        where = f"{panel['stage']} in {panel['condition']}"
        ax.set_title(
            f"{panel['title']}\n{where}" if panel.get("title") else where, fontsize="medium"
        )
        value = float(
            summary.sel(stage=panel["stage"], condition=panel["condition"]).mean("replicate")
        )
        units = summary.attrs.get("units", "")
        # Below the axes, never over the paths.
        ax.set_xlabel(f"x (m)\n{str(summary.name).replace('_', ' ')}: {value:.3g} {units}")
        points.append(pos.reshape(-1, 2))
        points.append(goals)
    axes[0].set_ylabel("y (m)")
    every = np.concatenate(points)
    every = every[np.all(np.isfinite(every), axis=1)]
    for ax in axes:
        square_limits(ax, every)
    fig.suptitle("hand paths: each replicate thin, their mean thick", fontsize="medium")


def _stage_boundaries(ax: Axes, curve: xr.DataArray) -> None:
    """A dashed line where each stage starts, its name above."""
    stages = list(dict.fromkeys(curve.stage.values))
    for stage in stages:
        start = float(curve.batch.values[curve.stage.values == stage].min())
        ax.axvline(start, color="0.3", lw=0.8, ls=":")
        ax.text(
            start,
            1.0,
            f" {stage}",
            transform=ax.get_xaxis_transform(),
            fontsize="small",
            va="bottom",
            ha="left",
        )


def _draw_curve(
    fig: SubFigure,
    curve: xr.DataArray,
    interval: xr.DataArray | None,
    conditions: Sequence[str],
    states: xr.Dataset | None,
) -> None:
    """A panel per condition: the metric along the batches, per replicate and mean
    with its interval, one segment per stage."""
    axes = fig.subplots(1, len(conditions), squeeze=False, sharex=True)[0]
    units = curve.attrs.get("units", "")
    for ax, condition in zip(axes, conditions):
        for stage in dict.fromkeys(curve.stage.values):
            part = curve.sel(condition=condition).isel(point=curve.stage.values == stage)
            batch = part.batch.values
            ax.plot(
                batch,
                part.transpose("point", "replicate").values,
                color=REPLICATE_COLOR,
                lw=0.7,
                alpha=0.8,
            )
            ax.plot(
                batch,
                part.mean("replicate").values,
                color="k",
                lw=2.0,
                label="mean" if stage == curve.stage.values[0] else None,
            )
            if interval is not None:
                bounds = interval.sel(condition=condition).isel(point=curve.stage.values == stage)
                ax.fill_between(
                    batch,
                    bounds.sel(bound="low"),
                    bounds.sel(bound="high"),
                    color="k",
                    alpha=0.15,
                    lw=0,
                    label="interval" if stage == curve.stage.values[0] else None,
                )
        ax.axhline(0.0, color="0.3", lw=0.8, ls="--")
        _stage_boundaries(ax, curve)
        label = condition_label(states, condition) if states is not None else condition
        ax.set_title(
            f"evaluated in: {label}",
            fontsize="medium",
            pad=14,
        )
        ax.set_xlabel("batches trained")
    axes[0].set_ylabel(_label(str(curve.name), units))
    _legend_beside(axes)
    fig.suptitle("learning curve: every snapshot evaluated as the final model", fontsize="medium")


def _draw_stages(fig: SubFigure, summary: xr.DataArray, states: xr.Dataset | None) -> None:
    """A panel per condition: the metric at the end of each stage."""
    conditions = list(summary.condition.values)
    stages = list(summary.stage.values)
    axes = fig.subplots(1, len(conditions), squeeze=False, sharey=True)[0]
    x = np.arange(len(stages))
    units = summary.attrs.get("units", "")
    for ax, condition in zip(axes, conditions):
        values = summary.sel(condition=condition).transpose("stage", "replicate").values
        ax.plot(x, values, color=REPLICATE_COLOR, lw=0.8, alpha=0.8)
        ax.plot(x, np.nanmean(values, axis=1), "o-", color="k", lw=2.2, ms=6, label="mean")
        ax.axhline(0.0, color="0.3", lw=0.8, ls="--")
        label = condition_label(states, condition) if states is not None else condition
        ax.set_title(f"evaluated in: {label}" if condition else "", fontsize="medium")
        ax.set_xticks(x, stages)
        ax.set_xlabel("stage (experiment)")
    axes[0].set_ylabel(_label(str(summary.name), units))
    axes[0].plot(
        [],
        [],
        color=REPLICATE_COLOR,
        lw=0.8,
        label=f"each of {summary.sizes['replicate']} replicates",
    )
    _legend_beside(axes)


def _legend_beside(axes) -> None:
    """The first panel's legend, to the right of the last panel: never over data."""
    axes[-1].legend(
        *axes[0].get_legend_handles_labels(),
        fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
    )


def plot_protocol(
    summary: xr.DataArray,
    *,
    states: Mapping[str, xr.Dataset] | None = None,
    panels: Sequence[Mapping[str, str]] = (),
    curve: xr.DataArray | None = None,
    interval: xr.DataArray | None = None,
    title: str = "",
) -> Figure:
    """A protocol: hand paths in `panels` (if any), the learning curve (if any), and the
    metric at the end of each stage, a panel per evaluation condition.

    Replicates are thin grey lines; the mean across replicates is thick (with its
    interval on the learning curve). A dashed line marks zero (a straight reach has
    no lateral deviation; positive is to the left of the movement).

    **Arguments:**

    - `summary`: the DataArray from `protocol_summary`, dims `(stage, condition,
      replicate)`.
    - `states`: stage name to its evaluated states, for the `panels` (and the
      conditions' labels).
    - `panels`: mappings with ``stage``, ``condition`` and an optional ``title``.
    - `curve`: the DataArray from `protocol_curve`; `interval` from `curve_interval`.
    - `title`: figure title.
    """
    states = states or {}
    conditions = list(summary.condition.values)
    labelled = next(iter(states.values()), None)
    rows = (["paths"] if panels else []) + (["curve"] if curve is not None else []) + ["stages"]
    heights = {"paths": 4.2, "curve": 3.2, "stages": 3.0}
    width = max(3.0 * len(panels), 4.2 * len(conditions), 3.0 + 1.0 * summary.sizes["stage"])
    fig = Figure(figsize=(width, sum(heights[row] for row in rows) + 0.4), layout="constrained")
    subfigures = fig.subfigures(
        len(rows), 1, squeeze=False, height_ratios=[heights[row] for row in rows]
    )[:, 0]
    for row, subfigure in zip(rows, subfigures):
        if row == "paths":
            _draw_paths(subfigure, states, panels, summary)
        elif row == "curve":
            _draw_curve(subfigure, curve, interval, conditions, labelled)
        else:
            _draw_stages(subfigure, summary, labelled)
    suptitle(fig, title)
    return settled(fig)
