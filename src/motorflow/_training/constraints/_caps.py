"""Caps on the recurrent weights' spectral radius or spectral norm."""

from __future__ import annotations

import abc
from typing import ClassVar, Literal

import jax.numpy as jnp
from jaxtyping import Array, Float
from pydantic import Field

from ..._config_base import PositiveNumber
from ._base import AbstractConstraint, Weight


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
    max: PositiveNumber = Field(
        1.0,
        description="cap on the largest eigenvalue modulus of `W` (an eigendecomposition "
        "per update; on a GPU JAX runs it on the host CPU)",
    )

    @staticmethod
    def measure(weight):
        return jnp.max(jnp.abs(jnp.linalg.eigvals(weight)))


class SpectralNorm(_Cap):
    """Cap the spectral norm (largest singular value) of the recurrent weights at `max`:
    a bound on how much one step can stretch any hidden state."""

    kind: Literal["spectral_norm"] = "spectral_norm"
    max: PositiveNumber = Field(1.0, description="cap on the largest singular value of `W`")

    @staticmethod
    def measure(weight):
        return jnp.linalg.norm(weight, ord=2)
