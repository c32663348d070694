"""The optimizer from config, as one optax transformation over a replicate's parameters.

:func:`make_optimizer` chains optax's parts (global-norm clipping, Adam's or SGD's
direction, weight decay) with three small transformations of our own where optax has
none: the batch's untrained arrays left out of the clipped norm (:func:`zero_inactive`),
a state of its own per array that an array sitting out a training stage keeps
untouched (:func:`per_array`), and a learning rate indexed by the batch rather than by
a step count (:func:`scale_by_batch_schedule`). :class:`LeafOptimizer` applies it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Int

from ._config import OptimizerConfig


def learning_rate_schedule(
    config: OptimizerConfig, n_batches: int, learning_rate: float | Array | None = None
) -> optax.Schedule:
    """The learning rate as a function of the batch index.

    **Arguments:**

    - `config`: the optimizer config (its schedule).
    - `n_batches`: the run's length (where the cosine decay ends).
    - `learning_rate`: the peak (or initial) rate the schedule starts from, a number or
      a scalar array (traced: the trainer's, so that rates share a program): a group's
      rate in `config.learning_rates`; None: `config.learning_rate`.
    """
    lr, spec = config.learning_rate if learning_rate is None else learning_rate, config.schedule
    if spec.kind == "warmup_cosine":
        # optax.warmup_cosine_decay_schedule, composed here: it tests its peak against
        # zero in Python, which a traced rate cannot answer. Its cosine's floor,
        # ``end_value / peak_value``, is `end_factor` (a rate is positive).
        decay_steps = max(n_batches, spec.warmup_steps + 1)
        return optax.join_schedules(
            [
                optax.linear_schedule(0.0, lr, spec.warmup_steps),
                optax.cosine_decay_schedule(
                    lr, decay_steps - spec.warmup_steps, alpha=spec.end_factor
                ),
            ],
            [spec.warmup_steps],
        )
    if spec.kind == "exponential":
        return optax.exponential_decay(
            init_value=lr, transition_steps=spec.decay_steps, decay_rate=spec.decay_rate
        )
    return optax.constant_schedule(lr)


def make_optimizer(
    config: OptimizerConfig,
    n_batches: int,
    learning_rates: Any = None,
    *,
    learning_rate: float | Array | None = None,
) -> optax.GradientTransformationExtraArgs:
    """The configured optimizer of one replicate's parameters:

        optax.chain(
            zero_inactive(),
            optax.clip_by_global_norm(config.clip_global_norm),  # or optax.identity()
            per_array(
                # each array's own, on its peak rate's schedule:
                optax.chain(
                    optax.scale_by_adam(),  # adamw: then optax.add_decayed_weights(...)
                    scale_by_batch_schedule(learning_rate_schedule(config, n_batches, rate)),
                ),
            ),
        )

    (SGD in place of Adam: ``optax.trace(momentum)``, or no transformation without
    momentum.) Its state is a tuple of optax states, the last a tree like the
    parameters holding each array's own; its structure depends on `config.name` and
    whether SGD has momentum, never on clipping or learning rates (a continued state
    fits a training that changes them).

    Its ``update(grads, state, params, *, batch, active)`` takes the batch index
    `batch` (an int scalar: the learning rates' schedule) and `active`, a tree of
    scalar bools like the parameters (None: every array trains): the arrays that train
    in the batch (its training stage).

    **Arguments:**

    - `config`: the optimizer config.
    - `n_batches`: the run's length (for the learning-rate schedule).
    - `learning_rates`: per parameter array (a tree like the parameters), its peak
      learning rate, a number or a scalar array: its group's in
      `config.learning_rates`, else `config.learning_rate`
      (:func:`motorflow._trainable.learning_rates`). None: `learning_rate` for every
      array.
    - `learning_rate`: the base rate, a number or a scalar array (None:
      `config.learning_rate`).
    """

    def one(rate: Any) -> optax.GradientTransformation:
        schedule = learning_rate_schedule(config, n_batches, rate)
        return optax.chain(*_direction(config), scale_by_batch_schedule(schedule))

    # An array's label is its position in `learning_rates` (a rate may be a traced
    # array, which cannot be a key); without them, every array is labelled 0.
    if learning_rates is None:
        base = config.learning_rate if learning_rate is None else learning_rate
        transforms = {0: one(base)}
    else:
        rates, structure = jax.tree.flatten(learning_rates)
        transforms = {index: one(rate) for index, rate in enumerate(rates)}
        positions = jax.tree.unflatten(structure, range(len(rates)))

    def labels(params: Any) -> Any:
        if learning_rates is None:
            return jax.tree.map(lambda _: 0, params)
        return positions

    clip = config.clip_global_norm
    return optax.chain(
        zero_inactive(),
        optax.identity() if clip is None else optax.clip_by_global_norm(clip),
        per_array(transforms, labels),
    )


def _direction(config: OptimizerConfig) -> list[optax.GradientTransformation]:
    """The configured optimizer's transformations before its learning rate."""
    if config.name == "adam":
        return [optax.scale_by_adam()]
    if config.name == "adamw":
        # Decoupled weight decay is scaled by the learning rate too (as in optax and torch).
        return [optax.scale_by_adam(), optax.add_decayed_weights(config.weight_decay)]
    if config.momentum:
        return [optax.trace(decay=config.momentum)]
    return [optax.identity()]


def scale_by_batch_schedule(schedule: optax.Schedule) -> optax.GradientTransformationExtraArgs:
    """Scale updates by minus the learning rate of the batch, ``-schedule(batch)``.

    optax's ``scale_by_learning_rate(schedule)`` indexes its schedule by a step count
    in its own state. Ours is indexed by the batch (the extra argument `batch` of
    ``update``): a batch may take several steps (truncated BPTT's segments), and an
    array that sits out a training stage takes the rate of the batch it trains in,
    not of its own step count. Stateless.

    **Arguments:**

    - `schedule`: the learning rate as a function of the batch index.
    """

    def update(updates: Any, state: Any, params: Any = None, *, batch, **extra_args):
        del params, extra_args
        rate = schedule(batch)
        # The rate is negated before the product, ``(-rate) * u``, as optax's
        # ``scale_by_learning_rate`` does: IEEE negation is exact and rounding symmetric,
        # so this is bit for bit the ``rate * (-u)`` of ``optax.adam(1.0)`` scaled
        # afterwards (the optimizer's results from before it was this composition).
        return jax.tree.map(lambda u: jnp.asarray(-rate, u.dtype) * u, updates), state

    return optax.GradientTransformationExtraArgs(optax.init_empty_state, update)


def zero_inactive() -> optax.GradientTransformationExtraArgs:
    """Zero the updates of the arrays that do not train in the batch.

    A later global norm (clipping's) then counts only the arrays that train.
    ``optax.masked`` takes a mask fixed when the optimizer is built; ours, the extra
    argument `active` of ``update`` (a tree of scalar bools like the updates; None:
    every array trains), changes with the batch's training stage. Stateless.
    """

    def update(updates: Any, state: Any, params: Any = None, *, active=None, **extra_args):
        del params, extra_args
        return _trained(updates, active), state

    return optax.GradientTransformationExtraArgs(optax.init_empty_state, update)


def per_array(
    transforms: Mapping[Hashable, optax.GradientTransformation], labels: Callable[[Any], Any]
) -> optax.GradientTransformationExtraArgs:
    """Each array's updates through the transformation of its label, with a state of its
    own; an array that does not train in the batch takes no step and keeps its state.

    optax keeps one state for a whole tree (one step count for Adam's bias
    correction), and ``optax.multi_transform`` and ``optax.masked`` select arrays by
    labels or a mask fixed when the optimizer is built. A training stage switches the
    trained arrays with the batch (the extra argument `active` of ``update``, a tree of
    scalar bools like the updates; None: every array trains), and an array that sits
    out a stage resumes where it left off: its moments and its step count untouched.

    The state is a tree like the parameters holding each array's state of its
    transformation. Extra arguments other than `active` reach the transformations.

    **Arguments:**

    - `transforms`: per label, a transformation of one array.
    - `labels`: a function of the parameters (or of updates like them) that returns
      each array's label, a tree like them (as ``optax.multi_transform``'s
      `param_labels`).
    """
    transforms = {label: optax.with_extra_args_support(t) for label, t in transforms.items()}

    def init(params: Any) -> Any:
        return jax.tree.map(lambda p, label: transforms[label].init(p), params, labels(params))

    def update(updates: Any, state: Any, params: Any = None, *, active=None, **extra_args):
        def one(update, array_state, param, label, is_active=None):
            new_update, new_state = transforms[label].update(
                update, array_state, param, **extra_args
            )
            if is_active is None:
                return new_update, new_state
            kept = jax.tree.map(lambda n, o: jnp.where(is_active, n, o), new_state, array_state)
            # No step is an update of -0.0, not 0.0: ``x + (-0.0)`` is `x` bit for bit for
            # every x, where ``-0.0 + 0.0`` would turn a parameter's -0.0 into +0.0.
            return jnp.where(is_active, new_update, -0.0), kept

        trees = (updates, state, params, labels(updates))
        out = jax.tree.map(one, *trees) if active is None else jax.tree.map(one, *trees, active)
        # `out` holds a (update, state) pair where `updates` has an array.
        return (
            jax.tree.map(lambda _, pair: pair[0], updates, out),
            jax.tree.map(lambda _, pair: pair[1], updates, out),
        )

    return optax.GradientTransformationExtraArgs(init, update)


class LeafOptimizer(eqx.Module):
    """One replicate's optimizer: :func:`make_optimizer`'s transformation, applied.

    Its learning rates are arrays (arguments of the compiled programs) and the rest of
    its config static in its program form (:meth:`OptimizerConfig.program_form`), so
    that two trainers that differ in their learning rates only share their compiled
    programs (and train as one call of a pack); the transformation is built where it is
    used, inside the traced function.

    **Arguments:**

    - `config`: the optimizer config.
    - `n_batches`: the run's length (for the learning-rate schedule).
    - `learning_rates`: per trainable array (a tree like the parameters), its peak
      learning rate (None: `config.learning_rate` for all), as in :func:`make_optimizer`.
    """

    config: OptimizerConfig
    n_batches: int
    learning_rate: Array
    learning_rates: Any

    def __init__(self, config: OptimizerConfig, n_batches: int, learning_rates: Any = None):
        self.config, self.n_batches = config.program_form(), n_batches
        self.learning_rate = jnp.asarray(config.learning_rate, jnp.float32)
        self.learning_rates = jax.tree.map(
            lambda rate: jnp.asarray(rate, jnp.float32), learning_rates
        )

    @property
    def transformation(self) -> optax.GradientTransformationExtraArgs:
        return make_optimizer(
            self.config, self.n_batches, self.learning_rates, learning_rate=self.learning_rate
        )

    @property
    def schedule(self) -> optax.Schedule:
        """The base rate's schedule: the learning rate the history records."""
        return learning_rate_schedule(self.config, self.n_batches, self.learning_rate)

    def init(self, params: Any) -> Any:
        """The optimizer state of one replicate's `params` (a plain pytree of arrays)."""
        return self.transformation.init(params)

    def step(
        self,
        grads: Any,
        state: Any,
        params: Any,
        batch: Int[Array, ""],
        active: Any,
    ) -> tuple[Any, Any]:
        """New parameters and state after the update of `batch`, in which only the arrays
        whose `active` flag (a tree of scalar bools like `params`; None: all) is set train.

        **Arguments:**

        - `grads`, `params`: one replicate's gradient and parameters (trees of arrays
          of the parameters' shapes).
        - `state`: its optimizer state (from :meth:`init`).
        - `batch`: the batch index, an int scalar.
        - `active`: as above.
        """
        updates, state = self.transformation.update(
            grads, state, params, batch=batch, active=active
        )
        return optax.apply_updates(params, updates), state

    @staticmethod
    def gradient_norm(grads: Any, active: Any) -> Array:
        """The global norm of `grads` over the arrays trained in the batch (`active`, as
        in :meth:`step`): the norm that clipping bounds."""
        return optax.tree.norm(_trained(grads, active))


def _trained(grads: Any, active: Any) -> Any:
    """`grads` with zeros for the arrays not trained in the batch (None: all train)."""
    if active is None:
        return grads
    return jax.tree.map(lambda g, a: jnp.where(a, g, jnp.zeros_like(g)), grads, active)
