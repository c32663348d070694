"""Per-trial draws of perturbation settings, and a trial's summed per-step effects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
from jaxtyping import Array, PRNGKeyArray

from ._base import AbstractPerturbation, Effects, TrialGeometry

Params = dict[str, Array]


def draw_params(
    perturbation: AbstractPerturbation, shape: tuple[int, ...], *, key: PRNGKeyArray
) -> Params:
    """The perturbation's settings for trials of `shape`: ``active`` (1 with its
    `probability`, else 0) and each drawn setting (uniform over its range; a plain
    number is used as is, without a draw)."""
    ranges = perturbation.ranges()
    keys = jax.random.split(key, 1 + len(ranges))
    if perturbation.probability == 1:
        active = jnp.ones(shape, jnp.float32)
    else:
        active = (jax.random.uniform(keys[0], shape) < perturbation.probability).astype(jnp.float32)
    params = {"active": active}
    for setting_key, (name, (low, high)) in zip(keys[1:], ranges.items()):
        if low == high:
            params[name] = jnp.full(shape, low, jnp.float32)
        else:
            params[name] = jax.random.uniform(setting_key, shape, minval=low, maxval=high)
    return params


def draw_all(
    perturbations: Sequence[AbstractPerturbation], shape: tuple[int, ...], *, key: PRNGKeyArray
) -> tuple[Params, ...]:
    """:func:`draw_params` for each perturbation, the i-th from ``fold_in(key, i)``."""
    return tuple(
        draw_params(perturbation, shape, key=jax.random.fold_in(key, index))
        for index, perturbation in enumerate(perturbations)
    )


def draw_conditions(
    conditions: Mapping[str, Sequence[AbstractPerturbation]], n_trials: int, *, key: PRNGKeyArray
) -> tuple[tuple[AbstractPerturbation, ...], tuple[Params, ...], tuple[int, ...]]:
    """Every condition's perturbations as one list of slots over `(condition, trial)`.

    Slot j is the j-th perturbation of all conditions in order; its settings are drawn
    for every `(condition, trial)` from ``fold_in(key, j)`` and it is active only in
    the condition that lists it. Returns the slots, their params and each slot's
    condition index.
    """
    slots = [(index, p) for index, items in enumerate(conditions.values()) for p in items]
    shape = (len(conditions), n_trials)
    params = []
    for slot, (owner, perturbation) in enumerate(slots):
        drawn = draw_params(perturbation, shape, key=jax.random.fold_in(key, slot))
        mine = (jnp.arange(len(conditions)) == owner).astype(jnp.float32)[:, None]
        params.append({**drawn, "active": drawn["active"] * mine})
    return tuple(p for _, p in slots), tuple(params), tuple(owner for owner, _ in slots)


def total_effects(
    perturbations: Sequence[AbstractPerturbation], params: Sequence[Params], trial: TrialGeometry
) -> Effects:
    """The sum of every perturbation's effects on one trial (scalar `params`)."""
    effects = Effects.none(trial.n_steps)
    for perturbation, values in zip(perturbations, params, strict=True):
        effects = effects + perturbation.effects(values, trial)
    return effects
