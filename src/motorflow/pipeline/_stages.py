"""The pipeline's stages as plain functions of paths and resolved configs.

Workflow scripts only translate Snakemake's inputs, outputs and params into
these calls, so every stage can also be run (and tested) without Snakemake.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import equinox as eqx
import numpy as np
import xarray as xr

from .._config import ModelConfig, TaskConfig
from .._evaluate import evaluate
from .._metrics import metrics_table, reach_metrics
from .._model._ensemble import n_replicates
from .._model._saved_ensembles import load_ensemble, load_training_record
from .._tasks import CenterOut, Task
from .._training._run_record import with_named_arrays
from ._experiments import experiment_keys
from ._outputs import write_csv
from ._store import (
    center_out_dataset,
    open_dataset,
    read_center_out,
    read_states,
    write_dataset,
    write_trials,
)
from ._workflow_config import EvaluationConfig

logger = logging.getLogger("motorflow")


def make_trials(dataset_spec: Mapping[str, Any], *, train_path: Path, eval_path: Path) -> None:
    """Write the training specs `(replicate, batch, trial)` and the center-out specs
    (under the task's training perturbations: the validation set).

    `dataset_spec` is :meth:`Experiment.dataset_spec`: task config, replicate sets,
    batches, batch size and seed.
    """
    task = Task(TaskConfig.from_dict(dataset_spec["task"], "task"))
    trials = task.training_trials(
        key=experiment_keys(dataset_spec["seed"])["trials"],
        n_replicates=dataset_spec["n_replicates"],
        n_batches=dataset_spec["n_batches"],
        batch_size=dataset_spec["batch_size"],
    )
    write_trials(trials, train_path, attrs={"dataset_spec": dict(dataset_spec)})
    validation = task.validation_set(key=experiment_keys(dataset_spec["seed"])["validation"])
    write_dataset(
        center_out_dataset(validation, attrs={"task_config": dataset_spec["task"]}),
        eval_path,
    )


def evaluate_experiment(
    name: str,
    *,
    task: TaskConfig,
    seed: int,
    model_path: Path,
    eval_path: Path,
    states_path: Path,
    metrics_path: Path,
    table_path: Path,
    evaluation: EvaluationConfig,
) -> None:
    """Run the trained ensemble (final or best, as `model_path` holds) on the center-out
    reaches of experiment `name` (its `task`, its `seed`'s streams) in each of the
    `evaluation` conditions; write states and metrics.

    Both carry the coord ``diverged_at (replicate)`` (-1: trained to the end). A
    replicate that diverged is evaluated at its frozen parameters, but in the final
    model its metrics are NaN: they describe no trained network. (Its best
    parameters, validated before it diverged, are scored as any other.)
    """
    ensemble, model_config = load_ensemble(model_path)
    training = load_training_record(model_path)
    n = n_replicates(ensemble)
    diverged_at = np.asarray(training.get("diverged_at", [-1] * n), np.int64)
    states = _evaluation_states(
        ensemble,
        model_config,
        name=name,
        task=task,
        seed=seed,
        reaches=_evaluation_reaches(eval_path),
        evaluation=evaluation,
        attrs={"parameters": training.get("parameters", "final")},
    ).assign_coords(diverged_at=("replicate", diverged_at))
    write_dataset(states, states_path)
    metrics = reach_metrics(read_states(states_path), goal_radius=evaluation.goal_radius)
    if training.get("parameters", "final") == "final":
        metrics = metrics.where(metrics.diverged_at == -1)
    write_dataset(metrics, metrics_path)
    table_path = Path(table_path)
    write_csv(metrics_table(metrics), table_path)


def _evaluation_reaches(eval_path: Path) -> CenterOut:
    """The center-out reaches of `eval_path`, without the training perturbations the
    stored set carries (for validation): each evaluation condition adds its own."""
    center_out = read_center_out(eval_path)
    return eqx.tree_at(lambda c: c.trials, center_out, center_out.trials.perturbed_by((), ()))


def _evaluation_states(
    ensemble: eqx.Module,
    model_config: ModelConfig,
    *,
    name: str,
    task: TaskConfig,
    seed: int,
    reaches: CenterOut,
    evaluation: EvaluationConfig,
    attrs: Mapping[str, Any],
) -> xr.Dataset:
    """`ensemble`'s states on experiment `name`'s center-out `reaches` (from
    :func:`_evaluation_reaches`) in each of the `evaluation` conditions, with the
    noise and condition draws of its `seed`."""
    keys = experiment_keys(seed)
    return evaluate(
        ensemble,
        Task(task),
        model_config,
        key=keys["evaluate"],
        trials=reaches,
        conditions=evaluation.conditions,
        conditions_key=keys["conditions"],
        attrs={"experiment": name, "seed": seed, **attrs},
    )


def evaluate_snapshots(
    name: str,
    *,
    task: TaskConfig,
    seed: int,
    model_path: Path,
    history_path: Path,
    eval_path: Path,
    curve_path: Path,
    evaluation: EvaluationConfig,
) -> None:
    """The learning curve of experiment `name`: each parameter snapshot of its history
    (``train.snapshots``) evaluated exactly as :func:`evaluate_experiment` evaluates
    the final model (same reaches, conditions, noise), scored by the reach metrics.

    Writes `curve_path`: the metrics with a leading ``snapshot_step`` dim (batches
    trained), `(snapshot_step, replicate, condition, trial)`; NaN for a replicate's
    snapshots after it diverged. The snapshots hold the trained arrays; any other
    array is the final model's (arrays that only update rules change are not
    snapshotted).
    """
    ensemble, model_config = load_ensemble(model_path)
    history = open_dataset(history_path)
    if "snapshot_step" not in history.coords:
        raise ValueError(
            f"{history_path} holds no snapshots: set train.snapshots for {name!r} to draw "
            "its learning curve"
        )
    prefix = "snapshot."
    names = [var[len(prefix) :] for var in history.data_vars if var.startswith(prefix)]
    steps = history.snapshot_step.values
    reaches = _evaluation_reaches(eval_path)
    curve = []
    for index, step in enumerate(steps):
        arrays = {
            array: history[prefix + array].isel(snapshot_step=index).values for array in names
        }
        states = _evaluation_states(
            with_named_arrays(ensemble, arrays),
            model_config,
            name=name,
            task=task,
            seed=seed,
            reaches=reaches,
            evaluation=evaluation,
            attrs={"parameters": f"snapshot after {int(step)} batches"},
        )
        curve.append(reach_metrics(states, goal_radius=evaluation.goal_radius))
        logger.info("Snapshot %d of %d (after %d batches) evaluated", index + 1, len(steps), step)
    metrics = xr.concat(curve, dim="snapshot_step", combine_attrs="drop_conflicts")
    metrics = metrics.assign_coords(
        snapshot_step=("snapshot_step", steps, {"description": "batches trained"})
    )
    diverged_at = history.diverged_at.values
    frozen = (diverged_at >= 0) & (steps[:, None] > diverged_at[None, :])
    metrics = metrics.where(~xr.DataArray(frozen, dims=("snapshot_step", "replicate")))
    write_dataset(metrics.assign_coords(diverged_at=("replicate", diverged_at)), curve_path)
