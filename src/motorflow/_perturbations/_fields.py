"""Force fields that act on the effector for the whole trial: curl, viscous and constant
fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array
from pydantic import Field

from .._config_base import Number
from ._base import (
    AbstractPerturbation,
    Drawn,
    Effects,
    Frame,
    NonNegativeDrawn,
    TrialGeometry,
    shown,
)

# Counter-clockwise rotation by 90 degrees: a curl field of gain g is g times this.
# (NumPy: a JAX array made at import would start JAX's backend before a job chooses
# its devices.)
_TURN_LEFT = np.array([[0.0, -1.0], [1.0, 0.0]], np.float32)
# Shadmehr & Mussa-Ivaldi (1994), J Neurosci 14(5):3208-3224, Eq. 1: the field their
# subjects adapted to, F = B v with the hand's velocity v (x right, y away from the
# body), in N s/m. It is symmetric (eigenvalues +15.9 and -14.9), not a curl: it
# assists motion along one axis, resists it along the other and pushes most reaches
# sideways.
SHADMEHR_1994_FIELD = ((-10.1, -11.2), (-11.2, 11.1))


class CurlField(AbstractPerturbation):
    """A velocity-dependent curl field: ``F = strength * R(+-90 deg) v``.

    The force is the effector velocity `v` turned 90 degrees clockwise (``cw``) or
    counter-clockwise (``ccw``) and scaled by `strength`; it is perpendicular to the
    velocity, so it does no work. The curl field of Thoroughman & Shadmehr (2000),
    "Learning of action through adaptive combination of motor primitives", Nature
    407:742-747, doi:10.1038/35037588, was ``F = [[0, 13], [-13, 0]] v`` N s/m,
    i.e. ``cw`` with strength 13. It is not the field of Shadmehr & Mussa-Ivaldi
    (1994), J Neurosci 14(5):3208-3224, doi:10.1523/JNEUROSCI.14-05-03208.1994, whose
    viscous field B is symmetric (`SHADMEHR_1994_FIELD`, :class:`ViscousField`): the
    adaptation protocol is theirs, a curl is the field later studies use.
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
    UNITS: ClassVar[dict[str, str]] = {"strength": "N*s/m"}
    # How a figure's label draws each `direction`.
    ARROWS: ClassVar[dict[str, str]] = {"cw": "↻", "ccw": "↺"}

    @classmethod
    def describe(cls, settings: Mapping[str, Any]) -> str:
        arrow = cls.ARROWS[settings["direction"]]
        return f"curl {arrow} {shown(settings['strength'])} N s/m"

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        sign = 1.0 if self.direction == "ccw" else -1.0
        gain = sign * params["active"] * params["strength"]
        return Effects.only(
            trial.n_steps, viscosity=jnp.broadcast_to(gain * _TURN_LEFT, (trial.n_steps, 2, 2))
        )


class ViscousField(AbstractPerturbation):
    """A velocity-dependent force field of any matrix: ``F = scale * B v`` (N) at the
    effector's velocity `v` (m/s), B in N s/m, rows and columns in x, y order.

    The default B is the field of Shadmehr & Mussa-Ivaldi (1994), "Adaptive
    representation of dynamics during learning of a motor task", J Neurosci
    14(5):3208-3224, doi:10.1523/JNEUROSCI.14-05-03208.1994, Eq. 1:
    ``[[-10.1, -11.2], [-11.2, 11.1]]``. A curl field is the antisymmetric case
    (:class:`CurlField`).
    """

    kind: Literal["viscous_field"] = "viscous_field"
    matrix: tuple[tuple[Number, Number], tuple[Number, Number]] = Field(
        SHADMEHR_1994_FIELD,
        description="N s/m: the 2 x 2 matrix B of F = scale * B v, as rows [[Bxx, Bxy], "
        "[Byx, Byy]]; the default is Shadmehr & Mussa-Ivaldi (1994)'s field",
    )
    scale: Drawn = Field(1.0, description="multiplies B (a range: drawn per trial)")

    DRAWN: ClassVar[tuple[str, ...]] = ("scale",)
    UNITS: ClassVar[dict[str, str]] = {"scale": "1"}

    @classmethod
    def describe(cls, settings: Mapping[str, Any]) -> str:
        rows = ", ".join("[" + ", ".join(f"{b:g}" for b in row) + "]" for row in settings["matrix"])
        return f"viscous field {shown(settings['scale'])} × [{rows}] N s/m"

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        gain = params["active"] * params["scale"]
        matrix = gain * jnp.asarray(self.matrix, jnp.float32)
        return Effects.only(
            trial.n_steps, viscosity=jnp.broadcast_to(matrix, (trial.n_steps, 2, 2))
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
    UNITS: ClassVar[dict[str, str]] = {"strength": "N", "angle": "degree"}

    @classmethod
    def describe(cls, settings: Mapping[str, Any]) -> str:
        return f"field {shown(settings['strength'])} N at {shown(settings['angle'])}°"

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        force = params["active"] * params["strength"] * trial.direction(params["angle"], self.frame)
        return Effects.only(trial.n_steps, force=jnp.broadcast_to(force, (trial.n_steps, 2)))
