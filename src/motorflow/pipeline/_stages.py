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
from .._model._ensemble import make_ensemble, n_replicates
from .._model._saved_ensembles import (
    adopt_weights,
    load_ensemble,
    load_optimizer_state,
    load_training_record,
    save_ensemble,
)
from .._tasks import CenterOut, Task
from .._training._checkpoint import CheckpointStore
from .._training._driver import train
from .._training._history import history_dataset
from .._training._run_identity import run_fingerprint, run_id
from .._training._run_record import with_named_arrays
from .._training._trainer import Trainer
from ._experiments import Experiment, experiment_keys
from ._outputs import write_csv
from ._store import (
    center_out_dataset,
    json_attrs,
    open_dataset,
    read_center_out,
    read_states,
    read_trials,
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


def train_experiment(
    experiment: Experiment,
    *,
    trials_path: Path,
    eval_path: Path,
    model_path: Path,
    history_path: Path,
    checkpoint_dir: Path,
    best_model_path: Path | None = None,
    init_path: Path | None = None,
    progress: bool = True,
    invocation: Mapping[str, Any] | None = None,
) -> None:
    """Train (or resume) one experiment; write the final model, its history and (to
    `best_model_path`) each replicate at its lowest validation loss.

    An experiment with ``init_from`` starts from the trained model at `init_path`
    (the arrays; its own settings without weights) and, without ``reset_optimizer``,
    from the optimizer state saved with it. The model is saved with its final
    optimizer state, so that any experiment can continue it.

    With ``train.tensorboard``, TensorBoard event files go to
    ``<checkpoint_dir>/../tensorboard/<run>/``, one directory per training
    configuration (the first 16 characters of its :func:`run_id`).

    `invocation` goes into the run record as :func:`motorflow.train` takes it (a
    workflow job's: :func:`job_invocation`).

    The checkpoint store remembers which run's results the outputs hold. When the
    stage runs again for that very run (its outputs were in place, so the rerun was
    forced, e.g. ``snakemake -R train``), it trains from the first batch rather than
    returning the finished checkpoint; any other run resumes its own checkpoints, so
    reverting a config edit restores the earlier results without retraining.
    """
    trials = read_trials(trials_path)
    validation = read_center_out(eval_path)
    task = Task(experiment.task)
    keys = experiment_keys(experiment.seed)
    ensemble = make_ensemble(
        experiment.model,
        n_replicates=experiment.train.n_replicates,
        n_task_inputs=task.n_inputs,
        key=keys["init"],
    )
    opt_state = None
    if experiment.init_from is not None:
        if init_path is None:
            raise ValueError(
                f"{experiment.name!r} starts from {experiment.init_from!r}: give init_path"
            )
        parent, _ = load_ensemble(init_path)
        ensemble = adopt_weights(ensemble, parent)
        logger.info("Starting from the trained model of %r (%s)", experiment.init_from, init_path)
        if not experiment.reset_optimizer:
            # Only the optimizer state's shapes are read: any constraint key serves.
            trainer = Trainer(ensemble, task, experiment.train, constraint_key=keys["train"])
            like = eqx.filter_eval_shape(
                trainer.init, key=keys["train"], learning_key=keys["train"]
            )
            opt_state = load_optimizer_state(init_path, like.opt_state)
    store = CheckpointStore(checkpoint_dir)
    identity = run_id(
        run_fingerprint(
            ensemble,
            trials,
            task,
            experiment.train,
            key=keys["train"],
            validation=validation,
            initial_opt_state=opt_state,
        )
    )
    forced = store.outputs_from == identity
    if forced:
        logger.info(
            "The outputs already held this configuration's results, so this run was "
            "forced: training from the first batch."
        )
    store.record_outputs(None)
    result = train(
        ensemble,
        trials,
        task,
        experiment.train,
        key=keys["train"],
        checkpoint_dir=checkpoint_dir,
        validation=validation,
        progress=progress,
        restart=forced,
        initial_opt_state=opt_state,
        invocation=invocation,
        # One directory per training configuration, as the checkpoints.
        tensorboard_dir=Path(checkpoint_dir).parent / "tensorboard" / identity[:16]
        if experiment.train.tensorboard
        else None,
    )
    snapshots = experiment.train.snapshots
    history = history_dataset(
        result.history,
        trials=trials if snapshots is not None and snapshots.trials else None,
        attrs=json_attrs(
            {
                # What the result depends on, so the store is the same whatever the cadence;
                "experiment": {"name": experiment.name, **experiment.train_settings()},
                # and how this run made it (machine, times), which differs between runs.
                "run_record": result.record,
            }
        ),
    )
    write_dataset(history, history_path)
    status = {
        "diverged_at": history.diverged_at.values.tolist(),
        "best_batch": history.best_batch.values.tolist(),
    }
    save_ensemble(
        model_path,
        result.ensemble,
        experiment.model,
        n_task_inputs=task.n_inputs,
        optimizer_state=result.state.opt_state,
        training={"parameters": "final", **status},
    )
    if best_model_path is not None:
        save_ensemble(
            best_model_path,
            result.best_ensemble,
            experiment.model,
            n_task_inputs=task.n_inputs,
            training={"parameters": "best", **status},
        )
    store.record_outputs(result.run_id)


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
