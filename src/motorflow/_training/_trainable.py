"""Which arrays train, and when: trainable leaves selected by declared paths
(``network``, ``network.readout``, ...), per training stage and learning rule."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Int

from .._config_errors import ConfigError
from .._model._attribute_paths import attribute_getter
from .._model._setting import setting_mask
from ._config import OptimizerConfig, TrainConfig


def _check_path(model: Any, path: str, config_key: str) -> None:
    node, walked = model, []
    for part in path.split("."):
        fields = (
            [f.name for f in dataclasses.fields(node)] if dataclasses.is_dataclass(node) else []
        )
        if part not in fields:
            where = ".".join(walked) or "the model"
            raise ConfigError(
                config_key,
                f"{path!r} is not a part of the model: {where} has no {part!r}; "
                f"its parts are: {', '.join(fields) or 'none (it is a leaf)'}",
            )
        node, walked = getattr(node, part), [*walked, part]


def _is_inexact(leaf: Any) -> bool:
    # Shape-only models (from `eqx.filter_eval_shape`) hold ShapeDtypeStructs.
    if isinstance(leaf, jax.ShapeDtypeStruct):
        return jax.numpy.issubdtype(leaf.dtype, jax.numpy.inexact)
    return eqx.is_inexact_array(leaf)


def trainable_filter(model: Any, paths: Sequence[str], config_key: str = "trainable") -> Any:
    """A pytree of bools like `model`: True on floating-point arrays under any of `paths`
    (never on a :class:`~motorflow._model._setting.Setting`'s value).

    `model` may be shape-only (built under ``eqx.filter_eval_shape``), so paths can
    be checked without computing anything.

    Raises :class:`ConfigError` (under `config_key`) for a path that names no part of
    the model or selects no floating-point array.
    """
    # A setting (a noise level held as an array) never trains.
    trainable = jax.tree.map(
        lambda leaf, fixed: not fixed and _is_inexact(leaf), model, setting_mask(model)
    )
    spec = jax.tree.map(lambda _: False, model)
    for path in paths:
        _check_path(model, path, config_key)
        get = attribute_getter(path)
        spec = eqx.tree_at(get, spec, replace=jax.tree.map(lambda _: True, get(spec)))
        if not any(jax.tree.leaves(get(trainable))):
            raise ConfigError(config_key, f"{path!r} selects no trainable (floating-point) arrays")
    return jax.tree.map(lambda selected, free: selected and free, spec, trainable)


def trained_subsets(model: Any, train: TrainConfig, path: str = "train") -> list[tuple[int, Any]]:
    """Each stage's first batch and its trainable filter (like `model`): `trainable`
    from batch 0, then each of `stages`. Raises :class:`ConfigError` for a bad path."""
    subsets = [(0, trainable_filter(model, train.trainable, f"{path}.trainable"))]
    for index, stage in enumerate(train.stages):
        key = f"{path}.stages[{index}].trainable"
        subsets.append((stage.at, trainable_filter(model, stage.trainable, key)))
    return subsets


def either(filters: Sequence[Any]) -> Any:
    """The leaves selected by any of `filters` (bool trees of one structure)."""
    return jax.tree.map(lambda *selected: any(selected), *filters)


def learning_rates(
    model: Any, trained: Any, optimizer: OptimizerConfig, path: str = "train.optimizer"
) -> Any:
    """Per leaf of `model`, its peak learning rate: its group's in
    `optimizer.learning_rates` (the longest matching path decides), else
    `optimizer.learning_rate`. Raises :class:`ConfigError` for a group that selects no
    array in `trained` (a bool tree like `model`: the arrays that train in some stage)."""
    rates = jax.tree.map(lambda _: optimizer.learning_rate, trained)
    for group in sorted(optimizer.learning_rates, key=lambda p: p.count(".")):
        key = f"{path}.learning_rates.{group}"
        selected = trainable_filter(model, [group], key)
        if not any(jax.tree.leaves(jax.tree.map(lambda s, t: s and t, selected, trained))):
            raise ConfigError(key, f"{group!r} selects no parameter that trains in any stage")
        rate = optimizer.learning_rates[group]
        rates = jax.tree.map(lambda s, old, rate=rate: rate if s else old, selected, rates)
    return rates


class TrainedArrays(NamedTuple):
    """Which arrays of an ensemble a training changes, and in which batches.

    - `selected`: a bool tree like the ensemble: the parameters, every array the
      optimizer, an update rule or the learning rule changes.
    - `optimized`: the arrays the optimizer steps in some stage (never those the
      learning rule sets itself).
    - `stage_starts`: each stage's first batch, `(stage,)`.
    - `stage_tables`: per parameter array, whether each stage trains it, `(stage,)`.
    - `masked`: whether some batch leaves a parameter to the rules alone, so the
      optimizer must be masked.
    - `owned_by_rule`: whether the learning rule sets some arrays itself.
    """

    selected: Any
    optimized: Any
    stage_starts: Int[Array, " stage"]
    stage_tables: Any
    masked: bool
    owned_by_rule: bool


def trained_arrays(
    ensemble: Any, train: TrainConfig, *, owned: Sequence[str], rule_targets: Any
) -> TrainedArrays:
    """The :class:`TrainedArrays` of training `ensemble` with `train`, where the learning
    rule sets the arrays at the paths `owned` itself and the update rules change those
    of `rule_targets` (a bool tree like `ensemble`)."""
    owned_arrays = trainable_filter(ensemble, owned, "train.learning")
    subsets = [
        (start, jax.tree.map(lambda s, o: s and not o, subset, owned_arrays))
        for start, subset in trained_subsets(ensemble, train)
    ]
    optimized = either([subset for _, subset in subsets])
    changed_by_rules = either([rule_targets, owned_arrays])
    selected = either([optimized, changed_by_rules])
    return TrainedArrays(
        selected=selected,
        optimized=optimized,
        stage_starts=jnp.asarray([start for start, _ in subsets], jnp.int32),
        stage_tables=eqx.filter(
            jax.tree.map(lambda *s: jnp.asarray(s), *[subset for _, subset in subsets]), selected
        ),
        masked=len(subsets) > 1
        or any(
            jax.tree.leaves(jax.tree.map(lambda o, r: r and not o, optimized, changed_by_rules))
        ),
        owned_by_rule=bool(owned),
    )
