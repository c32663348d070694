"""A FORCE reservoir: a sparse random rate network with gain g, as Sussillo & Abbott
(2009, Neuron 63:544) train it, in the rate form of their network equation."""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray
from pydantic import Field

from .._config_base import Boolean, PositiveNumber
from ._base import AbstractCell, CellConfig, time_constant_problem


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

    def __call__(self, input, hidden, drive=0.0):
        rate = jnp.tanh(self.gain * (self.weight_rec @ hidden) + self.weight_in @ input + drive)
        return (1.0 - self.alpha) * hidden + self.alpha * rate


class ReservoirConfig(CellConfig):
    """FORCE's sparse random rate network (Sussillo & Abbott 2009), with gain `gain`
    and time constant `tau`; FORCE trains its readout by RLS (`learning: {kind: rls}`)."""

    kind: Literal["reservoir"] = "reservoir"
    tau: PositiveNumber = Field(
        0.1,
        description="time constant of the units in seconds (>= the cell's step, `dt / "
        "substeps`; FORCE integrates with a tenth of `tau`)",
    )
    gain: PositiveNumber = Field(
        1.5, description="gain g of the recurrent weights (chaotic above 1; FORCE's 1.5)"
    )
    connectivity: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        0.1,
        description="probability p that a recurrent weight is nonzero (nonzero weights "
        "drawn from N(0, 1/(p hidden_size)); FORCE's 0.1)",
    )
    output_feedback: Boolean = Field(
        False,
        description="feed the readout's output back into the cell at every sub-step "
        "through fixed U(-1, 1) weights (FORCE's feedback loop)",
    )

    CELL: ClassVar[type[AbstractCell]] = ReservoirCell

    def build(self, input_size, hidden_size, *, dt, key):
        return ReservoirCell(
            input_size,
            hidden_size,
            dt=dt,
            tau=self.tau,
            gain=self.gain,
            connectivity=self.connectivity,
            key=key,
        )

    def step_problem(self, step):
        return time_constant_problem(self, step)

    def feeds_output_back(self):
        return self.output_feedback
