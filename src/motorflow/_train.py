"""Training an ensemble: pure init/chunk/validate functions and the resumable driver.

All replicates train in one compiled program: a `lax.scan` over a chunk of
batches of a map over replicates. Between chunks the driver records history and,
on their schedules (:class:`TrainingPlan`), measures the validation loss, logs and
checkpoints.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Int, PRNGKeyArray
from tqdm.auto import tqdm

from ._checkpoint import Checkpoints, CheckpointStore
from ._config import TrainConfig
from ._ensemble import n_replicates
from ._episode import run_trials
from ._faults import kill_point
from ._history import History, empty_history
from ._identity import code_version, json_digest, tree_digest
from ._losses import loss_terms, total_loss
from ._optim import learning_rate_schedule, make_optimizer
from ._plan import TrainingPlan
from ._preemption import PreemptionWatch, TrainingPreempted
from ._run_record import StepTimer, describe_record, environment, parameter_table
from ._sharding import ReplicateLayout
from ._task import CenterOut, Task, Trials
from ._trainable import trainable_filter

logger = logging.getLogger("motorflow")


class TrainState(eqx.Module):
    """Everything that changes during training (a checkpoint is exactly this + history).

    **Arguments:**

    - `params`: the trainable arrays of the ensemble (replicate axis first), None elsewhere.
    - `opt_state`: the optimizer state, one per replicate (replicate axis first).
    - `step`: how many batches have been trained.
    - `key`: the base key of the per-batch noise; batch b uses ``fold_in(key, b)``.
    """

    params: Any
    opt_state: Any
    step: Int[Array, ""]
    key: PRNGKeyArray


class TrainResult(eqx.Module):
    """The trained ensemble, its history, the final train state, the run's identity and
    its record (parameters, machine, versions, step times: :mod:`motorflow._run_record`)."""

    ensemble: Any
    history: History
    state: TrainState
    run_id: str = eqx.field(static=True)
    record: dict = eqx.field(static=True, default_factory=dict)


class NonFiniteLossError(RuntimeError):
    """Training diverged: a loss or a parameter became NaN or infinite.

    Training stops before anything is written from the non-finite state; `what`
    says where it was seen (training loss, validation loss or parameters).
    """

    def __init__(
        self,
        *,
        batch: int,
        replicates: list[int],
        terms: list[str],
        resume_hint: str,
        what: str = "training loss",
    ):
        self.batch, self.replicates, self.terms, self.what = batch, replicates, terms, what
        where = "loss term(s)" if what != "parameters" else "in"
        super().__init__(
            f"Non-finite {what} at batch {batch} in replicate(s) "
            f"{', '.join(map(str, replicates))}, {where} {', '.join(terms)}; "
            f"training stopped. {resume_hint} Running again unchanged would diverge "
            "again: lower optimizer.learning_rate, set optimizer.clip_global_norm or "
            "reduce the noise, then run again (with changed settings training starts "
            "afresh; checkpoints of other settings are never resumed)."
        )


class Trainer:
    """The pure functions of one training run, closed over its static setup.

    **Arguments:**

    - `ensemble`: the initial ensemble (replicate axis first).
    - `task`: the task whose inputs the network receives.
    - `config`: the training config.
    - `vectorize_replicates`: train a device's replicates as one batched (vmapped)
      program rather than one after another. By default only off the CPU: a GPU
      needs the batch to be busy, while XLA's CPU backend runs plain matmuls faster
      than batched ones, and sequential replicates give results independent of how
      many replicates share a device.
    """

    def __init__(
        self,
        ensemble: eqx.Module,
        task: Task,
        config: TrainConfig,
        *,
        vectorize_replicates: bool | None = None,
    ):
        self.task, self.config = task, config
        if vectorize_replicates is None:
            vectorize_replicates = jax.default_backend() != "cpu"
        self.n_replicates = n_replicates(ensemble)
        if self.n_replicates != config.n_replicates:
            raise ValueError(
                f"the ensemble has {self.n_replicates} replicates but train.n_replicates "
                f"is {config.n_replicates}"
            )
        selected = trainable_filter(ensemble, config.trainable, "train.trainable")
        params, rest = eqx.partition(ensemble, selected)
        self.initial_params = params
        self.frozen, self.static = eqx.partition(rest, eqx.is_array)
        self.layout = ReplicateLayout.over_devices(self.n_replicates)
        # lax.map's batch_size: all of a device's replicates at once, or one at a time.
        self._replicates_per_step = self.layout.n_padded if vectorize_replicates else None
        self.optimizer = make_optimizer(config.optimizer, config.n_batches)
        self.schedule = learning_rate_schedule(config.optimizer, config.n_batches)
        self.run_chunk = jax.jit(self._chunk)
        self.validate = jax.jit(self._validate)
        self.finite_params = jax.jit(_finite_per_replicate)

    def init(self, key: PRNGKeyArray) -> TrainState:
        """The state before the first batch; `key` seeds the per-batch noise."""
        return TrainState(
            params=self.initial_params,
            opt_state=jax.vmap(self.optimizer.init)(self.initial_params),
            step=jnp.asarray(0, jnp.int32),
            key=key,
        )

    def ensemble(self, params: Any) -> eqx.Module:
        """The ensemble with `params` in place of its trainable arrays."""
        return eqx.combine(params, self.frozen, self.static)

    def _replicate_loss(self, params, frozen, trials: Trials, key):
        model = eqx.combine(params, frozen, self.static)
        keys = jax.random.split(key, trials.init_pos.shape[0])
        rollouts, targets = run_trials(model, self.task, trials, keys)
        terms = loss_terms(self.config.loss, rollouts, targets)
        return total_loss(self.config.loss, terms), terms

    def _update(self, params, opt_state, frozen, trials: Trials, key):
        def one(params, opt_state, frozen, trials, key):
            (total, terms), grads = jax.value_and_grad(self._replicate_loss, has_aux=True)(
                params, frozen, trials, key
            )
            updates, opt_state = self.optimizer.update(grads, opt_state, params)
            return eqx.apply_updates(params, updates), opt_state, {**terms, "total": total}

        keys = self.layout.spread(jax.random.split(key, self.n_replicates))
        shared = self.config.shared_trials
        if shared:
            trials = jax.tree.map(lambda x: x[0], trials)

        # On CPU, one replicate after another (lax.map, not vmap): a replicate's trials
        # then form plain 2-D matmuls, which XLA runs faster on CPU than batched ones
        # (2.4x at the tutorial size), and its arithmetic does not depend on how many
        # replicates share a device, so a sharded run is bitwise-identical to one device.
        def local(params, opt_state, frozen, trials, keys):
            batch_size = self._replicates_per_step
            if shared:
                return jax.lax.map(
                    lambda xs: one(xs[0], xs[1], xs[2], trials, xs[3]),
                    (params, opt_state, frozen, keys),
                    batch_size=batch_size,
                )
            return jax.lax.map(
                lambda xs: one(*xs),
                (params, opt_state, frozen, trials, keys),
                batch_size=batch_size,
            )

        return self.layout.per_device(local, replicated_args=(3,) if shared else ())(
            params, opt_state, frozen, trials, keys
        )

    def _chunk(
        self,
        state: TrainState,
        trials: Trials,
        batch_index: Int[Array, " chunk"],
        active: Bool[Array, " chunk"] | None = None,
    ):
        """Train on the consecutive batches `batch_index` whose `active` flag is set (the
        rest of a chunk is skipped; None: all); `trials` leaves are
        `(chunk, replicate, trial, ...)`.

        Returns the new state, the losses per term `(chunk, replicate)` and the
        learning rates `(chunk,)`, NaN at skipped steps.
        """

        spread, frozen = self.layout.spread, self.layout.spread(self.frozen)
        if not self.config.shared_trials:
            trials = spread(trials, axis=1)
        if active is None:
            active = jnp.ones(batch_index.shape, bool)

        def step(carry, batch_trials, batch):
            params, opt_state = carry
            params, opt_state, losses = self._update(
                params, opt_state, frozen, batch_trials, jax.random.fold_in(state.key, batch)
            )
            return (params, opt_state), (losses, self.schedule(batch))

        def body(carry, xs):
            batch_trials, batch, is_active = xs

            def skip(carry, batch_trials, batch):
                outputs = jax.eval_shape(step, carry, batch_trials, batch)[1]
                return carry, jax.tree.map(lambda x: jnp.full(x.shape, jnp.nan, x.dtype), outputs)

            return jax.lax.cond(is_active, step, skip, carry, batch_trials, batch)

        (params, opt_state), (losses, lr) = jax.lax.scan(
            body,
            (spread(state.params), spread(state.opt_state)),
            (trials, batch_index, active),
        )
        params, opt_state = self.layout.gather((params, opt_state))
        n_done = jnp.sum(active, dtype=state.step.dtype)
        new_state = TrainState(params, opt_state, state.step + n_done, state.key)
        return new_state, self.layout.gather(losses, axis=1), lr

    def _validate(self, params, trials: Trials, key):
        """Loss per term and total, per replicate, on shared validation `trials`."""
        keys = jax.random.split(key, self.n_replicates)
        total, terms = jax.vmap(self._replicate_loss, in_axes=(0, 0, None, 0))(
            params, self.frozen, trials, keys
        )
        return {**terms, "total": total}


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


def _validation_trials(task: Task, validation: CenterOut | None, key: PRNGKeyArray) -> Trials:
    """The given validation set's trials, else the task's, perturbed as in training."""
    if validation is None:
        validation = task.validation_set(jax.random.fold_in(key, 1))
    return validation.trials


def run_fingerprint(
    ensemble: eqx.Module,
    trials: Trials,
    task: Task,
    config: TrainConfig,
    *,
    key: PRNGKeyArray,
    validation: CenterOut | None = None,
    initial_opt_state: Any = None,
) -> dict[str, Any]:
    """Everything a training run's result depends on, as plain values.

    The initial ensemble's structure with its settings (static fields) and arrays,
    the trial specs, the validation set, the key, the training config except the
    checkpoint cadence and retention (which only shape the resume state), the task,
    and the library's code version. Its digest is the run's identity (:func:`run_id`).
    """
    validation_trials = _validation_trials(task, validation, key)
    continued = (
        {} if initial_opt_state is None else {"initial_opt_state": tree_digest(initial_opt_state)}
    )
    return {
        **continued,
        "train": config.result_settings(),
        "task": task.config.to_dict(),
        "initial_ensemble": tree_digest(ensemble),
        "trials": tree_digest(jax.tree.map(np.asarray, trials)),
        "validation": tree_digest(validation_trials),
        "key": tree_digest(key),
        "code": code_version(),
    }


def run_id(fingerprint: dict[str, Any]) -> str:
    """The identity of a training run: the digest of its :func:`run_fingerprint`."""
    return json_digest(fingerprint)


def _finite_per_replicate(params: Any) -> Array:
    """Whether every parameter of each replicate is finite, `(replicate,)`."""
    leaves = [x for x in jax.tree.leaves(params) if eqx.is_inexact_array(x)]
    per_leaf = [jnp.all(jnp.isfinite(x.reshape(x.shape[0], -1)), axis=1) for x in leaves]
    return jnp.all(jnp.stack(per_leaf), axis=0)


def _format_losses(losses: dict[str, np.ndarray]) -> str:
    return "  ".join(f"{name} {float(np.mean(value)):.3g}" for name, value in losses.items())


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
    - `checkpoint_dir`: a :class:`CheckpointStore` to checkpoint into (on the
      ``checkpoint`` schedule and at the end) and resume from; None trains
      without checkpoints. Only checkpoints of the identical run (same
      :func:`run_fingerprint`) are resumed; those of other runs are kept there for
      a while and never applied to this one.
    - `validation`: the validation set; by default the task's center-out set under
      its training perturbations (:meth:`Task.validation_set`).
    - `progress`: show a progress bar.
    - `on_log`: called after each compiled call (and its checkpoint, if any) with
      the number of batches done and the history so far.
    - `restart`: discard this run's checkpoints and train from the first batch.
    - `initial_opt_state`: start from this optimizer state (one per replicate, as
      :attr:`TrainState.opt_state`) rather than a fresh one: continue a training.

    A resumed run ends bitwise-identical to an uninterrupted one on the same device.
    SIGTERM or SIGUSR1 (in the main thread) make it checkpoint after the running
    compiled call and raise :class:`TrainingPreempted`. Raises :class:`NonFiniteLossError` when a loss or a parameter becomes NaN/inf;
    nothing is checkpointed from a non-finite state and the newest checkpoint before
    it is kept.
    """
    _check_trials(trials, config, task)
    trainer = Trainer(ensemble, task, config)
    plan = TrainingPlan(config)
    noise_key, validation_key = jax.random.split(key)
    state = trainer.init(noise_key)
    if initial_opt_state is not None:
        state = eqx.tree_at(lambda s: s.opt_state, state, initial_opt_state)
    history = empty_history(
        list(config.loss.terms),
        n_batches=config.n_batches,
        n_replicates=config.n_replicates,
        validation_steps=plan.validate,
    )
    host_trials = jax.tree.map(np.asarray, trials)
    validation_trials = _validation_trials(task, validation, key)
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
    record = {"parameters": parameter_table(trainer.initial_params), **environment()}
    checkpoints = _open_checkpoints(checkpoint_dir, identity, fingerprint, config, restart)
    with StepTimer() as timer, PreemptionWatch() as preemption, _closing(checkpoints):
        done, state, history = _resume(checkpoints, state, history, config)
        record["resumed_from_batch"] = done
        logger.info("Run record:\n%s", describe_record(record))
        validate, run_chunk = trainer.validate, trainer.run_chunk
        last_validation = np.nan
        if done == 0:
            initial = validate(state.params, validation_trials, validation_key)
            _raise_if_non_finite(
                jax.tree.map(lambda v: np.asarray(v)[None], initial),
                0,
                checkpoints,
                what="validation loss",
            )
            _record_validation(history, 0, initial)
        bar = tqdm(
            total=config.n_batches, initial=done, disable=not progress, unit="batch", desc="train"
        )
        with bar:
            for start, stop in plan.chunks(done):
                kill_point("chunk")
                with timer.chunk(stop - start):
                    new_state, losses, lr = run_chunk(
                        trainer.layout.place(state), *_chunk_inputs(host_trials, start, stop, plan)
                    )
                    losses = {k: np.asarray(v)[: stop - start] for k, v in losses.items()}
                _raise_if_non_finite(losses, start, checkpoints)
                _raise_if_non_finite_params(
                    np.asarray(trainer.finite_params(new_state.params)), stop - 1, checkpoints
                )
                val_losses = None
                if plan.validates_at(stop):
                    val_losses = jax.tree.map(
                        np.asarray, validate(new_state.params, validation_trials, validation_key)
                    )
                    _raise_if_non_finite(
                        jax.tree.map(lambda v: v[None], val_losses),
                        stop,
                        checkpoints,
                        what="validation loss",
                    )
                state = new_state
                for name, value in losses.items():
                    history["loss"][name][start:stop] = value
                history["learning_rate"][start:stop] = np.asarray(lr)[: stop - start]
                if val_losses is not None:
                    index = int(np.searchsorted(history["validation_step"], stop))
                    _record_validation(history, index, val_losses)
                    last_validation = float(np.mean(val_losses["total"]))
                bar.update(stop - start)
                bar.set_postfix(loss=f"{float(np.mean(losses['total'][-1])):.3g}")
                if plan.logs_at(stop):
                    logger.info(
                        "batch %d/%d  train: %s%s",
                        stop,
                        config.n_batches,
                        _format_losses({k: v[-1] for k, v in losses.items()}),
                        "" if val_losses is None else f"  validation: {_format_losses(val_losses)}",
                    )
                if checkpoints is not None and (plan.checkpoints_at(stop) or preemption.requested):
                    checkpoints.save(
                        stop,
                        state=state,
                        history=jax.tree.map(np.copy, history),
                        # Ranks the checkpoints for keeping: unvalidated ones rank last.
                        loss=last_validation if val_losses is not None else np.inf,
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
    logger.info("Training done:\n%s", describe_record(record))
    return TrainResult(
        ensemble=trainer.ensemble(state.params),
        history=history,
        state=state,
        run_id=identity,
        record=record,
    )


@contextlib.contextmanager
def _closing(checkpoints: Checkpoints | None) -> Iterator[None]:
    """Close `checkpoints` (waiting for its writes) however the block ends."""
    try:
        yield
    finally:
        if checkpoints is not None:
            checkpoints.close()


def _open_checkpoints(
    checkpoint_dir: str | Path | None,
    identity: str,
    fingerprint: dict[str, Any],
    config: TrainConfig,
    restart: bool,
) -> Checkpoints | None:
    """This run's checkpoints in the store at `checkpoint_dir` (None: no checkpoints)."""
    if checkpoint_dir is None:
        return None
    store = CheckpointStore(checkpoint_dir)
    others = [run for run in store.runs() if run != identity[:16]]
    if others:
        logger.info(
            "%s holds the checkpoints of %d other configuration(s); they are kept "
            "(for reverting an edit) and never applied to this one.",
            store.directory,
            len(others),
        )
    return store.open(
        identity, fingerprint=fingerprint, keep=config.keep_checkpoints, fresh=restart
    )


def _resume(
    checkpoints: Checkpoints | None, state: TrainState, history: History, config: TrainConfig
) -> tuple[int, TrainState, History]:
    """The batches done, state and history of the newest checkpoint, else the given
    ones with 0 batches done."""
    restored = (
        checkpoints.restore_newest(state_like=state, history_like=history)
        if checkpoints is not None
        else None
    )
    if restored is None:
        if checkpoints is not None:
            logger.info(
                "Training from the first batch; checkpoints go to %s", checkpoints.directory
            )
        return 0, state, history
    _, state, restored_history = restored
    # Restored mappings come back in sorted key order; keep the loss terms' order.
    history = _in_order_of(history, restored_history)
    done = int(state.step)
    if done == config.n_batches:
        logger.info(
            "This configuration finished training earlier (checkpoint at batch %d in "
            "%s); its results are written without training again.",
            done,
            checkpoints.directory,
        )
    else:
        logger.info("Resuming from the checkpoint at batch %d in %s", done, checkpoints.directory)
    return done, state, history


def _in_order_of(template: Any, tree: Any) -> Any:
    """`tree`'s values, with every mapping's keys in the order of `template`'s."""
    if isinstance(template, dict):
        return {key: _in_order_of(value, tree[key]) for key, value in template.items()}
    return tree


def _chunk_inputs(
    trials: Trials, start: int, stop: int, plan: TrainingPlan
) -> tuple[Trials, np.ndarray, np.ndarray]:
    """The compiled call's inputs for batches ``start:stop``: their trials with the
    batch axis first, the batch indices and the active flags, each padded to the
    plan's chunk length (the padding's steps are skipped)."""
    length = plan.chunk_length
    pad = length - (stop - start)

    def batches(x):
        x = np.swapaxes(x[:, start:stop], 0, 1)
        return np.concatenate([x, np.repeat(x[-1:], pad, axis=0)]) if pad else x

    index = np.arange(start, start + length, dtype=np.int32)
    return jax.tree.map(batches, trials), index, index < stop


def _record_validation(history: History, index: int, validation: dict[str, Array]) -> None:
    for name, value in validation.items():
        history["validation"][name][index] = np.asarray(value)


def _resume_hint(checkpoints: Checkpoints | None) -> str:
    if checkpoints is None:
        return "No checkpoints were being written."
    latest = checkpoints.latest_step()
    if latest is None:
        return f"No checkpoint had been written yet in {checkpoints.directory}."
    return f"The last good checkpoint (batch {latest}) is kept in {checkpoints.directory}."


def _raise_if_non_finite(
    losses: dict[str, np.ndarray],
    start: int,
    checkpoints: Checkpoints | None,
    *,
    what: str = "training loss",
) -> None:
    """Raise for the first batch of `losses` (`(chunk, replicate)` per term) that is not finite."""
    bad = np.logical_or.reduce([~np.isfinite(value) for value in losses.values()])
    if not bad.any():
        return
    offset = int(np.argmax(bad.any(axis=1)))
    replicates = [int(r) for r in np.flatnonzero(bad[offset])]
    terms = [
        name
        for name, value in losses.items()
        if name != "total" and not np.isfinite(value[offset]).all()
    ] or ["total"]
    raise NonFiniteLossError(
        batch=start + offset,
        replicates=replicates,
        terms=terms,
        resume_hint=_resume_hint(checkpoints),
        what=what,
    )


def _raise_if_non_finite_params(
    finite: np.ndarray, batch: int, checkpoints: Checkpoints | None
) -> None:
    """Raise when the update of `batch` left some replicate's parameters non-finite."""
    if finite.all():
        return
    raise NonFiniteLossError(
        batch=batch,
        replicates=[int(r) for r in np.flatnonzero(~finite)],
        terms=["the trainable parameters"],
        resume_hint=_resume_hint(checkpoints),
        what="parameters",
    )
