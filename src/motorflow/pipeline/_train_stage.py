"""The train stage: one experiment trained (or resumed) from its stores into its model,
best model and history, alone (:func:`train_experiment`) or packed with others that
train as one compiled program (:func:`train_experiments`)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import equinox as eqx
import jax

from .._model._ensemble import make_ensemble
from .._model._saved_ensembles import (
    adopt_weights,
    load_ensemble,
    load_optimizer_state,
    save_ensemble,
)
from .._identity import json_digest
from .._tasks import Task
from .._training._checkpoint import CheckpointStore
from .._training._driver import TrainResult, train
from .._training._history import history_dataset
from .._training._packs import train_pack
from .._training._run_identity import run_fingerprint, run_id
from .._training._trainer import Trainer
from ._experiments import Experiment, experiment_keys
from ._store import json_attrs, read_center_out, read_trials, write_dataset

logger = logging.getLogger("motorflow")


@dataclasses.dataclass(frozen=True)
class TrainJob:
    """One experiment's training and where it reads and writes (the train stage's
    arguments; :func:`train_experiment` documents each)."""

    experiment: Experiment
    trials_path: Path
    eval_path: Path
    model_path: Path
    history_path: Path
    checkpoint_dir: Path
    best_model_path: Path | None = None
    init_path: Path | None = None
    invocation: Mapping[str, Any] | None = None


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
    job = TrainJob(
        experiment,
        trials_path=Path(trials_path),
        eval_path=Path(eval_path),
        model_path=Path(model_path),
        history_path=Path(history_path),
        checkpoint_dir=Path(checkpoint_dir),
        best_model_path=None if best_model_path is None else Path(best_model_path),
        init_path=None if init_path is None else Path(init_path),
        invocation=invocation,
    )
    run = _Training(job)
    if run.forced:
        logger.info(
            "The outputs already held this configuration's results, so this run was "
            "forced: training from the first batch."
        )
    run.write(train(**run.arguments(restart=run.forced, progress=progress)))


def train_experiments(
    jobs: Sequence[TrainJob], *, vectorize_members: bool | None = None
) -> None:
    """Train (or resume) several experiments as a pack (:func:`motorflow.train_pack`):
    those that share their compiled program (equal settings but the seed and the noise
    levels, and equal shapes) train as one call per chunk; each is written as :func:`train_experiment`
    writes it alone, with the same result (bitwise on the CPU; on a GPU, within float
    rounding of its run alone, and independent of the other members: every call is
    padded to the pack's size).

    When every member's outputs held its results from this same pack already (the
    pack's rerun was forced, e.g. ``snakemake -R``), each trains from the first batch.
    Otherwise (a member's settings were edited, a member was missing, the pack was
    formed otherwise) each resumes its own checkpoints: a finished member is written
    again without training.
    """
    names = [job.experiment.name for job in jobs]
    runs = [_Training(job, pack=names) for job in jobs]
    forced = all(run.forced for run in runs)
    if forced:
        logger.info(
            "The outputs already held every member's results, so this run was forced: "
            "training each from the first batch."
        )
    if vectorize_members is None:
        vectorize_members = jax.default_backend() != "cpu"
    results = train_pack(
        [run.arguments(restart=forced, progress=False) for run in runs],
        vectorize_members=vectorize_members,
        # Vmapped kernels may round differently at another width: a fixed width keeps
        # each member's result independent of how many others share its program.
        members_per_program=len(runs) if vectorize_members else None,
        names=names,
    )
    for run, result in zip(runs, results):
        run.write(result)


class _Training:
    """One experiment's training as the stage runs it: its initial ensemble, stores
    and run identity (from `job`), :func:`motorflow.train`'s arguments, and the writing
    of its outputs."""

    def __init__(self, job: TrainJob, *, pack: Sequence[str] = ()):
        """`pack`: the names of the pack's experiments (none: trained alone)."""
        self.job, experiment = job, job.experiment
        self.trials = read_trials(job.trials_path)
        self.validation = read_center_out(job.eval_path)
        self.task = Task(experiment.task)
        self.key = experiment_keys(experiment.seed)["train"]
        self.ensemble = make_ensemble(
            experiment.model,
            n_replicates=experiment.train.n_replicates,
            n_task_inputs=self.task.n_inputs,
            key=experiment_keys(experiment.seed)["init"],
        )
        self.opt_state = None
        if experiment.init_from is not None:
            self._adopt_parent()
        self.store = CheckpointStore(job.checkpoint_dir)
        self.identity = run_id(
            run_fingerprint(
                self.ensemble,
                self.trials,
                self.task,
                experiment.train,
                key=self.key,
                validation=self.validation,
                initial_opt_state=self.opt_state,
            )
        )
        # What the outputs will hold: this run's results, written alone or in this
        # pack. Found in place, the job reran for nothing but itself (forced).
        self.outputs = self.identity + (f" in pack {json_digest(sorted(pack))}" if pack else "")
        self.forced = self.store.outputs_from == self.outputs
        self.store.record_outputs(None)

    def _adopt_parent(self) -> None:
        """Start from the parent's trained arrays (and, unless ``reset_optimizer``, its
        optimizer state)."""
        experiment, init_path = self.job.experiment, self.job.init_path
        if init_path is None:
            raise ValueError(
                f"{experiment.name!r} starts from {experiment.init_from!r}: give init_path"
            )
        parent, _ = load_ensemble(init_path)
        self.ensemble = adopt_weights(self.ensemble, parent)
        logger.info("Starting from the trained model of %r (%s)", experiment.init_from, init_path)
        if not experiment.reset_optimizer:
            # Only the optimizer state's shapes are read: any constraint key serves.
            trainer = Trainer(self.ensemble, self.task, experiment.train, constraint_key=self.key)
            like = eqx.filter_eval_shape(trainer.init, key=self.key, learning_key=self.key)
            self.opt_state = load_optimizer_state(init_path, like.opt_state)

    def arguments(self, *, restart: bool, progress: bool) -> dict[str, Any]:
        """:func:`motorflow.train`'s arguments for this run."""
        job, train_config = self.job, self.job.experiment.train
        return {
            "ensemble": self.ensemble,
            "trials": self.trials,
            "task": self.task,
            "config": train_config,
            "key": self.key,
            "checkpoint_dir": job.checkpoint_dir,
            "validation": self.validation,
            "progress": progress,
            "restart": restart,
            "initial_opt_state": self.opt_state,
            "invocation": job.invocation,
            # One directory per training configuration, as the checkpoints.
            "tensorboard_dir": job.checkpoint_dir.parent / "tensorboard" / self.identity[:16]
            if train_config.tensorboard
            else None,
        }

    def write(self, result: TrainResult) -> None:
        """The history, the final model (with its optimizer state) and the best model."""
        job, experiment = self.job, self.job.experiment
        snapshots = experiment.train.snapshots
        history = history_dataset(
            result.history,
            trials=self.trials if snapshots is not None and snapshots.trials else None,
            attrs=json_attrs(
                {
                    # What the result depends on, so the store is the same whatever the
                    # cadence;
                    "experiment": {"name": experiment.name, **experiment.train_settings()},
                    # and how this run made it (machine, times), which differs between runs.
                    "run_record": result.record,
                }
            ),
        )
        write_dataset(history, job.history_path)
        status = {
            "diverged_at": history.diverged_at.values.tolist(),
            "best_batch": history.best_batch.values.tolist(),
        }
        save_ensemble(
            job.model_path,
            result.ensemble,
            experiment.model,
            n_task_inputs=self.task.n_inputs,
            optimizer_state=result.state.opt_state,
            training={"parameters": "final", **status},
        )
        if job.best_model_path is not None:
            save_ensemble(
                job.best_model_path,
                result.best_ensemble,
                experiment.model,
                n_task_inputs=self.task.n_inputs,
                training={"parameters": "best", **status},
            )
        self.store.record_outputs(self.outputs)
