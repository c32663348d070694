"""The analysis stages as plain functions of paths and resolved configs: hidden-state
analyses per experiment, statistics across experiments, and their figures."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import xarray as xr

from .._analysis._base import AnalysisInputs
from .._analysis._condition_sweep import condition_sweep, condition_sweep_table
from .._analysis._config import ANALYSES, AnalysisConfig, StatisticsConfig
from .._analysis._statistics import summarise, summary_table
from .._config import TaskConfig
from .._model._saved_ensembles import load_ensemble
from .._tasks import Task
from ._datasets import read_replicate_values
from ._experiments import experiment_keys
from ._outputs import save_figure, write_csv
from ._store import json_attrs, open_dataset, read_center_out, read_states, write_dataset
from ._sweep_size import shows_each_experiment

logger = logging.getLogger("motorflow")


def analyse_experiment(
    name: str,
    *,
    task: TaskConfig,
    seed: int,
    model_path: Path,
    eval_path: Path,
    states_path: Path,
    analysis_path: Path,
    options: AnalysisConfig,
) -> None:
    """Every analysis of `ANALYSES` (by default the PCA of the hidden trajectories, the
    network's fixed points under each reach's steady input, and each unit's
    directional tuning) of experiment `name`, with its settings in `options`, into one
    store.

    The analyses read the model that was evaluated (`model_path`), its states, the
    `task` with its evaluated reaches, and the ``analysis`` key of the experiment's
    `seed` (e.g. where the fixed-point search starts).
    """
    inputs = AnalysisInputs(
        states=read_states(states_path),
        ensemble=load_ensemble(model_path)[0],
        task=Task(task),
        center_out=read_center_out(eval_path),
        key=experiment_keys(seed)["analysis"],
    )
    analysis = xr.merge(
        [analysis.run(inputs) for analysis in options.analyses.values()],
        # keeps each variable's own attributes (its units); the store's are set below.
        # Shared coordinates must agree (xarray's present default, named so that its
        # announced change of default neither warns nor alters the result).
        compat="no_conflicts",
        combine_attrs="drop_conflicts",
    )
    analysis.attrs = json_attrs({"experiment": name, "analysis": options.to_dict()})
    write_dataset(analysis, analysis_path)


def analysis_figures(
    *,
    analysis_path: Path,
    figure_paths: Mapping[str, Path],
    replicate: int,
    options: Mapping[str, Any],
    title: str = "",
) -> None:
    """Each analysis's figure (`figure_paths`: a path per name of `ANALYSES`), of one
    replicate where the figure draws one."""
    analysis = open_dataset(analysis_path)
    if replicate >= analysis.sizes["replicate"]:
        raise ValueError(
            f"analysis.replicate is {replicate}, but the experiment has "
            f"{analysis.sizes['replicate']} replicates (0 to {analysis.sizes['replicate'] - 1})"
        )
    for name, path in figure_paths.items():
        figure = ANALYSES[name].figure(analysis, replicate=replicate, title=title)
        save_figure(figure, path, dpi=options["dpi"])


def analysis_comparison(
    analysis: str,
    *,
    analysis_paths: Mapping[str, Path],
    figure_path: Path,
    table_path: Path,
    replicate: int,
    statistics: StatisticsConfig,
    options: Mapping[str, Any],
    title: str = "",
) -> None:
    """One analysis compared across experiments (a config's ``comparisons`` entry):
    its comparison figure and the CSV of its numbers, from each experiment's analysis
    store (`analysis_paths`, in the figure's order)."""
    kind = ANALYSES[analysis]
    if not kind.COMPARES:
        raise ValueError(f"the {analysis!r} analysis draws no comparison across experiments")
    analyses = {name: open_dataset(path) for name, path in analysis_paths.items()}
    figure = kind.comparison_figure(analyses, replicate=replicate, title=title)
    save_figure(figure, figure_path, dpi=options["dpi"])
    table = kind.comparison_table(
        analyses,
        confidence=statistics.confidence,
        n_resamples=statistics.n_resamples,
        seed=statistics.seed,
    )
    write_csv(table, table_path)


def summary_stage(
    seeds: Mapping[str, int],
    *,
    history_paths: Sequence[Path],
    metrics_paths: Sequence[Path],
    table_path: Path,
    store_path: Path,
    statistics: StatisticsConfig,
    init_from: Mapping[str, str | None] | None = None,
) -> None:
    """Every experiment's mean and bootstrap interval per metric, and the contrasts
    between experiments (paired where they have as many replicates and share a seed or
    descend from the same experiment).

    `seeds` maps each experiment, in order, to its seed, and `init_from` each chained
    experiment to the one it starts from (`summarise` pairs by both). Up to
    `EACH_EXPERIMENT_UP_TO` experiments, each is contrasted with every earlier one;
    beyond, with the first only (a named comparison, `comparisons:`, contrasts chosen ones).
    """
    values = read_replicate_values(history_paths, metrics_paths, list(seeds))
    summary = summarise(
        values,
        dict(seeds),
        key=jax.random.key(statistics.seed),
        n_resamples=statistics.n_resamples,
        confidence=statistics.confidence,
        init_from=init_from,
        max_references=None if shows_each_experiment(len(seeds)) else 1,
    )
    write_dataset(summary, store_path)
    write_csv(summary_table(summary), table_path)


def condition_sweep_stage(
    experiments: Sequence[str],
    *,
    history_paths: Sequence[Path],
    metrics_paths: Sequence[Path],
    x: Mapping[str, Sequence[float]],
    sweep: Mapping[str, Any],
    x_label: str,
    marks: Mapping[str, float],
    statistics: StatisticsConfig,
    figure_path: Path,
    table_path: Path,
    options: Mapping[str, Any],
) -> None:
    """A condition sweep's figure and CSV: each experiment's `sweep["metrics"]` in its
    `sweep["conditions"]` against their `x` values (differences from the
    `sweep["baseline"]` condition when it is set), with bootstrap intervals as
    `statistics` sets."""
    values = read_replicate_values(history_paths, metrics_paths, list(experiments))
    result = condition_sweep(
        values,
        x,
        conditions=list(sweep["conditions"]),
        metrics=list(sweep["metrics"]),
        baseline=sweep["baseline"],
        key=jax.random.key(statistics.seed),
        n_resamples=statistics.n_resamples,
        confidence=statistics.confidence,
    )
    write_csv(condition_sweep_table(result), table_path)
    from .._figures import plot_condition_sweep  # matplotlib only here: a job that draws

    figure = plot_condition_sweep(result, x_label=x_label, marks=dict(marks), title=sweep["title"])
    save_figure(figure, figure_path, dpi=options["dpi"])
