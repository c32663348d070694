"""Optax optimizers and learning-rate schedules from config."""

from __future__ import annotations

import optax

from ._config import OptimizerConfig


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


def make_optimizer(config: OptimizerConfig, n_batches: int) -> optax.GradientTransformation:
    """The configured optimizer, with global-norm clipping first when asked for.

    It is applied to one replicate at a time (the trainer vmaps it), so clipping
    and every other statistic are per replicate.
    """
    schedule = learning_rate_schedule(config, n_batches)
    if config.name == "adam":
        base = optax.adam(schedule)
    elif config.name == "adamw":
        base = optax.adamw(schedule, weight_decay=config.weight_decay)
    else:
        base = optax.sgd(schedule, momentum=config.momentum or None)
    if config.clip_global_norm is None:
        return base
    return optax.chain(optax.clip_by_global_norm(config.clip_global_norm), base)
