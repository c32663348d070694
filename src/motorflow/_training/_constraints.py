"""Constraints on the network's weights, applied at initialisation and after every update.

Each kind is a config block (``train.constraints: [{kind: ...}, ...]``) that maps one
replicate's weights to the nearest ones that obey it. They act on the recurrent
weight matrix ``W[post, pre]`` of a cell that has one (``rnn``, ``leaky``) and, for
Dale's law, optionally on the readout's columns. Projections (signs, masks) run
before rescaling (norm caps), so a cap never breaks a sign or a missing
connection: scaling by a positive factor keeps both. `CONSTRAINTS` maps ``kind``
names to their classes; adding one is a class and one entry there.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray
from pydantic import Field

from .._config_base import Block, Boolean, ConfigError, PositiveNumber, registry, tagged_union
from .._model._attribute_paths import attribute_getter

Weight = Float[Array, "post pre"]


class AbstractConstraint(Block):
    """One constraint: `prepare` draws what it needs once per replicate (e.g. a mask);
    `apply` maps the recurrent and readout weights to ones that obey it."""

    kind: str
    # Projections (0) run before rescalings (1).
    ORDER: ClassVar[int] = 0

    def prepare(self, hidden_size: int, key: PRNGKeyArray) -> Any:
        """Fixed data of one replicate, drawn from `key` (None: nothing)."""
        return None

    @abc.abstractmethod
    def apply(self, recurrent: Weight, readout: Weight, prepared: Any) -> tuple[Weight, Weight]:
        raise NotImplementedError


class Dale(AbstractConstraint):
    """Dale's law: the first ``round(excitatory_fraction * hidden_size)`` hidden units are
    excitatory (their outgoing recurrent weights >= 0), the rest inhibitory (<= 0);
    a weight of the wrong sign is set to 0. With `readout`, the readout's weights from
    each unit obey its sign too. Song, Yang & Wang (2016), PLoS Comput Biol 12(2):
    e1004792, train E/I networks with 80% excitatory units."""

    kind: Literal["dale"] = "dale"
    excitatory_fraction: float = Field(0.8, gt=0, lt=1)
    readout: Boolean = False

    def signs(self, hidden_size: int) -> Float[Array, " pre"]:
        n_excitatory = round(self.excitatory_fraction * hidden_size)
        return jnp.where(jnp.arange(hidden_size) < n_excitatory, 1.0, -1.0)

    def apply(self, recurrent, readout, prepared):
        sign = self.signs(recurrent.shape[1])

        def obey(weight):
            return jnp.where(weight * sign >= 0, weight, jnp.zeros_like(weight))

        return obey(recurrent), obey(readout) if self.readout else readout


class Connectivity(AbstractConstraint):
    """A fixed sparse connectivity: each recurrent connection exists with probability
    `density`, drawn once per replicate from the training seed; missing ones stay 0.
    Without `self_connections`, no unit connects to itself."""

    kind: Literal["connectivity"] = "connectivity"
    density: float = Field(1.0, gt=0, le=1)
    self_connections: Boolean = True

    def prepare(self, hidden_size, key):
        mask = jax.random.bernoulli(key, self.density, (hidden_size, hidden_size))
        if not self.self_connections:
            mask = mask & ~jnp.eye(hidden_size, dtype=bool)
        return mask

    def apply(self, recurrent, readout, prepared):
        return jnp.where(prepared, recurrent, jnp.zeros_like(recurrent)), readout


class _Cap(AbstractConstraint):
    """Rescale the recurrent weights so that their `measure` is at most `max`."""

    max: PositiveNumber = 1.0
    ORDER: ClassVar[int] = 1

    @staticmethod
    @abc.abstractmethod
    def measure(weight: Weight) -> Float[Array, ""]:
        raise NotImplementedError

    def apply(self, recurrent, readout, prepared):
        size = self.measure(recurrent)
        scale = jnp.where(size > self.max, self.max / size, 1.0)
        return recurrent * scale.astype(recurrent.dtype), readout


class SpectralRadius(_Cap):
    """Cap the spectral radius (largest eigenvalue modulus) of the recurrent weights at
    `max`: the linearised dynamics' growth rate per step (Sussillo & Abbott 2009,
    Neuron 63:544, start at a radius near 1). An eigendecomposition per update, on the
    host CPU on a GPU (JAX's nonsymmetric ``eig``)."""

    kind: Literal["spectral_radius"] = "spectral_radius"

    @staticmethod
    def measure(weight):
        return jnp.max(jnp.abs(jnp.linalg.eigvals(weight)))


class SpectralNorm(_Cap):
    """Cap the spectral norm (largest singular value) of the recurrent weights at `max`:
    a bound on how much one step can stretch any hidden state."""

    kind: Literal["spectral_norm"] = "spectral_norm"

    @staticmethod
    def measure(weight):
        return jnp.linalg.norm(weight, ord=2)


CONSTRAINTS: dict[str, type[AbstractConstraint]] = registry(
    Dale, Connectivity, SpectralRadius, SpectralNorm
)
# One constraint block of a config: a registered kind, chosen by its `kind` key.
AnyConstraint = tagged_union(list(CONSTRAINTS.values()))


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

    def __init__(self, constraints: Sequence[AbstractConstraint], ensemble: Any, key: PRNGKeyArray):
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
            jax.vmap(lambda k, c=c: c.prepare(hidden_size, k))(keys[i])
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
