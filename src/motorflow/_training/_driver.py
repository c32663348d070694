"""The resumable training driver: :func:`train` runs a :class:`Trainer`'s compiled chunks
between checkpoints, validation, logs and TensorBoard, and resumes where a run stopped."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import PRNGKeyArray
from tqdm.auto import tqdm

from .._config import TrainConfig
from .._faults import kill_point
from .._tasks import CenterOut, Task, Trials
from ._divergence import HEALTHY, DivergencePolicy
from ._history import (
    History,
    empty_history,
    record_alignment,
    record_batches,
    record_snapshot,
    record_status,
    record_validation,
    validation_at,
)
from ._plan import TrainingPlan
from ._preemption import PreemptionWatch, TrainingPreempted
from ._progress import BatchRate, finite_mean, log_line
from ._resume import closing, open_checkpoints, resume, resume_hint
from ._run_identity import run_fingerprint, run_id, trials_to_validate_on
from ._run_record import (
    StepTimer,
    describe_record,
    environment,
    parameter_table,
)
from ._state import BatchRecords, TrainState, keep_best
from ._tensorboard import open_tensorboard
from ._trainer import Trainer

logger = logging.getLogger("motorflow")


class TrainResult(eqx.Module):
    """The trained ensemble, the one with each replicate's best validated parameters,
    its history, the final train state, the run's identity and its record (parameters,
    machine, versions, command, step times: :mod:`motorflow._training._run_record`)."""

    ensemble: Any
    best_ensemble: Any
    history: History
    state: TrainState
    run_id: str = eqx.field(static=True)
    record: dict = eqx.field(static=True, default_factory=dict)


def _check_trials(trials: Trials, config: TrainConfig, task: Task) -> None:
    if (trials.go_step is not None) != task.config.has_go_cue:
        has = "carry" if trials.go_step is not None else "lack"
        raise ValueError(
            f"the training trials {has} go steps, but the {task.config.kind} task "
            f"{'gives' if task.config.has_go_cue else 'gives no'} go cue; draw them from this task"
        )
    n_sets = 1 if config.shared_trials else config.n_replicates
    want = (n_sets, config.n_batches, config.batch_size, 2)
    for name in ("init_pos", "init_vel", "goal_pos"):
        shape = tuple(getattr(trials, name).shape)
        if len(shape) != 4 or shape[0] != n_sets or shape[1] < want[1] or shape[2:] != want[2:]:
            raise ValueError(
                f"training trials field {name!r} has shape {shape}; this run needs "
                f"(replicate={n_sets}, batch>={want[1]}, trial={want[2]}, component=2) "
                "to match train.n_replicates/shared_trials, n_batches and batch_size"
            )


def train(
    ensemble: eqx.Module,
    trials: Trials,
    task: Task,
    config: TrainConfig,
    *,
    key: PRNGKeyArray,
    checkpoint_dir: str | Path | None = None,
    validation: CenterOut | None = None,
    progress: bool = True,
    on_log: Callable[[int, History], None] | None = None,
    restart: bool = False,
    initial_opt_state: Any = None,
    tensorboard_dir: str | Path | None = None,
    invocation: Mapping[str, Any] | None = None,
) -> TrainResult:
    """Train `ensemble` on `trials`, resuming from `checkpoint_dir` when it holds this run.

    **Arguments:**

    - `ensemble`: initial ensemble (replicate axis first).
    - `trials`: training trial specs, dims `(replicate, batch, trial)` (replicate of
      size 1 with ``shared_trials``), as made by :meth:`Task.training_trials`.
    - `task`: the task (inputs, validation set).
    - `config`: the training config; its schedules say when to validate, log and
      checkpoint (:class:`TrainingPlan`).
    - `key`: seeds the per-batch noise and the validation noise.
    - `checkpoint_dir`: a :class:`motorflow.pipeline.CheckpointStore` to checkpoint
      into (on the ``checkpoint`` schedule and at the end) and resume from; None
      trains without checkpoints. Only checkpoints of the identical run (same
      :func:`motorflow.pipeline.run_fingerprint`) are resumed; those of other runs are
      kept there for a while and never applied to this one.
    - `validation`: the validation set; by default the task's center-out set under
      its training perturbations (:meth:`Task.validation_set`).
    - `progress`: show a progress bar.
    - `on_log`: called after each compiled call (and its checkpoint, if any) with
      the number of batches done and the history so far.
    - `restart`: discard this run's checkpoints and train from the first batch.
    - `initial_opt_state`: start from this optimizer state (one per replicate, as
      :attr:`TrainState.opt_state`) rather than a fresh one: continue a training.
    - `tensorboard_dir`: write TensorBoard event files there
      (:mod:`motorflow._training._tensorboard`; needs tensorboardX); None: none.
    - `invocation`: how this run was started, entered as is into the run record
      (:attr:`TrainResult.record`) over its default ``command``, this process's command
      line; a workflow job gives the command that started the workflow, its rule and
      its wildcards. The record decides nothing: the result does not depend on it.

    A resumed run ends bitwise-identical to an uninterrupted one on the same device.
    SIGTERM or SIGUSR1 (in the main thread) make it checkpoint after the running
    compiled call and raise :class:`motorflow.pipeline.TrainingPreempted`.

    When a replicate's loss or parameters become NaN/inf, ``config.on_divergence``
    decides: ``stop`` raises :class:`NonFiniteLossError` (nothing is checkpointed from
    that state; the newest checkpoint before it is kept); ``isolate`` freezes that
    replicate at its last finite parameters, flags it (``diverged_at``), records its
    later losses as NaN and trains the others on, bitwise as if it had not diverged.
    Each replicate's parameters with the lowest validation loss are kept as well
    (:attr:`TrainResult.best_ensemble`).
    """
    _check_trials(trials, config, task)
    trainer = Trainer(ensemble, task, config, constraint_key=jax.random.fold_in(key, 2))
    plan = TrainingPlan(config)
    noise_key, validation_key = jax.random.split(key)
    state = trainer.init(key=noise_key, learning_key=jax.random.fold_in(key, 3))
    if initial_opt_state is not None:
        state = eqx.tree_at(lambda s: s.opt_state, state, initial_opt_state)
    parameters = parameter_table(trainer.initial_params)
    history = empty_history(
        list(config.loss.terms),
        n_batches=config.n_batches,
        n_replicates=config.n_replicates,
        validation_steps=plan.validate,
        snapshot_steps=plan.snapshot,
        parameter_shapes={name: entry["shape"] for name, entry in parameters.items()},
        alignment_groups=list(parameters),
    )
    host_trials = jax.tree.map(np.asarray, trials)
    validation_trials = trials_to_validate_on(task, validation, key)
    fingerprint = run_fingerprint(
        ensemble,
        host_trials,
        task,
        config,
        key=key,
        validation=validation,
        initial_opt_state=initial_opt_state,
    )
    identity = run_id(fingerprint)
    record = {"parameters": parameters, **environment(), **(invocation or {})}
    checkpoints = open_checkpoints(checkpoint_dir, identity, fingerprint, config, restart)
    policy = DivergencePolicy(config.on_divergence, lambda: resume_hint(checkpoints))

    def validated(state: TrainState, batch: int) -> tuple[TrainState, dict[str, np.ndarray]]:
        """`state` after its validation at `batch` (a replicate with a non-finite loss
        frozen there, the best parameters kept) and the losses (NaN once diverged)."""
        losses = jax.tree.map(
            np.asarray, trainer.validate(state.params, validation_trials, validation_key)
        )
        diverged_at = np.asarray(state.diverged_at)
        frozen_here = policy.after_validation(diverged_at, losses["total"], batch)
        if frozen_here.any():
            diverged_at = np.where(frozen_here, batch, diverged_at).astype(np.int32)
            state = eqx.tree_at(lambda s: s.diverged_at, state, jnp.asarray(diverged_at))
        losses = {k: np.where(diverged_at == HEALTHY, v, np.nan) for k, v in losses.items()}
        alignment = trainer.alignment(
            state.params, state.learning_state, validation_trials, key=validation_key
        )
        record_alignment(
            history,
            batch,
            {k: np.where(diverged_at == HEALTHY, v, np.nan) for k, v in alignment.items()},
        )
        state = keep_best(state, jnp.asarray(losses["total"]), batch)
        record_validation(history, batch, losses)
        board.validation(batch, losses)
        return state, losses

    with (
        StepTimer() as timer,
        PreemptionWatch() as preemption,
        closing(checkpoints),
        open_tensorboard(tensorboard_dir) as board,
    ):
        done, state, history = resume(checkpoints, state, history, config)
        board.start(done)
        if done and plan.validates_at(done):
            # The new event file supersedes the old ones from `done` on, this
            # validation included: write it again, from the restored history.
            board.validation(done, validation_at(history, done))
        record["resumed_from_batch"] = done
        logger.info("Run record:\n%s", describe_record(record))
        if done < config.n_batches:
            logger.info(
                "Training %d replicates for %s of %d trials each",
                config.n_replicates,
                _batch_span(done, config.n_batches),
                config.batch_size,
            )
        else:
            logger.info(
                "Nothing to train: all %d batches were done already (the final checkpoint)",
                config.n_batches,
            )
        rate = BatchRate(done)
        if done == 0:
            state, _ = validated(state, 0)
            record_status(history, state.diverged_at, state.best_batch, state.best_loss)
            if plan.snapshots_at(0):
                record_snapshot(history, 0, state.params)
        bar = tqdm(
            total=config.n_batches,
            initial=done,
            # A bar on a terminal only (tqdm's None): never in a log file.
            disable=None if progress else True,
            unit="batch",
            desc="train",
        )
        with bar:
            for start, stop in plan.chunks(done):
                kill_point("chunk")
                with timer.chunk(stop - start):
                    new_state, records = trainer.unpad_chunk(
                        *trainer.run_chunk(
                            trainer.layout.place(state),
                            *_chunk_inputs(host_trials, start, stop, plan),
                        )
                    )
                    records = _first(records, stop - start)
                losses = records.loss
                policy.after_update(
                    np.asarray(state.diverged_at), np.asarray(new_state.diverged_at), losses, start
                )
                val_losses = None
                if plan.validates_at(stop):
                    new_state, val_losses = validated(new_state, stop)
                state = new_state
                record_batches(history, start, stop, records)
                board.batches(start, records)
                record_status(history, state.diverged_at, state.best_batch, state.best_loss)
                if plan.snapshots_at(stop):
                    record_snapshot(history, stop, state.params)
                bar.update(stop - start)
                bar.set_postfix(loss=f"{finite_mean(losses['total'][-1]):.3g}")
                if plan.logs_at(stop):
                    line = log_line(stop, config.n_batches, losses, val_losses, state)
                    logger.info("%s  %.1f batch/s", line, rate.since_last(stop))
                if checkpoints is not None and (plan.checkpoints_at(stop) or preemption.requested):
                    checkpoints.save(
                        stop,
                        state=state,
                        history=jax.tree.map(np.copy, history),
                        # Ranks the checkpoints for keeping: unvalidated ones (and ones with
                        # every replicate diverged) rank last.
                        loss=np.inf
                        if val_losses is None
                        else np.nan_to_num(finite_mean(val_losses["total"]), nan=np.inf),
                    )
                    kill_point("checkpoint")
                if preemption.requested and stop < config.n_batches:
                    raise TrainingPreempted(
                        batch=stop,
                        signal_name=preemption.requested,
                        where="(none: no checkpoint directory was given)"
                        if checkpoints is None
                        else f"in {checkpoints.directory}",
                    )
                if on_log is not None:
                    on_log(stop, history)
    record["timing"] = timer.summary()
    logger.info(
        "Training done: %s in %.1f s",
        _batch_span(done, config.n_batches)
        if done < config.n_batches
        else "no batch was left to train",
        record["timing"]["total_seconds"],
    )
    logger.info("Run record:\n%s", describe_record(record))
    return TrainResult(
        ensemble=trainer.ensemble(state.params),
        best_ensemble=trainer.ensemble(state.best_params),
        history=history,
        state=state,
        run_id=identity,
        record=record,
    )


def _batch_span(done: int, n_batches: int) -> str:
    """The batches a run trains when `done` (< `n_batches`) were done, in words."""
    if done + 1 == n_batches:
        return f"batch {n_batches} (the last)"
    return f"batches {done + 1} to {n_batches}"


def _chunk_inputs(
    trials: Trials, start: int, stop: int, plan: TrainingPlan
) -> tuple[Trials, np.ndarray, np.ndarray, np.ndarray]:
    """The compiled call's inputs for batches ``start:stop``: their trials with the
    batch axis first, the batch indices, the active flags and the update rules'
    flags, each padded to the plan's chunk length (the padding's steps are skipped)."""
    length = plan.chunk_length
    pad = length - (stop - start)

    def batches(x):
        x = np.swapaxes(x[:, start:stop], 0, 1)
        return np.concatenate([x, np.repeat(x[-1:], pad, axis=0)]) if pad else x

    index = np.arange(start, start + length, dtype=np.int32)
    flags = np.zeros((length, plan.rule_flags.shape[1]), bool)
    flags[: stop - start] = plan.rule_flags[start:stop]
    return jax.tree.map(batches, trials), index, index < stop, flags


def _first(records: BatchRecords, n: int) -> BatchRecords:
    """The records of a compiled call's first `n` batches (the rest were skipped)."""
    return jax.tree.map(lambda x: np.asarray(x)[:n], records)
