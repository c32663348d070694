"""The resumable training driver: :func:`train` runs a :class:`Trainer`'s compiled chunks
and validates between them, resumes where a run stopped, and hands each step to its
callbacks (:mod:`._callbacks`: checkpoints, logs, TensorBoard, run record, preemption).

The loop is a generator, :func:`training_steps`, that hands out the compute of each chunk
(a :class:`ChunkRequest`) and takes its result back: :func:`train` computes each chunk
with the run's own compiled program, and :func:`motorflow.train_pack` computes the chunks
of several runs in one program (:mod:`._packs`)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import equinox as eqx
import jax
import numpy as np
from jaxtyping import PRNGKeyArray

from ._config import TrainConfig
from .._faults import kill_point
from .._tasks import CenterOut, Task, Trials
from ._callbacks import Callbacks, ChunkEnd, OnLog
from ._divergence import DivergencePolicy
from ._history import History, empty_history, record_batches, record_snapshot, record_status
from ._plan import TrainingPlan
from ._preemption import Preemption
from ._progress import Progress
from ._resume import CheckpointWriter, open_checkpoints, resume, resume_hint
from ._run_identity import run_fingerprint, run_id, trials_to_validate_on
from ._run_record import RunRecorder, parameter_table
from ._state import BatchRecords, TrainState
from ._tensorboard import TensorBoardEvents
from ._trainer import Trainer
from ._validation import Validation


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


class ChunkRequest(NamedTuple):
    """A run waiting on one compiled call: batches ``start:stop`` trained by `trainer`
    from `state` (placed on its devices) on `inputs`, the call's arguments after the
    state (:func:`_chunk_inputs`)."""

    trainer: Trainer
    state: TrainState
    inputs: tuple[Trials, np.ndarray, np.ndarray, np.ndarray]
    start: int
    stop: int

    def run(self) -> tuple[TrainState, BatchRecords]:
        """The call computed alone, by the trainer's own compiled program."""
        return self.finish(self.trainer.run_chunk(self.state, *self.inputs))

    def finish(self, output: tuple[TrainState, BatchRecords]) -> tuple[TrainState, BatchRecords]:
        """What the run takes back of the compiled call's `output`: the state and the
        records cut to the real replicates, the records of its batches only, on the host."""
        new_state, records = self.trainer.unpad_chunk(*output)
        return new_state, _first(records, self.stop - self.start)


TrainingSteps = Generator[ChunkRequest, tuple[TrainState, BatchRecords], TrainResult]


def run_alone(steps: TrainingSteps) -> TrainResult:
    """The result of a run's `steps` (:func:`training_steps`), each chunk computed by
    its own compiled program; an error of the compute is thrown into the run, which
    closes what it holds open on the way out."""
    try:
        request = next(steps)
        while True:
            try:
                output = request.run()
            except BaseException as error:
                request = steps.throw(error)
            else:
                request = steps.send(output)
    except StopIteration as done:
        return done.value


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
    return run_alone(
        training_steps(
            ensemble,
            trials,
            task,
            config,
            key=key,
            checkpoint_dir=checkpoint_dir,
            validation=validation,
            progress=progress,
            on_log=on_log,
            restart=restart,
            initial_opt_state=initial_opt_state,
            tensorboard_dir=tensorboard_dir,
            invocation=invocation,
        )
    )


