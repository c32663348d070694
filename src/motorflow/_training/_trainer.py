"""The pure functions of a training run: init, the compiled chunk of batches, validation.

All replicates train in one compiled program: a `lax.scan` over a chunk of
batches of a map over replicates (:meth:`Trainer.run_chunk`).
"""

from __future__ import annotations

import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Int, PRNGKeyArray

from .._losses import loss_terms, total_loss
from .._model._ensemble import n_replicates, take_replicate
from .._model._episode import run_trials
from .._model._loop import PLAIN, RolloutOptions
from .._tasks import Task, Trials
from ._config import TrainConfig
from ._divergence import HEALTHY
from ._optimizer import LeafOptimizer
from ._replicate_updates import update_replicates
from ._run_record import named_arrays
from ._segments import trial_pieces
from ._sharding import ReplicateLayout
from ._shared_programs import program_parts, shared_program
from ._state import BatchRecords, TrainState
from ._trainable import learning_rates, trained_arrays
from .constraints import Constraints
from .rules import Batch
from .rules._base import backpropagated
from .update_rules import UpdateRules


class Trainer(eqx.Module):
    """The pure functions of one training run, closed over its static setup.

    A trainer is a pytree: its arrays (the ensemble's untrained ones, the stages'
    tables, the constraints' masks, the learning rates, the loss weights) are the
    compiled programs' arguments and the rest (settings, shapes, the layout), in its
    :meth:`program_form`, their key. Its compiled methods (:meth:`run_chunk`,
    :meth:`validate`) are :class:`shared_program`'s: trainers of equal settings and
    shapes (a seed sweep's experiments in one warm process, or a sweep of learning
    rates, loss weights or perturbation strengths) share their programs, traced and
    compiled once.

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

    task: Task
    config: TrainConfig
    isolate: bool
    n_replicates: int
    constraints: Constraints
    update_rules: UpdateRules
    learning_rule: Any
    template: Any
    selected: Any
    stage_starts: Array
    stage_tables: Any
    _masked: bool
    _learning_sets_params: bool
    initial_params: Any
    frozen: Any
    static: Any
    layout: ReplicateLayout
    _replicates_per_step: int | None
    optimizer: LeafOptimizer
    _loss_weights: tuple[Array, ...]

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
            key=jax.random.key(0) if constraint_key is None else constraint_key,
        )
        ensemble = self.constraints.apply_ensemble(ensemble)
        self.update_rules = UpdateRules(config.update_rules, ensemble)
        self.learning_rule = config.learning
        # One replicate's model, shapes only.
        self.template = eqx.filter_eval_shape(take_replicate, ensemble, 0)
        problem = self.learning_rule.check_model(
            type(self.template.network.cell), self.template.plant, config.trained_paths
        )
        if problem is not None:
            raise ValueError(f"train.learning ({self.learning_rule.kind}): {problem}")
        arrays = trained_arrays(
            ensemble,
            config,
            owned=self.learning_rule.owned(self.template),
            rule_targets=self.update_rules.targets(ensemble),
        )
        selected = self.selected = arrays.selected
        self.stage_starts, self.stage_tables = arrays.stage_starts, arrays.stage_tables
        self._masked, self._learning_sets_params = arrays.masked, arrays.owned_by_rule
        optimized = arrays.optimized
        params, rest = eqx.partition(ensemble, selected)
        self.initial_params = params
        self.frozen, self.static = eqx.partition(rest, eqx.is_array)
        self.layout = ReplicateLayout.over_devices(self.n_replicates)
        # lax.map's batch_size: all of a device's replicates at once, or one at a time.
        self._replicates_per_step = self.layout.n_padded if vectorize_replicates else None
        rates = learning_rates(ensemble, optimized, config.optimizer)
        self.optimizer = LeafOptimizer(
            config.optimizer, config.n_batches, eqx.filter(rates, selected)
        )
        # A tuple, not a dict: the static part of a dict of arrays would not hash.
        self._loss_weights = tuple(
            jnp.asarray(term.weight, jnp.float32) for term in config.loss.terms.values()
        )

    @functools.cached_property
    def _program_parts(self):
        """The compiled methods' key and this trainer's arrays (:func:`program_parts`):
        the key of the trainer in its program form (:meth:`program_form`)."""
        return program_parts(self.program_form())

    @property
    def loss_weights(self) -> dict[str, Array]:
        """Each loss term's weight, a float32 scalar: an argument of the compiled
        programs (trainings of other weights share them), by term name."""
        return dict(zip(self.config.loss.terms, self._loss_weights, strict=True))

    def program_form(self) -> Trainer:
        """This trainer as its compiled programs see it: its training and task configs
        in their program forms (:meth:`TrainConfig.program_form`,
        :meth:`TaskConfig.program_form`), whose learning rates, loss weights and drawn
        perturbation settings are :data:`motorflow._program_form.ARGUMENT`. The programs
        read those from arrays (the optimizer's rates, :attr:`loss_weights`, the trials'
        drawn params), so trainers that differ only in them share their programs."""
        return eqx.tree_at(
            lambda t: (t.config, t.task),
            self,
            (self.config.program_form(), self.task.program_form()),
        )

    def init(self, *, key: PRNGKeyArray, learning_key: PRNGKeyArray | None = None) -> TrainState:
        """The state before the first batch; `key` seeds the per-batch noise and
        `learning_key` the learning rule's state (random feedback weights)."""
        per_replicate = (self.n_replicates,)
        keys = None if learning_key is None else jax.random.split(learning_key, self.n_replicates)
        ensemble = self.ensemble(self.initial_params)
        learning_state = eqx.filter_vmap(
            lambda model, key: self.learning_rule.init(model, key=key),
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
        options: RolloutOptions = PLAIN,
    ):
        """The total loss and (aux) the terms and, with `states`, the rollouts (else
        None); the learning rule's `options` truncate the gradient through the rollouts
        or cut the network out of it (:class:`RolloutOptions`)."""
        model = eqx.combine(params, frozen, self.static)
        keys = jax.random.split(key, trials.init_pos.shape[0])
        rollouts, targets = run_trials(model, self.task, trials, keys, options=options)
        terms = loss_terms(self.config.loss, rollouts, targets)
        total = total_loss(self.config.loss, terms, weights=self.loss_weights)
        return total, (terms, rollouts if states else None)

    def replicate_batch(self, params, frozen, trials: Trials, *, key: PRNGKeyArray) -> Batch:
        """What the learning rule sees of one replicate's batch: its loss as a function
        of `params` (with noise from `key`), its model, the task and the `trials`."""

        def loss(params, **options):
            return self._replicate_loss(params, frozen, trials, key, **options)

        model = eqx.combine(params, frozen, self.static)
        pieces = trial_pieces(self, frozen, trials, key)
        return Batch(loss, model, self.task, trials, pieces=pieces)

    def _learn(self, problem: Batch, state, fixed, batch, trained_in, rule_flags, *, states):
        """One update from `problem` (a batch, or a segment of it): the learning rule's
        gradient and the optimizer's step, then the rule's own changes, the update
        rules and the constraints. `state` is ``(params, opt_state, learning_state)``;
        returns the new one, the total, the terms, the gradient and the rollouts."""
        params, opt_state, learning_state = state
        frozen, prepared = fixed
        (total, (terms, rollouts)), grads, learning_state = self.learning_rule.value_and_grad(
            problem, params, learning_state, states=states
        )
        params_now, opt_state = self.optimizer.step(grads, opt_state, params, batch, trained_in)
        if self.update_rules or self.constraints or self._learning_sets_params:
            model = eqx.combine(params_now, frozen, self.static)
            model, learning_state = self.learning_rule.apply(
                problem, model, learning_state, rollouts
            )
            if self.update_rules:
                model = self.update_rules.apply(model, rollouts.hidden, rollouts.output, rule_flags)
            if self.constraints:
                model = self.constraints.apply(model, prepared)
            params_now = eqx.filter(model, self.selected)
        return (params_now, opt_state, learning_state), total, terms, grads, rollouts

    def _trained_in(self, batch: Int[Array, ""]) -> Any:
        """Per parameter array, whether the optimizer trains it in `batch` (its stage's
        subset); None when every parameter trains in every batch."""
        if not self._masked:
            return None
        stage = jnp.searchsorted(self.stage_starts, batch, side="right") - 1
        return jax.tree.map(lambda table: table[stage], self.stage_tables)

    @shared_program
    def run_chunk(
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

        Returns the new state and the :class:`BatchRecords`, still padded along the
        replicate axis where the replicates are spread unevenly over several devices
        (:meth:`unpad_chunk` drops the padding).
        """

        spread = self.layout.spread
        # What each replicate's update reads but never changes.
        fixed = spread((self.frozen, self.constraints.prepared))
        if not self.config.shared_trials:
            trials = spread(trials, axis=1)
        if active is None:
            active = jnp.ones(batch_index.shape, bool)
        if rule_flags is None:
            rule_flags = jnp.ones((*batch_index.shape, len(self.update_rules.rules)), bool)

        def step(carry, batch_trials, batch, flags):
            params, opt_state, learning_state, diverged_at = carry
            healthy = diverged_at == HEALTHY
            params, opt_state, learning_state, (losses, norms), ok = update_replicates(
                self,
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
                losses, norms, self.optimizer.schedule(batch)
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
        # Still padded where the count does not divide over the devices: dropping the
        # padding here would gather the replicate axis across devices (a collective,
        # whose rendezvous a busy machine can starve until XLA aborts the process);
        # `unpad_chunk` drops it on the host instead.
        params, opt_state, learning_state, diverged_at = carry
        n_done = jnp.sum(active, dtype=state.step.dtype)
        new_state = eqx.tree_at(
            lambda s: (s.params, s.opt_state, s.learning_state, s.diverged_at, s.step),
            state,
            (params, opt_state, learning_state, diverged_at, state.step + n_done),
            is_leaf=lambda x: x is None,
        )
        return new_state, records

    def unpad_chunk(
        self, state: TrainState, records: BatchRecords
    ) -> tuple[TrainState, BatchRecords]:
        """What :meth:`run_chunk` returned, with the replicate axis of its parts per
        replicate cut back to the real replicates (the padding that spreads a count
        over the devices dropped, on the host: no collective across devices)."""
        unpad = self.layout.unpad
        state = eqx.tree_at(
            lambda s: (s.params, s.opt_state, s.learning_state, s.diverged_at),
            state,
            unpad((state.params, state.opt_state, state.learning_state, state.diverged_at)),
            is_leaf=lambda x: x is None,
        )
        per_replicate = unpad((records.loss, records.grad_norm), axis=1)
        return state, BatchRecords(*per_replicate, records.learning_rate)

    def alignment(self, params, learning_state, trials: Trials, *, key) -> dict[str, Array]:
        """Per trained array (by its :func:`named_arrays` path), `(replicate,)`: the
        cosine between the learning rule's update and the BPTT gradient of the loss on
        the shared `trials` (noise as :meth:`validate` draws it from `key`), at `params`.

        The update is what the rule's ``value_and_grad`` hands the optimizer for the
        whole rollout (a rule that updates within the rollout hands it the segments'
        parts instead, each at newer parameters). NaN where either is zero (an array
        the rule sets itself, as RLS its readout). Backpropagation is aligned with
        itself by definition: for a rule whose update is BPTT's gradient (``bptt``
        without cut paths, a window as long as the trial) every cosine is 1, with no
        pass run.
        """
        if self.learning_rule.is_backpropagation(self.task.n_steps):
            ones = jnp.ones(self.n_replicates, jnp.float32)
            return {name: ones for name in named_arrays(self.initial_params)}
        return self._aligned(params, learning_state, trials, key)

    @shared_program
    def _aligned(self, params, learning_state, trials: Trials, key):
        keys = jax.random.split(key, self.n_replicates)

        def one(params, frozen, learning_state, key):
            batch = self.replicate_batch(params, frozen, trials, key=key)
            _, update, _ = self.learning_rule.value_and_grad(batch, params, learning_state)
            _, exact = backpropagated(batch, params)
            exact = named_arrays(exact)
            return {name: cosine(u, exact[name]) for name, u in named_arrays(update).items()}

        return jax.lax.map(lambda xs: one(*xs), (params, self.frozen, learning_state, keys))

    @shared_program
    def validate(self, params, trials: Trials, key):
        """Loss per term and total, per replicate, on shared validation `trials`, padded
        as a chunk's outputs are (the caller drops the padding on the host:
        ``layout.unpad``). Each device maps its own replicates as the training does (one
        after another on the CPU), so a replicate's losses do not depend on how many
        share its device (a vmap's batched reductions came out an ulp apart on 1 and 2
        CPU devices), and no program holds a collective."""
        layout = self.layout
        keys = jax.random.split(key, self.n_replicates)

        def local(params, frozen, keys, trials):
            return jax.lax.map(
                lambda xs: self._replicate_loss(xs[0], xs[1], trials, xs[2]),
                (params, frozen, keys),
                batch_size=self._replicates_per_step,
            )

        spread = layout.spread((params, self.frozen, keys))
        total, (terms, _) = layout.per_device(local, replicated_args=(3,))(*spread, trials)
        return {**terms, "total": total}


def cosine(a: Array, b: Array) -> Array:
    """The cosine between two arrays (flattened); NaN where either is zero."""
    a, b = jnp.ravel(a).astype(jnp.float32), jnp.ravel(b).astype(jnp.float32)
    norms = jnp.sqrt(jnp.sum(a**2) * jnp.sum(b**2))
    return jnp.where(norms > 0, jnp.sum(a * b) / jnp.where(norms > 0, norms, 1.0), jnp.nan)
