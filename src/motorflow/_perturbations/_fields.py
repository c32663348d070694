"""Force fields that act on the effector for the whole trial: curl and constant fields."""

from __future__ import annotations

from typing import ClassVar, Literal

import jax.numpy as jnp
from jaxtyping import Array
from pydantic import Field

from ._base import (
    AbstractPerturbation,
    Drawn,
    Effects,
    Frame,
    NonNegativeDrawn,
    TrialGeometry,
)


class CurlField(AbstractPerturbation):
    """A velocity-dependent curl field: ``F = strength * R(+-90 deg) v``.

    The force is the effector velocity `v` turned 90 degrees clockwise (``cw``) or
    counter-clockwise (``ccw``) and scaled by `strength`; it is perpendicular to the
    velocity, so it does no work. The curl field of Thoroughman & Shadmehr (2000),
    "Learning of action through adaptive combination of motor primitives", Nature
    407:742-747, doi:10.1038/35037588, was ``F = [[0, 13], [-13, 0]] v`` N s/m,
    i.e. ``cw`` with strength 13; Shadmehr & Mussa-Ivaldi (1994), J Neurosci
    14(5):3208-3224, doi:10.1523/JNEUROSCI.14-05-03208.1994, used a curl-like viscous
    field of similar strength.
    """

    kind: Literal["curl"] = "curl"
    strength: NonNegativeDrawn = Field(
        10.0,
        description="N s/m: the force is `strength` times the hand velocity turned 90 "
        "degrees; it does no work",
    )
    direction: Literal["cw", "ccw"] = Field(
        "cw",
        description="`cw` (clockwise, as Thoroughman & Shadmehr 2000's "
        "`[[0, 13], [-13, 0]]` field) or `ccw`",
    )

    DRAWN: ClassVar[tuple[str, ...]] = ("strength",)

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        sign = 1.0 if self.direction == "ccw" else -1.0
        gain = sign * params["active"] * params["strength"]
        return Effects.only(
            trial.n_steps,
            curl=jnp.full(trial.n_steps, gain, jnp.float32),
        )


class ConstantField(AbstractPerturbation):
    """A constant force on the effector throughout the trial (a load, as of a weight):
    `strength` newtons at `angle` degrees in `frame`."""

    kind: Literal["constant_field"] = "constant_field"
    strength: NonNegativeDrawn = Field(
        1.0, description="N: a constant force on the hand for the whole trial"
    )
    angle: Drawn = Field(0.0, description="degrees counter-clockwise")
    frame: Frame = "world"

    DRAWN: ClassVar[tuple[str, ...]] = ("strength", "angle")

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        force = params["active"] * params["strength"] * trial.direction(params["angle"], self.frame)
        return Effects.only(trial.n_steps, force=jnp.broadcast_to(force, (trial.n_steps, 2)))