def training_steps(
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
) -> TrainingSteps:
    """:func:`train` (same arguments, same result) as a generator that hands out each
    chunk's compute: it yields a :class:`ChunkRequest` per compiled call and takes back
    what :meth:`ChunkRequest.run` would return, ``(new_state, records)``, by ``send``;
    its return value (``StopIteration.value``) is the :class:`TrainResult`. Everything
    else of the run (resuming, validation, divergence, history, callbacks, checkpoints,
    preemption) happens inside, between its yields, with its contexts held open across
    them: whoever drives it must ``throw`` an error of the compute into it (or ``close``
    it), so that its checkpoints are closed and its signal handlers put back."""
    _check_trials(trials, config, task)
    trainer = Trainer(ensemble, task, config, constraint_key=jax.random.fold_in(key, 2))
    plan = TrainingPlan(config)
    noise_key, validation_key = jax.random.split(key)
    state = trainer.layout.place(
        trainer.init(key=noise_key, learning_key=jax.random.fold_in(key, 3))
    )
    if initial_opt_state is not None:
        state = eqx.tree_at(lambda s: s.opt_state, state, initial_opt_state)
    parameters = parameter_table(trainer.initial_params)
    history = _empty_history(config, plan, parameters)
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
    recorder = RunRecorder(parameters, invocation, config.n_batches)
    checkpoints = open_checkpoints(checkpoint_dir, identity, fingerprint, config, restart)
    policy = DivergencePolicy(config.on_divergence, lambda: resume_hint(checkpoints))
    validate = Validation(trainer, validation_trials, validation_key, policy)
    preemption = Preemption(config.n_batches, checkpoints)
    writer = CheckpointWriter(checkpoints, plan, preemption)
    board = TensorBoardEvents(tensorboard_dir, plan)
    shown = Progress(config, plan, bar=progress)
    # Every hook calls them in this order; the `with` enters them in another, so that on
    # the way out the bar closes first and the step timer stops last, after the
    # checkpoints' writes and with the signal handlers still in place until they are done.
    callbacks = Callbacks(board, recorder, shown, writer, preemption, OnLog(on_log))
    with recorder, preemption, writer, board, shown:
        done, state, history = resume(checkpoints, state, history, config)
        callbacks.on_resume(done, history)
        if done == 0:
            state, val_losses = validate(state, 0, history)
            callbacks.on_validation(0, val_losses)
            _record_state(history, 0, state, plan)
        callbacks.on_loop_start(done)
        for start, stop in plan.chunks(done):
            kill_point("chunk")
            request = ChunkRequest(
                trainer,
                trainer.layout.place(state),
                _chunk_inputs(host_trials, start, stop, plan),
                start,
                stop,
            )
            # The time from the request to its result: in a pack, the shared call's.
            with recorder.timer.chunk(stop - start):
                new_state, records = yield request
            policy.after_update(
                np.asarray(state.diverged_at),
                np.asarray(new_state.diverged_at),
                records.loss,
                start,
            )
            val_losses = None
            if plan.validates_at(stop):
                new_state, val_losses = validate(new_state, stop, history)
                callbacks.on_validation(stop, val_losses)
            state = new_state
            record_batches(history, start, stop, records)
            _record_state(history, stop, state, plan)
            callbacks.on_chunk_end(ChunkEnd(start, stop, records, val_losses, state, history))
    return TrainResult(
        ensemble=trainer.ensemble(state.params),
        best_ensemble=trainer.ensemble(state.best_params),
        history=history,
        state=state,
        run_id=identity,
        record=recorder.record,
    )


def _empty_history(
    config: TrainConfig, plan: TrainingPlan, parameters: dict[str, dict[str, Any]]
) -> History:
    """The history of a run of `config` on `plan` that trains `parameters`
    (:func:`parameter_table`), before its first batch."""
    return empty_history(
        list(config.loss.terms),
        n_batches=config.n_batches,
        n_replicates=config.n_replicates,
        validation_steps=plan.validate,
        snapshot_steps=plan.snapshot,
        parameter_shapes={name: entry["shape"] for name, entry in parameters.items()},
        alignment_groups=list(parameters),
    )


def _record_state(history: History, batch: int, state: TrainState, plan: TrainingPlan) -> None:
    """Copy the replicates' status after `batch` batches into `history`, and their
    parameters when `plan` snapshots there."""
    record_status(history, state.diverged_at, state.best_batch, state.best_loss)
    if plan.snapshots_at(batch):
        record_snapshot(history, batch, state.params)


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
    # The trials' program form: runs of other perturbation strengths share a program.
    return jax.tree.map(batches, trials.program_form()), index, index < stop, flags


def _first(records: BatchRecords, n: int) -> BatchRecords:
    """The records of a compiled call's first `n` batches (the rest were skipped)."""
    return jax.tree.map(lambda x: np.asarray(x)[:n], records)
