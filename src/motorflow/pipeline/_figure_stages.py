"""The figure stages (an experiment's, a protocol's, a comparison's, a sweep's) as
functions of paths: they read the stores and draw, loading no JAX (a protocol's
learning-curve interval loads it where there is a curve), so a figure job's imports
take a fraction of a second.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from .._analysis._replicate_values import replicate_values
from .._figures import (
    curve_interval,
    plot_arm_postures,
    plot_comparison,
    plot_loss_history,
    plot_protocol,
    plot_ranked_comparison,
    plot_speed_profiles,
    plot_sweep,
    plot_trajectories,
    protocol_curve,
    protocol_summary,
)
from ._datasets import open_dataset, read_replicate_values, read_states
from ._outputs import save_figure, write_csv
from ._sweep_size import shows_each_experiment


def experiment_figures(
    *,
    history_path: Path,
    states_path: Path,
    loss_path: Path,
    trajectories_path: Path,
    speed_path: Path,
    options: Mapping[str, Any],
    title: str = "",
) -> None:
    """Loss history, center-out trajectories and speed profiles of one experiment."""
    history = open_dataset(history_path)
    states = read_states(states_path)
    dpi = options["dpi"]
    save_figure(plot_loss_history(history, title=title), loss_path, dpi=dpi)
    save_figure(
        plot_trajectories(states, max_replicates=options["max_replicates"], title=title),
        trajectories_path,
        dpi=dpi,
    )
    save_figure(plot_speed_profiles(states, title=title), speed_path, dpi=dpi)


def arm_figure(
    *, states_path: Path, figure_path: Path, options: Mapping[str, Any], title: str = ""
) -> None:
    """The arm's postures during the center-out reaches of one experiment (arm plants)."""
    figure = plot_arm_postures(read_states(states_path), title=title)
    save_figure(figure, figure_path, dpi=options["dpi"])


def protocol_figure(
    stages: Sequence[str],
    *,
    metrics_paths: Sequence[Path],
    figure_path: Path,
    table_path: Path,
    curve_table_path: Path,
    metric: str,
    options: Mapping[str, Any],
    statistics: Mapping[str, Any] | None = None,
    panels: Sequence[Mapping[str, str]] = (),
    conditions: Sequence[str] = (),
    states_paths: Mapping[str, Path] | None = None,
    curve_paths: Mapping[str, Path] | None = None,
    stage_batches: Mapping[str, int] | None = None,
    title: str = "",
) -> None:
    """A protocol's figure (see :func:`plot_protocol`) and its numbers: the metric per
    stage, condition and replicate (`table_path`), and along the learning curve of
    the stages in `curve_paths` (`curve_table_path`; only its header without them).

    **Arguments:**

    - `stages`, `metrics_paths`: the stages in order and their metrics stores.
    - `states_paths`: the states of the stages the `panels` draw.
    - `curve_paths`: the learning curves (:func:`evaluate_snapshots`) of the stages
      that kept snapshots, in order; `stage_batches`: each stage's batches.
    - `statistics`: the ``statistics`` settings (the curve's bootstrap intervals);
      needed only with `curve_paths`.
    - `conditions`: the evaluation conditions the summary and the curve keep (all if
      empty).
    """

    def chosen(metrics: xr.Dataset) -> xr.Dataset:
        return metrics.sel(condition=list(conditions)) if conditions else metrics

    summary = protocol_summary(
        {
            name: chosen(open_dataset(path))
            for name, path in zip(stages, metrics_paths, strict=True)
        },
        metric=metric,
    )
    states = {name: read_states(path) for name, path in (states_paths or {}).items()}
    curve = interval = None
    if curve_paths:
        import jax  # the curve's bootstrap interval only

        curve = protocol_curve(
            {name: chosen(open_dataset(path)) for name, path in curve_paths.items()},
            metric=metric,
            stage_batches=stage_batches or {},
        )
        interval = curve_interval(
            curve,
            key=jax.random.key(statistics["seed"]),
            n_resamples=statistics["n_resamples"],
            confidence=statistics["confidence"],
        )
    figure = plot_protocol(
        summary, states=states, panels=panels, curve=curve, interval=interval, title=title
    )
    save_figure(figure, figure_path, dpi=options["dpi"])
    write_csv(summary.to_dataframe().reset_index(), table_path)
    columns = ["stage", "batch", "condition", "replicate", metric]
    if curve is None:
        table = pd.DataFrame(columns=columns)
    else:
        table = curve.to_dataframe().reset_index()[columns]
    write_csv(table, curve_table_path)


