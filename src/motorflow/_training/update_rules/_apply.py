"""The configured update rules of a training, applied together after each update on
their schedules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from ..._model._attribute_paths import attribute_getter
from ._base import AbstractUpdateRule


def _shifted(hidden: Float[Array, "*trials time units"], lag: int) -> Array:
    """`hidden` delayed by `lag` steps along time, zeros (the initial state) before."""
    if lag == 0:
        return hidden
    pad = [(0, 0)] * (hidden.ndim - 2) + [(lag, 0), (0, 0)]
    return jnp.pad(hidden, pad)[..., :-lag, :]


def _location(model: Any, target: str) -> tuple[str, int, int]:
    """The path of the matrix a rule on `target` changes and its rows ``[start, stop)``."""
    if target == "readout":
        return "network.readout.weight", 0, model.network.readout.out_features
    cell = model.network.cell
    return f"network.cell.{cell.PLASTIC_WEIGHT}", *cell.plastic_rows()


class UpdateRules(eqx.Module):
    """The configured rules of one model: where each acts (see the module docstring).

    **Arguments:**

    - `rules`: the rule blocks, applied in order.
    - `model`: a model (or ensemble) of the structure they will update.
    """

    rules: tuple[AbstractUpdateRule, ...] = eqx.field(static=True)
    locations: tuple[tuple[str, int, int], ...] = eqx.field(static=True)

    def __init__(self, rules: Sequence[AbstractUpdateRule], model: Any):
        self.rules = tuple(rules)
        self.locations = tuple(_location(model, rule.target) for rule in self.rules)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def targets(self, model: Any) -> Any:
        """A bool tree like `model`: True on the arrays the rules change."""
        paths = {path for path, *_ in self.locations}
        flags = jax.tree.map(lambda _: False, model)
        for path in paths:
            flags = eqx.tree_at(attribute_getter(path), flags, True)
        return flags

    def apply(self, model: Any, hidden: Array, output: Array, flags: Bool[Array, " rule"]) -> Any:
        """One replicate's `model` after each rule whose flag is set, from its batch's
        `hidden` `(trial, time, hidden)` and `output` `(trial, time, control)` states."""
        for rule, (path, start, stop), flag in zip(self.rules, self.locations, flags, strict=True):
            if rule.target == "recurrent":
                post, pre = hidden, _shifted(hidden, rule.lag)
            else:
                post, pre = output, hidden
            get = attribute_getter(path)
            whole = get(model)
            weight = whole[start:stop]
            delta = rule.delta(
                post.reshape(-1, post.shape[-1]), pre.reshape(-1, pre.shape[-1]), weight
            )
            if rule.target == "recurrent":
                # No rule changes a unit's weight onto itself (as feedbax).
                delta = delta * (1 - jnp.eye(*delta.shape, dtype=delta.dtype))
            updated = jnp.where(flag, weight + delta.astype(weight.dtype), weight)
            model = eqx.tree_at(get, model, whole.at[start:stop].set(updated))
        return model
