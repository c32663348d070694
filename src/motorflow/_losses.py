"""Named loss terms on rollouts, weighted from config."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ._config import LossConfig
from ._model._episode import Targets
from ._model._loop import Rollout


class Span(eqx.Module):
    """Which steps of the trial a rollout holds: from `first` on, of `n_steps` in all;
    `start_pos` is where the effector was at the trial's first step (`(..., 2)`)."""

    first: Int[Array, ""] | int
    n_steps: int = eqx.field(static=True)
    start_pos: Float[Array, "*trials 2"]

    @classmethod
    def whole(cls, rollout: Rollout) -> Span:
        return cls(0, rollout.pos.shape[-2], rollout.pos[..., 0, :])

    def is_last(self, length: int) -> Array:
        """Whether the span ends with the trial's last step."""
        return jnp.asarray(self.first + length == self.n_steps)


def _position(rollout: Rollout, targets: Targets, config: LossConfig, span: Span) -> Array:
    discount_power = config.position.discount_power
    error = jnp.sum((rollout.pos - targets.goal) ** 2, axis=-1)
    steps = span.first + jnp.arange(1, error.shape[-1] + 1)
    discount = (steps.astype(error.dtype) / span.n_steps) ** discount_power
    return jnp.sum(error * discount, axis=-1)


def _final_velocity(rollout: Rollout, targets: Targets, config: LossConfig, span: Span) -> Array:
    final = jnp.sum(rollout.vel[..., -1, :] ** 2, axis=-1)
    return jnp.where(span.is_last(rollout.vel.shape[-2]), final, 0.0)


def _effort(rollout: Rollout, targets: Targets, config: LossConfig, span: Span) -> Array:
    return jnp.sum(rollout.control**2, axis=(-2, -1))


def _hidden(rollout: Rollout, targets: Targets, config: LossConfig, span: Span) -> Array:
    return jnp.sum(rollout.hidden**2, axis=(-2, -1))


def _hold(rollout: Rollout, targets: Targets, config: LossConfig, span: Span) -> Array:
    if targets.hold is None:
        return jnp.zeros(rollout.pos.shape[:-2], rollout.pos.dtype)
    drift = jnp.sum((rollout.pos - span.start_pos[..., None, :]) ** 2 + rollout.vel**2, axis=-1)
    return jnp.sum(jnp.where(targets.hold, drift, 0.0), axis=-1)


# Each term returns one value per trial; the loss is its mean over trials.
_TERMS = {
    "position": _position,
    "final_velocity": _final_velocity,
    "effort": _effort,
    "hidden": _hidden,
    "hold": _hold,
}


def loss_terms(
    config: LossConfig, rollout: Rollout, targets: Targets, span: Span | None = None
) -> dict[str, Float[Array, ""]]:
    """Each configured term averaged over trials (the leading dims of `rollout`).

    `targets` are the goal at each step of each trial (it moves when a target jumps)
    and the steps on which the effector should hold still at its start.

    - ``position``: squared distance to the goal summed over time, weighted by
      ``((t+1)/n_steps) ** discount_power``.
    - ``final_velocity``: squared speed at the last step.
    - ``effort``: squared control (force, torques or excitations) summed over time.
    - ``hidden``: squared hidden activity summed over time and units.
    - ``hold``: squared distance from the start plus squared speed, summed over the
      steps to hold still (before a delayed reach's go cue, every step of a posture
      trial); 0 for tasks without a hold.

    With a `span`, the rollout holds only some consecutive steps of the trial (a
    segment: :func:`motorflow._model._episode.run_segment`) and each term is that segment's
    part of the trial's: the terms of a trial's segments add up to its terms.
    """
    span = Span.whole(rollout) if span is None else span
    return {name: jnp.mean(_TERMS[name](rollout, targets, config, span)) for name in config.terms}


def total_loss(config: LossConfig, terms: dict[str, Array]) -> Array:
    """The weighted sum of the terms."""
    return sum(config.terms[name].weight * value for name, value in terms.items())
