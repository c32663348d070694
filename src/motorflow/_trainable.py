"""Select trainable leaves by declared paths (``network``, ``network.readout``, ...)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax

from ._config import ConfigError


def _getter(path: str):
    return lambda tree: functools.reduce(getattr, path.split("."), tree)


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
    """A pytree of bools like `model`: True on floating-point arrays under any of `paths`.

    `model` may be shape-only (built under ``eqx.filter_eval_shape``), so paths can
    be checked without computing anything.

    Raises :class:`ConfigError` (under `config_key`) for a path that names no part of
    the model or selects no floating-point array.
    """
    spec = jax.tree.map(lambda _: False, model)
    for path in paths:
        _check_path(model, path, config_key)
        get = _getter(path)
        spec = eqx.tree_at(get, spec, replace=jax.tree.map(lambda _: True, get(spec)))
        if not any(jax.tree.leaves(jax.tree.map(_is_inexact, get(model)))):
            raise ConfigError(config_key, f"{path!r} selects no trainable (floating-point) arrays")
    return jax.tree.map(lambda selected, leaf: selected and _is_inexact(leaf), spec, model)
