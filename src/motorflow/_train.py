"""Training an ensemble: pure init/chunk/validate functions and the resumable driver.

All replicates train in one compiled program: a `lax.scan` over a chunk of
batches of a map over replicates. Between chunks the driver records history and,
on their schedules (:class:`TrainingPlan`), measures the validation loss, logs and
checkpoints.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray
from tqdm.auto import tqdm

from ._checkpoint import Checkpoints, CheckpointStore
from ._config import TrainConfig
from ._constraints import Constraints
from ._divergence import HEALTHY, DivergencePolicy, all_finite, keep_where
from ._ensemble import n_replicates, take_replicate
from ._episode import run_segment, run_trials, trial_drive
from ._faults import kill_point
from ._history import (
    History,
    empty_history,
    record_batches,
    record_snapshot,
    record_status,
    record_validation,
    validation_at,
)
from ._identity import code_version, json_digest, tree_digest
from ._learning import Batch
from ._losses import Span, loss_terms, total_loss
from ._optim import LeafOptimizer
from ._plan import TrainingPlan
from ._preemption import PreemptionWatch, TrainingPreempted
from ._run_record import (
    StepTimer,
    describe_record,
    environment,
    parameter_table,
)
from ._segments import train_in_segments
from ._sharding import ReplicateLayout
from ._task import CenterOut, Task, Trials
from ._tensorboard import open_tensorboard
from ._trainable import either, learning_rate_scales, trainable_filter, trained_subsets
from ._update_rules import UpdateRules

logger = logging.getLogger("motorflow")


class TrainState(eqx.Module):
    """Everything that changes during training (a checkpoint is exactly this + history).

    **Arguments:**

    - `params`: the trainable arrays of the ensemble (replicate axis first), None elsewhere.
    - `opt_state`: the optimizer state, one per replicate (replicate axis first).
    - `step`: how many batches have been trained.
    - `key`: the base key of the per-batch noise; batch b uses ``fold_in(key, b)``.
    - `diverged_at`: per replicate, -1 while it trains; else the batch whose update
      gave a non-finite loss or parameters (or after which its validation loss was
      not finite): it keeps its parameters after that many batches.
    - `best_params`, `best_loss`, `best_batch`: per replicate, the parameters with the
      lowest validation loss so far (the first of equals), that loss and the batch
      count it was measured after (-1 before the first validation).
    - `learning_state`: the learning rule's own state, one per replicate (random
      feedback weights, information matrices; None for backpropagation).
    """

    params: Any
    opt_state: Any
    learning_state: Any
    step: Int[Array, ""]
    key: PRNGKeyArray
    diverged_at: Int[Array, " replicate"]
    best_params: Any
    best_loss: Float[Array, " replicate"]
    best_batch: Int[Array, " replicate"]


class BatchRecords(eqx.Module):
    """What a compiled call records per batch, NaN at skipped steps (and for a replicate
    once it diverged).

    - `loss`: per loss term and ``total``, `(chunk, replicate)`.
    - `grad_norm`: ``total`` (and each term with ``gradient_norms: per_term``),
      `(chunk, replicate)`: :meth:`LeafOptimizer.gradient_norm`.
    - `learning_rate`: `(chunk,)`.
    """

    loss: dict[str, Array]
    grad_norm: dict[str, Array]
    learning_rate: Array


class TrainResult(eqx.Module):
    """The trained ensemble, the one with each replicate's best validated parameters,
    its history, the final train state, the run's identity and its record (parameters, machine, versions, step times: :mod:`motorflow._run_record`)."""

    ensemble: Any
    best_ensemble: Any
    history: History
    state: TrainState
    run_id: str = eqx.field(static=True)
    record: dict = eqx.field(static=True, default_factory=dict)


