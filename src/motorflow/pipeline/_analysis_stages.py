"""The analysis stages as plain functions of paths and resolved configs: hidden-state
analyses per experiment, statistics across experiments, and their figures."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import xarray as xr

from .._analysis._config import AnalysisConfig, StatisticsConfig
from .._analysis._fixed_points import find_fixed_points, sample_starts, steady_inputs
from .._analysis._pca import hidden_pca
from .._analysis._statistics import replicate_values, summarise, summary_table
from .._analysis._tuning import directional_tuning
from .._figures import (
    plot_comparison,
    plot_fixed_points,
    plot_pca_trajectories,
    plot_sweep,
    plot_tuning,
)
from .._model._saved_ensembles import load_ensemble
from .._task import Task
from ._experiments import Experiment, experiment_keys
from ._outputs import save_figure, write_csv
from ._store import json_attrs, open_dataset, read_center_out, read_states, write_dataset

logger = logging.getLogger("motorflow")


def analyse_experiment(
    experiment: Experiment,
    *,
    model_path: Path,
    eval_path: Path,
    states_path: Path,
    analysis_path: Path,
    options: AnalysisConfig,
) -> None:
    """PCA of the hidden trajectories, the network's fixed points under each reach's
    steady input, and each unit's directional tuning, into one store.

    The fixed points are those of the model that was evaluated (`model_path`); their
    search starts from states sampled on its trajectories with the experiment's
    ``analysis`` key.
    """
    states = read_states(states_path)
    ensemble, _ = load_ensemble(model_path)
    task = Task(experiment.task)
    center_out = read_center_out(eval_path)
    settings = options.fixed_points
    starts = sample_starts(
        states,
        n_starts=settings.n_starts,
        noise=settings.start_noise,
        key=experiment_keys(experiment.seed)["analysis"],
    )
    fixed_points = find_fixed_points(
        ensemble,
        steady_inputs(task, center_out),
        starts,
        steps=settings.steps,
        learning_rate=settings.learning_rate,
        tolerance=settings.tolerance,
        distinct_tolerance=settings.distinct_tolerance,
        coords={"goal_angle": states.goal_angle, "goal_distance": states.goal_distance},
    )
    n_found = int((fixed_points.converged & fixed_points.distinct).sum())
    n_stable = int((fixed_points.converged & fixed_points.distinct & fixed_points.stable).sum())
    logger.info("Fixed points: %d distinct found, %d of them stable", n_found, n_stable)
    analysis = xr.merge(
        [
            hidden_pca(states, n_components=options.pca.n_components),
            fixed_points,
            directional_tuning(states, speed_threshold=options.tuning.speed_threshold),
        ],
        combine_attrs="drop",
    )
    analysis.attrs = json_attrs({"experiment": experiment.name, "analysis": options.to_dict()})
    write_dataset(analysis, analysis_path)


def analysis_figures(
    *,
    analysis_path: Path,
    pca_path: Path,
    fixed_points_path: Path,
    tuning_path: Path,
    replicate: int,
    options: Mapping[str, Any],
    title: str = "",
) -> None:
    """The PCA trajectories and fixed points of one replicate, and every replicate's
    preferred directions."""
    analysis = open_dataset(analysis_path)
    if replicate >= analysis.sizes["replicate"]:
        raise ValueError(
            f"analysis.replicate is {replicate}, but the experiment has "
            f"{analysis.sizes['replicate']} replicates (0 to {analysis.sizes['replicate'] - 1})"
        )
    dpi = options["dpi"]
    save_figure(
        plot_pca_trajectories(analysis, replicate=replicate, title=title), pca_path, dpi=dpi
    )
    save_figure(
        plot_fixed_points(analysis, analysis, replicate=replicate, title=title),
        fixed_points_path,
        dpi=dpi,
    )
    save_figure(plot_tuning(analysis, title=title), tuning_path, dpi=dpi)


def _replicate_values(
    history_paths: Sequence[Path], metrics_paths: Sequence[Path], names: Sequence[str]
) -> dict[str, xr.Dataset]:
    return {
        name: replicate_values(open_dataset(history), open_dataset(metrics))
        for name, history, metrics in zip(names, history_paths, metrics_paths, strict=True)
    }


def summary_stage(
    seeds: Mapping[str, int],
    *,
    history_paths: Sequence[Path],
    metrics_paths: Sequence[Path],
    table_path: Path,
    store_path: Path,
    statistics: StatisticsConfig,
) -> None:
    """Every experiment's mean and bootstrap interval per metric, and the contrasts
    between experiments (paired where they share a seed and a replicate count).

    `seeds` maps each experiment, in order, to its seed (`summarise` pairs those that
    share one and their replicate count).
    """
    values = _replicate_values(history_paths, metrics_paths, list(seeds))
    summary = summarise(
        values,
        dict(seeds),
        key=jax.random.key(statistics.seed),
        n_resamples=statistics.n_resamples,
        confidence=statistics.confidence,
    )
    write_dataset(summary, store_path)
    write_csv(summary_table(summary), table_path)


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
    experiments, with the summary's means, intervals and contrasts, and their training
    curves."""
    values = _replicate_values(history_paths, metrics_paths, experiments)
    curves = {
        name: open_dataset(path).validation_loss.sel(term="total")
        for name, path in zip(experiments, history_paths, strict=True)
    }
    figure = plot_comparison(values, open_dataset(summary_path), curves=curves)
    save_figure(figure, output_path, dpi=options["dpi"])


def sweep_figure(
    points: Mapping[str, Mapping[str, Any]],
    *,
    history_paths: Sequence[Path],
    metrics_paths: Sequence[Path],
    summary_path: Path,
    figure_path: Path,
    metrics: Sequence[str],
    options: Mapping[str, Any],
    title: str = "",
) -> None:
    """One sweep's `metrics` against its swept values (`points`: each of its experiments'
    grid values, in order)."""
    values = _replicate_values(history_paths, metrics_paths, list(points))
    figure = plot_sweep(
        values, dict(points), open_dataset(summary_path), metrics=list(metrics), title=title
    )
    save_figure(figure, figure_path, dpi=options["dpi"])
