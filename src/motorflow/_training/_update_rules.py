"""Activity-dependent weight updates applied after the optimizer's step.

Each kind is a config block (``train.update_rules: [{kind: ...}, ...]``) that changes
one weight matrix ``W[post, pre]`` from the network states of the batch just
trained, averaged over its trials and time steps, on its own schedule of batches.
This is feedbax's model update functions (``TaskTrainer(model_update_funcs=...)``,
its ``ActivityDependentWeightUpdate``): a batch-averaged rule scaled by a rate,
with no update of a unit's weight onto itself. The rules act on

- ``recurrent``: the cell's recurrent matrix (a GRU's candidate-activation block of
  ``weight_hh``, as feedbax's ``HebbianGRUUpdate``), post = the hidden state at
  step t, pre = the hidden state at t (``lag: 0``, feedbax's choice) or at t - 1
  (``lag: 1``: the state that drove step t through ``W``; zeros before the first);
- ``readout``: the readout weights, post = the network output, pre = the hidden state.

`UPDATE_RULES` maps ``kind`` names to their classes; adding one is a class with its
``delta`` and one entry there.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float
from pydantic import Field, model_validator

from .._config_base import Block, ConfigError, PositiveNumber, registry, tagged_union
from .._model._attribute_paths import attribute_getter
from ._schedule import BatchSchedule

Weight = Float[Array, "post pre"]
Activity = Float[Array, "sample units"]


class AbstractUpdateRule(Block):
    """One rule: `rate`, the matrix it changes (`target`), which presynaptic states
    (`lag`) and after which batches it runs (`batches`, a schedule; default every one)."""

    kind: str
    rate: PositiveNumber
    target: Literal["recurrent", "readout"] = "recurrent"
    lag: Literal[0, 1] = Field(
        0, description="recurrent only: pair the hidden state at t with that at t - lag"
    )
    batches: BatchSchedule = BatchSchedule(every=1)

    @model_validator(mode="after")
    def _lag_only_for_recurrent(self) -> AbstractUpdateRule:
        if self.lag and self.target != "recurrent":
            raise ConfigError("lag", "a readout's output follows its input at once: use lag 0")
        return self

    @abc.abstractmethod
    def delta(self, post: Activity, pre: Activity, weight: Weight) -> Weight:
        """The change of `weight` from paired samples of post- and presynaptic activity."""
        raise NotImplementedError


def _mean_outer(post: Activity, pre: Activity) -> Weight:
    """``<post_i pre_j>`` over the samples."""
    return post.T @ pre / post.shape[0]


class Hebbian(AbstractUpdateRule):
    """Hebb's rule, batch-averaged: ``dW_ij = rate <post_i pre_j>`` (Hebb 1949; the
    form of feedbax's ``hebb_rule`` with ``agg_func=mean``). Unbounded: correlated
    units strengthen their connections without limit, so keep `rate` small or pair it
    with a norm cap (``train.constraints``)."""

    kind: Literal["hebbian"] = "hebbian"

    def delta(self, post, pre, weight):
        return self.rate * _mean_outer(post, pre)


class Oja(AbstractUpdateRule):
    """Oja's rule, batch-averaged: ``dW_ij = rate <post_i pre_j - post_i^2 W_ij>``
    (Oja 1982, J Math Biol 15:267): Hebbian growth with a decay by the postsynaptic
    activity that keeps each row's norm bounded (near 1 for a linear unit)."""

    kind: Literal["oja"] = "oja"

    def delta(self, post, pre, weight):
        decay = jnp.mean(post**2, axis=0)[:, None] * weight
        return self.rate * (_mean_outer(post, pre) - decay)


UPDATE_RULES: dict[str, type[AbstractUpdateRule]] = registry(Hebbian, Oja)
# One update rule block of a config: a registered kind, chosen by its `kind` key.
AnyUpdateRule = tagged_union(list(UPDATE_RULES.values()))


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
