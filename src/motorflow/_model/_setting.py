"""A number of a model's configuration held as an array (a noise level), so that
experiments differing only in it share their compiled programs.

A model's settings are static fields: part of its tree's structure, so a changed
setting is a changed program and never hides as an unhashed leaf. A few are only
multiplied in (a noise std): compiling a program per value would make a sweep over
them train one program per value, where a pack of the sweep's experiments could train
as one (:func:`motorflow.train_pack`). Those are :class:`Setting`'s: the value an
array leaf (an argument of the programs, with the replicate axis in an ensemble),
whether it is zero and which config key it holds static (so a zero noise still
compiles to no random draws, and a setting's value is always its config's).

A setting is not a weight: it never trains (:func:`weights`' filter leaves it out of
trainable selections), a saved ensemble's file does not hold it (it is filled back
from the config it was saved with: :func:`fill_settings`), and an ensemble adopting
another's weights keeps its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float


class Setting(eqx.Module):
    """A number of the model's config as an array.

    **Arguments:**

    - `value`: the number (a float32 scalar; in an ensemble, one per replicate).
    - `source`: the config key it holds, under the model's config
      (``feedback.noise_std``).
    - `nonzero`: whether the value is not zero: the term it scales is computed at all.
    """

    value: Float[Array, ""]
    source: str = eqx.field(static=True)
    nonzero: bool = eqx.field(static=True)

    @classmethod
    def of(cls, number: float, source: str) -> Setting:
        """The setting `source` of value `number`."""
        return cls(jnp.asarray(number, jnp.float32), source, bool(number != 0))


def is_setting(node: Any) -> bool:
    return isinstance(node, Setting)


def is_weight(node: Any) -> bool:
    """Whether `node` (a leaf, or a :class:`Setting` taken whole) is an array that is a
    weight: every array (or shape-only array) but a setting's value."""
    return not is_setting(node) and (eqx.is_array(node) or isinstance(node, jax.ShapeDtypeStruct))


def weights(tree: Any) -> Any:
    """`tree` with its weights kept (:func:`is_weight`) and everything else None."""
    return eqx.filter(tree, is_weight, is_leaf=is_setting)


def setting_mask(tree: Any) -> Any:
    """A tree of bools like `tree`: True on the :class:`Setting` values."""
    return jax.tree.map(
        lambda node: jax.tree.map(lambda _: is_setting(node), node),
        tree,
        is_leaf=is_setting,
    )


def fill_settings(tree: Any, config: Mapping[str, Any]) -> Any:
    """`tree` (a model or ensemble, possibly shape-only) with each :class:`Setting`'s
    value read from `config` (the model config's plain values) at its `source`, in the
    shape its value has in `tree`."""

    def filled(node: Any) -> Any:
        if not is_setting(node):
            return node
        number = config
        for part in node.source.split("."):
            number = number[part]
        return Setting(jnp.full(node.value.shape, number, jnp.float32), node.source, node.nonzero)

    return jax.tree.map(filled, tree, is_leaf=is_setting)
