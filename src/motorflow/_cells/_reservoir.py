"""A FORCE reservoir: a sparse random rate network with gain g, as Sussillo & Abbott
(2009, Neuron 63:544) train it, in the rate form of their network equation."""

from __future__ import annotations

import math
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ._base import AbstractCell


class ReservoirCell(AbstractCell):
    """Sparse random rate network: ``r' = (1 - a) r + a tanh(g J r + W_in input + drive)``.

    Sussillo & Abbott (2009), Neuron 63(4):544, Eq. 1 (their "network architecture"
    section): ``tau dx/dt = -x + g J r + J^Gz z``, ``r = tanh(x)``, with `J` sparse
    (each entry nonzero with probability `connectivity` p) and its nonzero entries
    drawn from ``N(0, 1/(p N))``, so that ``g J`` has spectral radius about g and the
    network is chaotic for g > 1 (their g = 1.5). Here the state is the rate-form
    variable ``r`` (``tau dr/dt = -r + tanh(g J r + ...)``), whose linearisation at
    the origin is theirs (``-I + g J``), so that the readout reads rates as theirs
    does. ``a = dt / tau`` with `dt` the cell's own step (a tenth of `tau` in the
    paper). Input weights are drawn from ``U(-1, 1)`` like their feedback weights;
    the output fed back (``J^Gz z``) enters through `drive`
    (:class:`motorflow._model._network.Network`'s `output_feedback`).
    """

    weight_in: Float[Array, "hidden input"]
    weight_rec: Float[Array, "hidden hidden"]
    alpha: float = eqx.field(static=True)
    gain: float = eqx.field(static=True)
    hidden_size: int = eqx.field(static=True)
    RECURRENT_WEIGHT: ClassVar[str | None] = "weight_rec"
    PLASTIC_WEIGHT: ClassVar[str] = "weight_rec"
    KIND: ClassVar[str] = "reservoir"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        dt: float,
        tau: float,
        gain: float = 1.5,
        connectivity: float = 0.1,
        key: PRNGKeyArray,
    ):
        k_in, k_mask, k_rec = jax.random.split(key, 3)
        self.weight_in = jax.random.uniform(k_in, (hidden_size, input_size), minval=-1, maxval=1)
        mask = jax.random.bernoulli(k_mask, connectivity, (hidden_size, hidden_size))
        scale = 1.0 / math.sqrt(connectivity * hidden_size)
        self.weight_rec = jnp.where(
            mask, scale * jax.random.normal(k_rec, (hidden_size, hidden_size)), 0.0
        )
        self.alpha = dt / tau
        self.gain = gain
        self.hidden_size = hidden_size

    @classmethod
    def build(cls, input_size, hidden_size, *, dt, tau, key, gain=1.5, connectivity=0.1):
        return cls(
            input_size, hidden_size, dt=dt, tau=tau, gain=gain, connectivity=connectivity, key=key
        )

    def __call__(self, input, hidden, drive=0.0):
        rate = jnp.tanh(self.gain * (self.weight_rec @ hidden) + self.weight_in @ input + drive)
        return (1.0 - self.alpha) * hidden + self.alpha * rate
