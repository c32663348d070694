"""The configured constraints of a training, applied together: projections first,
then caps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
from jaxtyping import PRNGKeyArray

from ..._config_errors import ConfigError
from ..._model._attribute_paths import attribute_getter
from ._base import AbstractConstraint


class Constraints(eqx.Module):
    """The configured constraints of a model whose cell has recurrent weights at
    ``network.cell.<cell.RECURRENT_WEIGHT>``, with each replicate's prepared data.

    **Arguments:**

    - `constraints`: the constraint blocks (any order; projections run first).
    - `ensemble`: the ensemble (replicate axis first) they will constrain.
    - `key`: draws the prepared data (one key per replicate is split from it).
    """

    constraints: tuple[AbstractConstraint, ...] = eqx.field(static=True)
    recurrent_path: str = eqx.field(static=True)
    prepared: Any

    def __init__(
        self, constraints: Sequence[AbstractConstraint], ensemble: Any, *, key: PRNGKeyArray
    ):
        self.constraints = tuple(sorted(constraints, key=lambda c: c.ORDER))
        cell = ensemble.network.cell
        path = getattr(cell, "RECURRENT_WEIGHT", None)
        if self.constraints and path is None:
            raise ConfigError(
                "train.constraints",
                f"the {type(cell).__name__} has no single recurrent weight matrix to "
                "constrain; use network.cell rnn or leaky",
            )
        self.recurrent_path = f"network.cell.{path}"
        hidden_size = cell.hidden_size
        n = jax.tree.leaves(eqx.filter(ensemble, eqx.is_array))[0].shape[0]
        keys = jax.random.split(key, (len(self.constraints), n))
        self.prepared = tuple(
            jax.vmap(lambda k, c=c: c.prepare(hidden_size, key=k))(keys[i])
            for i, c in enumerate(self.constraints)
        )

    def __bool__(self) -> bool:
        return bool(self.constraints)

    def apply(self, model: Any, prepared: Any) -> Any:
        """One replicate's `model` constrained with its `prepared` data."""
        get_recurrent = attribute_getter(self.recurrent_path)
        get_readout = attribute_getter("network.readout.weight")
        recurrent, readout = get_recurrent(model), get_readout(model)
        for constraint, data in zip(self.constraints, prepared, strict=True):
            recurrent, readout = constraint.apply(recurrent, readout, data)
        return eqx.tree_at(
            lambda m: (get_recurrent(m), get_readout(m)), model, (recurrent, readout)
        )

    def apply_ensemble(self, ensemble: Any) -> Any:
        """Every replicate of `ensemble` constrained (at initialisation)."""
        if not self:
            return ensemble
        return eqx.filter_vmap(self.apply)(ensemble, self.prepared)
