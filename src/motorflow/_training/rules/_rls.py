"""Recursive least squares on the readout toward target outputs (FORCE's rule).

Sussillo & Abbott (2009), "Generating coherent patterns of activity from chaotic
neural networks", Neuron 63(4):544: the readout ``y = W [h; 1]`` follows the
recursive least-squares estimate of the weights that map the hidden states to the
target outputs. The information matrix ``R = P^-1`` (the inverse of FORCE's ``P``;
initially ``regularization I``) is kept across batches, so after any number of
samples the readout is the ridge solution
``argmin_W sum |W [h; 1] - y*|^2 + reg |W - W_0|^2``.
The targets are :mod:`motorflow._training.rules._targets`' (the inverse dynamics of a
minimum-jerk reach, open-loop or corrected by the effector's current state). Each batch's samples (every step of every trial) enter as one
block: without forgetting, the estimate after a set of samples is the same however
they are split into blocks or ordered, and one block costs one Cholesky
factorisation per batch. By default the update comes after the batch's rollouts;
with `update_every` k it comes after every k steps, within the rollout
(:mod:`motorflow._training._segments`), and the next steps run with the new readout: with k =
1 this is FORCE's online form, the readout changing at every step of the trials it
learns from.
"""

from __future__ import annotations

from typing import Annotated, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve
from jaxtyping import Array, Float
from pydantic import Field

from ..._config_base import PositiveInt, PositiveNumber
from ._base import AbstractLearningRule
from ._targets import corrective_outputs, target_outputs

Inputs = Float[Array, "sample features"]


def rls_update(
    weight: Float[Array, "features out"],
    information: Float[Array, "features features"],
    inputs: Inputs,
    targets: Float[Array, "sample out"],
    forgetting: float = 1.0,
) -> tuple[Float[Array, "features out"], Float[Array, "features features"]]:
    """One block of recursive least squares: `weight` (``y = inputs @ weight``) and the
    information matrix ``R = P^-1`` after the samples (`inputs`, `targets`) enter.

    The information form ``R' = R + X^T X``, ``W' = W + R'^-1 X^T (Y - X W)`` is the
    same recursion as the covariance form's ``P`` update, but ``R`` is a sum of
    positive semi-definite terms: it stays positive definite in float32 over
    millions of samples, where ``P``, shrinking like one over their number, loses
    it to rounding (measured: non-finite weights after about 4 million samples).

    `forgetting` (lambda in (0, 1]) is exponentially weighted RLS (Haykin, Adaptive
    Filter Theory, 5th ed., ch. 10): ``R' = lambda R + X^T X``, the weight update
    unchanged, so after blocks 1..n the weight minimises
    ``sum_k lambda^(n-k) |X_k W - Y_k|^2 + lambda^n |W - W_0|^2_R0``. The forgetting
    acts per block (the whole block is weighted alike), not per sample; 1 is the
    plain recursion.
    """
    information = forgetting * information + inputs.T @ inputs
    correction = cho_solve(cho_factor(information), inputs.T @ (targets - inputs @ weight))
    return weight + correction, information