class Trainer:
    """The pure functions of one training run, closed over its static setup.

    **Arguments:**

    - `ensemble`: the initial ensemble (replicate axis first).
    - `task`: the task whose inputs the network receives.
    - `config`: the training config.
    - `constraint_key`: draws the weight constraints' fixed data (connectivity masks);
      needed when ``config.constraints`` has any. The ensemble is constrained before
      training and after every update.
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
        constraint_key: PRNGKeyArray | None = None,
        vectorize_replicates: bool | None = None,
    ):
        self.task, self.config = task, config
        self.isolate = config.on_divergence == "isolate"
        if vectorize_replicates is None:
            vectorize_replicates = jax.default_backend() != "cpu"
        self.n_replicates = n_replicates(ensemble)
        if self.n_replicates != config.n_replicates:
            raise ValueError(
                f"the ensemble has {self.n_replicates} replicates but train.n_replicates "
                f"is {config.n_replicates}"
            )
        if config.constraints and constraint_key is None:
            raise ValueError("train.constraints are set: give the Trainer a constraint_key")
        self.constraints = Constraints(
            config.constraints,
            ensemble,
            jax.random.key(0) if constraint_key is None else constraint_key,
        )
        ensemble = self.constraints.apply_ensemble(ensemble)
        self.rules = UpdateRules(config.update_rules, ensemble)
        self.learning = config.learning
        # One replicate's model, shapes only.
        self.template = eqx.filter_eval_shape(take_replicate, ensemble, 0)
        problem = self.learning.check_model(
            self.template.network.cell.KIND, self.template.plant, config.trained_paths
        )
        if problem is not None:
            raise ValueError(f"train.learning ({self.learning.kind}): {problem}")
        # The stages' trainable subsets; the parameters are every array the optimizer,
        # an update rule or the learning rule changes. The optimizer leaves the
        # learning rule's own arrays alone.
        owned_paths = self.learning.owned(self.template)
        self._learning_sets_params = bool(owned_paths)
        owned = trainable_filter(ensemble, owned_paths, "train.learning")
        subsets = [
            (start, jax.tree.map(lambda s, o: s and not o, subset, owned))
            for start, subset in trained_subsets(ensemble, config)
        ]
        optimized = either([subset for _, subset in subsets])
        changed_by_rules = either([self.rules.targets(ensemble), owned])
        selected = self.selected = either([optimized, changed_by_rules])
        params, rest = eqx.partition(ensemble, selected)
        self.stage_starts = jnp.asarray([start for start, _ in subsets], jnp.int32)
        # Per parameter array, whether each stage trains it, `(stage,)`.
        self.stage_tables = eqx.filter(
            jax.tree.map(lambda *s: jnp.asarray(s), *[subset for _, subset in subsets]), selected
        )
        # Whether some batch leaves a parameter to the rules alone (masking the optimizer).
        self._masked = len(subsets) > 1 or any(
            jax.tree.leaves(jax.tree.map(lambda o, r: r and not o, optimized, changed_by_rules))
        )
        self.initial_params = params
        self.frozen, self.static = eqx.partition(rest, eqx.is_array)
        self.layout = ReplicateLayout.over_devices(self.n_replicates)
        # lax.map's batch_size: all of a device's replicates at once, or one at a time.
        self._replicates_per_step = self.layout.n_padded if vectorize_replicates else None
        scales = learning_rate_scales(ensemble, optimized, config.optimizer)
        self.optimizer = LeafOptimizer(
            config.optimizer,
            config.n_batches,
            jax.tree.map(jnp.asarray, eqx.filter(scales, selected)),
        )
        self.schedule = self.optimizer.schedule
        self.run_chunk = jax.jit(self._chunk)
        self.validate = jax.jit(self._validate)
        self.keep_best = jax.jit(_keep_best)

    def init(self, key: PRNGKeyArray, *, learning_key: PRNGKeyArray | None = None) -> TrainState:
        """The state before the first batch; `key` seeds the per-batch noise and
        `learning_key` the learning rule's state (random feedback weights)."""
        per_replicate = (self.n_replicates,)
        keys = None if learning_key is None else jax.random.split(learning_key, self.n_replicates)
        ensemble = self.ensemble(self.initial_params)
        learning_state = eqx.filter_vmap(
            lambda model, key: self.learning.init(model, key=key),
            in_axes=(0, None if keys is None else 0),
        )(ensemble, keys)
        return TrainState(
            params=self.initial_params,
            opt_state=jax.vmap(self.optimizer.init)(self.initial_params),
            learning_state=learning_state,
            step=jnp.asarray(0, jnp.int32),
            key=key,
            diverged_at=jnp.full(per_replicate, HEALTHY, jnp.int32),
            best_params=self.initial_params,
            best_loss=jnp.full(per_replicate, jnp.inf, jnp.float32),
            best_batch=jnp.full(per_replicate, -1, jnp.int32),
        )

    def ensemble(self, params: Any) -> eqx.Module:
        """The ensemble with `params` in place of its trainable arrays."""
        return eqx.combine(params, self.frozen, self.static)

    def _replicate_loss(
        self,
        params,
        frozen,
        trials: Trials,
        key,
        *,
        states: bool = False,
        gradient_window: int | None = None,
        probe=None,
    ):
        """The total loss and (aux) the terms and, with `states`, the rollouts (else
        None); `gradient_window` truncates the gradient through the rollouts and a
        `probe` cuts the network out of it (the learning rule's, see
        :meth:`ClosedLoop.rollout`)."""
        model = eqx.combine(params, frozen, self.static)
        keys = jax.random.split(key, trials.init_pos.shape[0])
        rollouts, targets = run_trials(
            model, self.task, trials, keys, gradient_window=gradient_window, probe=probe
        )
        terms = loss_terms(self.config.loss, rollouts, targets)
        return total_loss(self.config.loss, terms), (terms, rollouts if states else None)

    def replicate_batch(self, params, frozen, trials: Trials, key: PRNGKeyArray) -> Batch:
        """What the learning rule sees of one replicate's batch: its loss as a function
        of `params` (with noise from `key`), its model, the task and the `trials`."""

        def loss(params, **options):
            return self._replicate_loss(params, frozen, trials, key, **options)

        return Batch(loss, eqx.combine(params, frozen, self.static), self.task, trials)

    def _learn(self, problem: Batch, state, fixed, batch, trained_in, rule_flags, *, states):
        """One update from `problem` (a batch, or a segment of it): the learning rule's
        gradient and the optimizer's step, then the rule's own changes, the update
        rules and the constraints. `state` is ``(params, opt_state, learning_state)``;
        returns the new one, the total, the terms, the gradient and the rollouts."""
        params, opt_state, learning_state = state
        frozen, prepared = fixed
        (total, (terms, rollouts)), grads, learning_state = self.learning.value_and_grad(
            problem, params, learning_state, states=states
        )
        params_now, opt_state = self.optimizer.step(grads, opt_state, params, batch, trained_in)
        if self.rules or self.constraints or self._learning_sets_params:
            model = eqx.combine(params_now, frozen, self.static)
            model, learning_state = self.learning.apply(problem, model, learning_state, rollouts)
            if self.rules:
                model = self.rules.apply(model, rollouts.hidden, rollouts.output, rule_flags)
            if self.constraints:
                model = self.constraints.apply(model, prepared)
            params_now = eqx.filter(model, self.selected)
        return (params_now, opt_state, learning_state), total, terms, grads, rollouts

    def _learn_in_segments(self, state, fixed, trials: Trials, key, batch, trained_in, length):
        """One replicate's batch run in segments of `length` steps, with an update after
        each (:mod:`motorflow._segments`): the new ``(params, opt_state,
        learning_state)``, the total and terms summed over the segments, and the sum of
        their gradients."""
        frozen, _ = fixed
        start = eqx.combine(state[0], frozen, self.static)
        keys = jax.random.split(key, trials.init_pos.shape[0])
        drives = jax.vmap(lambda trial, key: trial_drive(start, self.task, trial, key=key))(
            trials, keys
        )

        def segment_step(state, loop_states, first, size):
            def loss(params, *, states=False, gradient_window=None):
                model = eqx.combine(params, frozen, self.static)
                rollouts, targets = jax.vmap(
                    lambda drive, loop_state: run_segment(
                        model, drive, loop_state, first, size, gradient_window=gradient_window
                    )
                )(drives, loop_states)
                span = Span(first, self.task.n_steps, drives.start_pos)
                terms = loss_terms(self.config.loss, rollouts, targets, span)
                # The rollouts always: the next segment runs on from their `end`.
                return total_loss(self.config.loss, terms), (terms, rollouts)

            problem = Batch(
                loss, eqx.combine(state[0], frozen, self.static), self.task, trials, first
            )
            state, total, terms, grads, rollouts = self._learn(
                problem, state, fixed, batch, trained_in, None, states=True
            )
            return state, rollouts.end, total, terms, grads

        return train_in_segments(
            segment_step,
            state,
            jax.vmap(start.start)(trials.init_pos, trials.init_vel),
            n_steps=self.task.n_steps,
            length=length,
        )

    def _trained_in(self, batch: Int[Array, ""]) -> Any:
        """Per parameter array, whether the optimizer trains it in `batch` (its stage's
        subset); None when every parameter trains in every batch."""
        if not self._masked:
            return None
        stage = jnp.searchsorted(self.stage_starts, batch, side="right") - 1
        return jax.tree.map(lambda table: table[stage], self.stage_tables)

    def _term_gradient_norms(self, params, frozen, trials: Trials, key, trained_in):
        """Per loss term, the gradient norm of its weighted part (one backward pass each)."""
        names = list(self.config.loss.terms)
        weights = jnp.asarray([term.weight for term in self.config.loss.terms.values()])

        window = self.config.learning.gradient_window()

        def weighted(params):
            _, (terms, _) = self._replicate_loss(
                params, frozen, trials, key, gradient_window=window
            )
            return weights * jnp.stack([terms[name] for name in names])

        values, pullback = jax.vjp(weighted, params)
        (grads,) = jax.vmap(pullback)(jnp.eye(len(names), dtype=values.dtype))
        norms = jax.vmap(lambda g: self.optimizer.gradient_norm(g, trained_in))(grads)
        return dict(zip(names, norms, strict=True))

    def _update(
        self,
        params,
        opt_state,
        learning_state,
        fixed,
        trials: Trials,
        key,
        healthy,
        batch,
        rule_flags,
    ):
        """One batch's update of every replicate; a replicate not `healthy`, or whose
        loss or new parameters are not finite, keeps its parameters, optimizer and
        learning-rule state. Returns those, the losses and gradient norms (NaN where not
        healthy) and whether each replicate's update was kept."""

        def one(params, opt_state, learning_state, fixed, trials, key, healthy, batch, rule_flags):
            frozen, _ = fixed
            trained_in = self._trained_in(batch)
            state = (params, opt_state, learning_state)
            segment_length = self.learning.segment_length()
            if segment_length is None:
                problem = self.replicate_batch(params, frozen, trials, key)
                new_state, total, terms, grads, _ = self._learn(
                    problem, state, fixed, batch, trained_in, rule_flags, states=bool(self.rules)
                )
            else:
                new_state, total, terms, grads = self._learn_in_segments(
                    state, fixed, trials, key, batch, trained_in, segment_length
                )
            new_params = new_state[0]
            norms = {"total": self.optimizer.gradient_norm(grads, trained_in)}
            if self.config.gradient_norms == "per_term":
                norms |= self._term_gradient_norms(params, frozen, trials, key, trained_in)
            losses = {**terms, "total": total}
            # Watching the losses in the update costs XLA's CPU backend ~15% per batch
            # at the tutorial size (the parameters cost nothing), so only isolation,
            # which must not take a step from a non-finite loss, watches them here; a
            # stopping run finds a non-finite loss among the recorded ones.
            watched = (losses, new_params) if self.isolate else new_params
            ok = healthy & all_finite(watched)
            params, opt_state, learning_state = keep_where(ok, new_state, state)
            records = jax.tree.map(lambda x: jnp.where(healthy, x, jnp.nan), (losses, norms))
            return params, opt_state, learning_state, records, ok

        keys = self.layout.spread(jax.random.split(key, self.n_replicates))
        shared = self.config.shared_trials
        if shared:
            trials = jax.tree.map(lambda x: x[0], trials)

        # On CPU, one replicate after another (lax.map, not vmap): a replicate's trials
        # then form plain 2-D matmuls, which XLA runs faster on CPU than batched ones
        # (2.4x at the tutorial size), and its arithmetic does not depend on how many
        # replicates share a device, so a sharded run is bitwise-identical to one device.
        def local(
            params, opt_state, learning_state, fixed, trials, keys, healthy, batch, rule_flags
        ):
            def replicate(xs):
                params, opt_state, learning_state, fixed, key, healthy, *own = xs
                trials_here = own[0] if own else trials
                return one(
                    params,
                    opt_state,
                    learning_state,
                    fixed,
                    trials_here,
                    key,
                    healthy,
                    batch,
                    rule_flags,
                )

            xs = (
                params,
                opt_state,
                learning_state,
                fixed,
                keys,
                healthy,
                *(() if shared else (trials,)),
            )
            return jax.lax.map(replicate, xs, batch_size=self._replicates_per_step)

        replicated = (4, 7, 8) if shared else (7, 8)
        return self.layout.per_device(local, replicated_args=replicated)(
            params, opt_state, learning_state, fixed, trials, keys, healthy, batch, rule_flags
        )

    def _chunk(
        self,
        state: TrainState,
        trials: Trials,
        batch_index: Int[Array, " chunk"],
        active: Bool[Array, " chunk"] | None = None,
        rule_flags: Bool[Array, "chunk rule"] | None = None,
    ):
        """Train on the consecutive batches `batch_index` whose `active` flag is set (the
        rest of a chunk is skipped; None: all); `trials` leaves are
        `(chunk, replicate, trial, ...)`. `rule_flags` say which update rules run after
        each batch (None: all).

        Returns the new state and the :class:`BatchRecords`.
        """

        spread = self.layout.spread
        # What each replicate's update reads but never changes.
        fixed = spread((self.frozen, self.constraints.prepared))
        if not self.config.shared_trials:
            trials = spread(trials, axis=1)
        if active is None:
            active = jnp.ones(batch_index.shape, bool)
        if rule_flags is None:
            rule_flags = jnp.ones((*batch_index.shape, len(self.rules.rules)), bool)

        def step(carry, batch_trials, batch, flags):
            params, opt_state, learning_state, diverged_at = carry
            healthy = diverged_at == HEALTHY
            params, opt_state, learning_state, (losses, norms), ok = self._update(
                params,
                opt_state,
                learning_state,
                fixed,
                batch_trials,
                jax.random.fold_in(state.key, batch),
                healthy,
                batch,
                flags,
            )
            diverged_at = jnp.where(healthy & ~ok, batch, diverged_at)
            return (params, opt_state, learning_state, diverged_at), BatchRecords(
                losses, norms, self.schedule(batch)
            )

        def body(carry, xs):
            is_active, *inputs = xs

            def skip(carry, *inputs):
                outputs = jax.eval_shape(step, carry, *inputs)[1]
                return carry, jax.tree.map(lambda x: jnp.full(x.shape, jnp.nan, x.dtype), outputs)

            return jax.lax.cond(is_active, step, skip, carry, *inputs)

        carry, records = jax.lax.scan(
            body,
            spread((state.params, state.opt_state, state.learning_state, state.diverged_at)),
            (active, trials, batch_index, rule_flags),
        )
        params, opt_state, learning_state, diverged_at = self.layout.gather(carry)
        n_done = jnp.sum(active, dtype=state.step.dtype)
        new_state = eqx.tree_at(
            lambda s: (s.params, s.opt_state, s.learning_state, s.diverged_at, s.step),
            state,
            (params, opt_state, learning_state, diverged_at, state.step + n_done),
            is_leaf=lambda x: x is None,
        )
        per_replicate = self.layout.gather((records.loss, records.grad_norm), axis=1)
        return new_state, BatchRecords(*per_replicate, records.learning_rate)

    def _validate(self, params, trials: Trials, key):
        """Loss per term and total, per replicate, on shared validation `trials`."""
        keys = jax.random.split(key, self.n_replicates)
        total, (terms, _) = jax.vmap(self._replicate_loss, in_axes=(0, 0, None, 0))(
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


def _keep_best(state: TrainState, loss: Float[Array, " replicate"], batch) -> TrainState:
    """`state` with each replicate's best parameters replaced by its current ones where
    `loss` (validation, after `batch` batches; NaN never is) beats its best so far."""
    better = loss < state.best_loss

    def pick(new, old):
        return jnp.where(better.reshape(-1, *[1] * (new.ndim - 1)), new, old)

    return eqx.tree_at(
        lambda s: (s.best_params, s.best_loss, s.best_batch),
        state,
        (
            jax.tree.map(pick, state.params, state.best_params),
            jnp.where(better, loss, state.best_loss),
            jnp.where(better, batch, state.best_batch),
        ),
    )


def _format_losses(losses: dict[str, np.ndarray]) -> str:
    return "  ".join(f"{name} {np.nanmean(value):.3g}" for name, value in losses.items())


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
    - `tensorboard_dir`: write TensorBoard event files there
      (:mod:`motorflow._tensorboard`; needs tensorboardX); None: none.

    A resumed run ends bitwise-identical to an uninterrupted one on the same device.
    SIGTERM or SIGUSR1 (in the main thread) make it checkpoint after the running
    compiled call and raise :class:`TrainingPreempted`.

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
    state = trainer.init(noise_key, learning_key=jax.random.fold_in(key, 3))
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
    record = {"parameters": parameters, **environment()}
    checkpoints = _open_checkpoints(checkpoint_dir, identity, fingerprint, config, restart)
    policy = DivergencePolicy(config.on_divergence, lambda: _resume_hint(checkpoints))

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
        state = trainer.keep_best(state, jnp.asarray(losses["total"]), batch)
        record_validation(history, batch, losses)
        board.validation(batch, losses)
        return state, losses

    with (
        StepTimer() as timer,
        PreemptionWatch() as preemption,
        _closing(checkpoints),
        open_tensorboard(tensorboard_dir) as board,
    ):
        done, state, history = _resume(checkpoints, state, history, config)
        board.start(done)
        if done and plan.validates_at(done):
            # The new event file supersedes the old ones from `done` on, this
            # validation included: write it again, from the restored history.
            board.validation(done, validation_at(history, done))
        record["resumed_from_batch"] = done
        logger.info("Run record:\n%s", describe_record(record))
        logger.info(
            "Training %d replicates for batches %d to %d of %d trials each",
            config.n_replicates,
            done + 1,
            config.n_batches,
            config.batch_size,
        )
        rate = _Rate(done)
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
                    new_state, records = trainer.run_chunk(
                        trainer.layout.place(state), *_chunk_inputs(host_trials, start, stop, plan)
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
                bar.set_postfix(loss=f"{np.nanmean(losses['total'][-1]):.3g}")
                if plan.logs_at(stop):
                    line = _log_line(stop, config.n_batches, losses, val_losses, state)
                    logger.info("%s  %.1f batch/s", line, rate.since_last(stop))
                if checkpoints is not None and (plan.checkpoints_at(stop) or preemption.requested):
                    checkpoints.save(
                        stop,
                        state=state,
                        history=jax.tree.map(np.copy, history),
                        # Ranks the checkpoints for keeping: unvalidated ones rank last.
                        loss=np.inf if val_losses is None else np.nanmean(val_losses["total"]),
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
        "Training done: batches %d to %d in %.1f s",
        record["resumed_from_batch"] + 1,
        config.n_batches,
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


def _log_line(
    stop: int,
    n_batches: int,
    losses: dict[str, np.ndarray],
    validation: dict[str, np.ndarray] | None,
    state: TrainState,
) -> str:
    """The progress log line after `stop` batches: the last batch's training losses, the
    validation losses (when measured) and the diverged replicates (if any)."""
    line = (
        f"batch {stop}/{n_batches}  train: {_format_losses({k: v[-1] for k, v in losses.items()})}"
    )
    if validation is not None:
        line += f"  validation: {_format_losses(validation)}"
    diverged = np.flatnonzero(np.asarray(state.diverged_at) != HEALTHY)
    if diverged.size:
        line += f"  diverged replicate(s): {', '.join(map(str, diverged))}"
    return line


class _Rate:
    """Batches per second (wall time) since the previous log line."""

    def __init__(self, done: int):
        self._time, self._done = time.perf_counter(), done

    def since_last(self, done: int) -> float:
        now = time.perf_counter()
        rate = (done - self._done) / max(now - self._time, 1e-9)
        self._time, self._done = now, done
        return rate


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


def _resume_hint(checkpoints: Checkpoints | None) -> str:
    if checkpoints is None:
        return "No checkpoints were being written."
    latest = checkpoints.latest_step()
    if latest is None:
        return f"No checkpoint had been written yet in {checkpoints.directory}."
    return f"The last good checkpoint (batch {latest}) is kept in {checkpoints.directory}."
