"""Optimizers from config: optax's, with a state of its own per parameter array.

:class:`LeafOptimizer` runs the configured optax optimizer on each trainable array
separately (its own moments and step count), after clipping the gradient's global
norm, and scales each array's step by the learning rate of its batch and its group.
An array outside the batch's trainable subset (a training stage) takes no step and
keeps its optimizer state untouched, so it resumes training where it left off.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Bool, Int

from .._config import OptimizerConfig


def learning_rate_schedule(config: OptimizerConfig, n_batches: int) -> optax.Schedule:
    """The learning rate as a function of the batch index."""
    lr, spec = config.learning_rate, config.schedule
    if spec.kind == "warmup_cosine":
        return optax.warmup_cosine_decay_schedule(
            init_value=0.0,
            peak_value=lr,
            warmup_steps=spec.warmup_steps,
            decay_steps=max(n_batches, spec.warmup_steps + 1),
            end_value=lr * spec.end_factor,
        )
    if spec.kind == "exponential":
        return optax.exponential_decay(
            init_value=lr, transition_steps=spec.decay_steps, decay_rate=spec.decay_rate
        )
    return optax.constant_schedule(lr)


def make_optimizer(config: OptimizerConfig) -> optax.GradientTransformation:
    """The configured optax optimizer at a learning rate of 1 (the rate of each batch
    and group scales its updates: :class:`LeafOptimizer`)."""
    if config.name == "adam":
        return optax.adam(1.0)
    if config.name == "adamw":
        # Decoupled weight decay is scaled by the learning rate too (as in optax and torch).
        return optax.adamw(1.0, weight_decay=config.weight_decay)
    return optax.sgd(1.0, momentum=config.momentum or None)


class LeafOptimizer:
    """One replicate's optimizer step, array by array.

    **Arguments:**

    - `config`: the optimizer config.
    - `n_batches`: the run's length (for the learning-rate schedule).
    - `scale`: per trainable array (a tree like the parameters), the factor of its
      group's learning rate over `config.learning_rate`.
    """

    def __init__(self, config: OptimizerConfig, n_batches: int, scale: Any):
        self.base = make_optimizer(config)
        self.schedule = learning_rate_schedule(config, n_batches)
        self.clip = config.clip_global_norm
        self.scale = scale

    def init(self, params: Any) -> Any:
        """The optimizer state of one replicate's `params`: one state per array."""
        return jax.tree.map(self.base.init, params)

    def step(
        self,
        grads: Any,
        state: Any,
        params: Any,
        batch: Int[Array, ""],
        active: Any,
    ) -> tuple[Any, Any]:
        """New parameters and state after the update of `batch`, in which only the arrays
        whose `active` flag (a tree of scalar bools like `params`; None: all) is set train."""
        grads = _trained(grads, active)
        if self.clip is not None:
            norm = optax.tree.norm(grads)
            factor = jnp.where(norm > self.clip, self.clip / norm, 1.0)
            grads = jax.tree.map(lambda g: g * factor.astype(g.dtype), grads)
        rate = self.schedule(batch)

        def leaf(param, grad, leaf_state, scale, is_active: Bool[Array, ""] | None) -> _Stepped:
            update, new_state = self.base.update(grad, leaf_state, param)
            new_param = param + (rate * scale).astype(param.dtype) * update
            if is_active is None:
                return _Stepped(new_param, new_state)
            keep = jax.tree.map(lambda n, o: jnp.where(is_active, n, o), new_state, leaf_state)
            return _Stepped(jnp.where(is_active, new_param, param), keep)

        if active is None:
            out = jax.tree.map(lambda *xs: leaf(*xs, None), params, grads, state, self.scale)
        else:
            out = jax.tree.map(leaf, params, grads, state, self.scale, active)
        new_params = jax.tree.map(lambda stepped: stepped.param, out)
        new_state = jax.tree.map(lambda stepped: stepped.state, out)
        return new_params, new_state

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


class _Stepped:
    """One array's new value and optimizer state (a plain object: a leaf to `jax.tree`)."""

    __slots__ = ("param", "state")

    def __init__(self, param: Array, state: Any):
        self.param, self.state = param, state