def comparison_figure(
    experiments: Sequence[str],
    *,
    history_paths: Sequence[Path],
    metrics_paths: Sequence[Path],
    summary_path: Path,
    output_path: Path,
    options: Mapping[str, Any],
) -> None:
    """Final validation loss, endpoint error and lateral deviation per replicate across
    experiments, with the summary's means, intervals and contrasts, their training
    curves and the alignment of their rules' updates with the BPTT gradient; past
    `EACH_EXPERIMENT_UP_TO` experiments, each metric's means ranked (from the summary)."""
    if not shows_each_experiment(len(experiments)):
        figure = plot_ranked_comparison(open_dataset(summary_path))
        save_figure(figure, output_path, dpi=options["dpi"])
        return
    histories = {
        name: open_dataset(path) for name, path in zip(experiments, history_paths, strict=True)
    }
    values = {
        name: replicate_values(histories[name], open_dataset(metrics))
        for name, metrics in zip(experiments, metrics_paths, strict=True)
    }
    curves = {
        name: history.validation_loss.sel(term="total") for name, history in histories.items()
    }
    # Histories written before the alignment was recorded have none.
    alignment = {
        name: history.gradient_alignment
        for name, history in histories.items()
        if "gradient_alignment" in history
    }
    # The curves again against the trials trained and the training's seconds: the
    # rules compared at equal data and at equal wall-clock budget.
    budgets = {name: _training_budget(history) for name, history in histories.items()}
    figure = plot_comparison(
        values,
        open_dataset(summary_path),
        curves=curves,
        alignment=alignment,
        trials_per_batch={n: t for n, (t, _) in budgets.items() if t is not None},
        seconds_per_batch={n: s for n, (_, s) in budgets.items() if s is not None},
    )
    save_figure(figure, output_path, dpi=options["dpi"])


def _training_budget(history) -> tuple[float | None, float | None]:
    """A history's trials per batch (its training's `batch_size`) and median seconds
    per batch after compilation (its run record), each None where not recorded."""
    settings = json.loads(history.attrs.get("experiment", "{}"))
    record = json.loads(history.attrs.get("run_record", "{}"))
    training = settings.get("training")
    trials = training.get("batch_size") if isinstance(training, dict) else None
    seconds = record.get("timing", {}).get("seconds_per_batch_median")
    return trials, seconds


def sweep_figure(
    points: Mapping[str, Mapping[str, Any]],
    *,
    history_paths: Sequence[Path],
    metrics_paths: Sequence[Path],
    summary_path: Path,
    figure_path: Path,
    metrics: Sequence[str],
    options: Mapping[str, Any],
    marks: Mapping[str, float] | None = None,
    x_scale: str = "auto",
    title: str = "",
) -> None:
    """One sweep's `metrics` against its swept values (`points`: each of its experiments'
    grid values, in order), with `marks` and `x_scale` as :func:`plot_sweep` takes them."""
    values = read_replicate_values(history_paths, metrics_paths, list(points))
    figure = plot_sweep(
        values,
        dict(points),
        open_dataset(summary_path),
        metrics=list(metrics),
        marks=marks,
        x_scale=x_scale,
        title=title,
    )
    save_figure(figure, figure_path, dpi=options["dpi"])