class RLS(AbstractLearningRule):
    """Recursive least squares on the readout toward target outputs (FORCE's rule)."""

    kind: Literal["rls"] = "rls"
    regularization: PositiveNumber = Field(
        1.0,
        description="the information matrix of `[hidden; 1]` (FORCE's `P` inverted) starts "
        "as `regularization I` (FORCE's alpha)",
    )
    movement_time: PositiveNumber = Field(
        0.5,
        description="duration (s) of the minimum-jerk reach the targets follow. Partners: "
        "the task's `n_steps` (and latest `go_step`) and the model's `dt`: the reach must "
        "end within the trial, else an error",
    )
    update_every: PositiveInt | None = Field(
        None,
        description="update the readout after every this many steps of a rollout, within "
        "it (`1`: FORCE's online form; `null`: once per rollout); at most the task's "
        "`n_steps`",
    )
    forgetting: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        1.0,
        description="forgetting factor lambda of exponentially weighted RLS (Haykin, "
        "Adaptive Filter Theory): the information matrix is scaled by it before each "
        "update (per update, not per sample), so older updates weigh less; `1`: plain "
        "RLS",
    )
    target: Literal["open_loop", "corrective"] = Field(
        "open_loop",
        description="what the readout regresses onto: `open_loop`, the inverse dynamics of "
        "the minimum-jerk reach from the trial's start (the same whatever the effector "
        "does); `corrective`, that of the reach's acceleration corrected by the "
        "effector's current position and velocity errors (computed-torque control: "
        "`stiffness`, `damping`)",
    )
    stiffness: PositiveNumber = Field(
        9.0,
        description="`corrective` target: acceleration per metre of position error "
        "(1/s^2). Partner `target`: set with `open_loop`, an error",
    )
    damping: PositiveNumber = Field(
        6.0,
        description="`corrective` target: acceleration per m/s of velocity error (1/s; "
        "2 sqrt(stiffness) is critical damping). The defaults keep a unit point mass "
        "stable when the correction acts on a state 0.1 s old with 50 ms steps "
        "(spectral radius 0.90), where stiffness 100 and damping 20 are not (1.25). "
        "Partner `target`: set with `open_loop`, an error",
    )
    exact_gradient = False

    def intervention_problem(self, interventions):
        kinds = ", ".join(p.kind for p in interventions)
        return (
            f"the rls rule cannot train under the task's {kinds} (an intervention on the "
            "network's units, which its targets do not take into account); train with "
            "bptt, truncated_bptt or eprop, or intervene in the evaluation conditions only"
        )

    def check_model(self, cell, plant, trainable):
        if plant.control_range is not None:
            return (
                "rls regresses the readout onto the inverse dynamics of a reach, which "
                "needs a plant driven by forces or torques (point_mass, arm), not one "
                "whose controls are bounded excitations"
            )
        if tuple(trainable) != ("network.readout",):
            return (
                "rls trains the readout only; set train.trainable: [network.readout] "
                "(and no stages)"
            )
        return None

    def segment_length(self) -> int | None:
        return self.update_every

    def owned(self, model):
        return ("network.readout.weight", "network.readout.bias")

    def init(self, model, *, key):
        n_features = model.network.cell.hidden_size + 1
        dtype = model.network.readout.weight.dtype
        return {"information": self.regularization * jnp.eye(n_features, dtype=dtype)}

    def value_and_grad(self, batch, params, state, *, states: bool = False):
        # No gradient: the optimizer trains nothing (the readout is the rule's own);
        # `apply` reads the rollouts.
        return batch.loss(params, states=True), jax.tree.map(jnp.zeros_like, params), state

    def apply(self, batch, model, state, rollouts):
        readout = model.network.readout
        steps = batch.first + jnp.arange(rollouts.hidden.shape[-2])
        if self.target == "corrective":
            targets = jax.vmap(
                lambda trial, pos, vel: corrective_outputs(
                    batch.model,
                    trial,
                    steps,
                    self.movement_time,
                    pos,
                    vel,
                    stiffness=self.stiffness,
                    damping=self.damping,
                )
            )(batch.trials, rollouts.pos, rollouts.vel)
        else:
            targets = jax.vmap(
                lambda trial: target_outputs(batch.model, trial, steps, self.movement_time)
            )(batch.trials)
        hidden = rollouts.hidden.reshape(-1, rollouts.hidden.shape[-1])
        features = jnp.concatenate([hidden, jnp.ones_like(hidden[:, :1])], axis=-1)
        weight = jnp.concatenate([readout.weight.T, readout.bias[None, :]], axis=0)
        weight, information = rls_update(
            weight,
            state["information"],
            features,
            targets.reshape(-1, targets.shape[-1]).astype(weight.dtype),
            forgetting=self.forgetting,
        )
        model = eqx.tree_at(
            lambda m: (m.network.readout.weight, m.network.readout.bias),
            model,
            (weight[:-1].T, weight[-1]),
        )
        return model, {"information": information}
