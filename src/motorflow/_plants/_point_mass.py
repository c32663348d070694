"""A point mass in the plane, pushed directly by the network's force output."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar, Literal

import equinox as eqx
from jaxtyping import Array, Float
from pydantic import Field

from .._config_base import NonNegativeNumber, PositiveNumber
from ._base import AbstractPlant, PlantConfig


class PointMassState(eqx.Module):
    """State of a point mass.

    **Arguments:**

    - `pos`: position (m), shape `(2,)`.
    - `vel`: velocity (m/s), shape `(2,)`.
    """

    pos: Float[Array, " xy"]
    vel: Float[Array, " xy"]


class PointMass(AbstractPlant):
    """A 2-D point mass with viscous damping: ``m x'' = control + F_ext - damping x'``.

    The control is a Cartesian force (N), unbounded. With the Euler method and one
    sub-step, a loop step is one explicit Euler step of the network's `dt`.

    **Arguments:**

    - `mass`: mass in kg (> 0).
    - `damping`: viscous damping in N s/m (>= 0); the drag force is ``-damping * vel``.
    """

    mass: float = eqx.field(static=True, default=1.0)
    damping: float = eqx.field(static=True, default=0.0)

    n_controls: ClassVar[int] = 2
    record_dims: ClassVar[dict[str, str]] = {}
    record_units: ClassVar[dict[str, str]] = {}
    control_units: ClassVar[str] = "N"
    control_range: ClassVar[tuple[float, float] | None] = None
    workspace_note: ClassVar[str] = "every finite point of the plane"
    linear: ClassVar[bool] = True

    def __check_init__(self):
        if not self.mass > 0:
            raise ValueError(f"mass must be > 0, got {self.mass}")
        if not self.damping >= 0:
            raise ValueError(f"damping must be >= 0, got {self.damping}")

    def init(
        self, effector_pos: Float[Array, " xy"], effector_vel: Float[Array, " xy"]
    ) -> PointMassState:
        """The point mass at `effector_pos` moving with `effector_vel`, each shape `(2,)`."""
        return PointMassState(pos=effector_pos, vel=effector_vel)

    def vector_field(
        self,
        state: PointMassState,
        control: Float[Array, " xy"],
        external_force: Float[Array, " xy"],
    ) -> PointMassState:
        """``(vel, force / mass)``; the force is `control + external_force` minus drag."""
        accel = (control + external_force - self.damping * state.vel) / self.mass
        return PointMassState(pos=state.vel, vel=accel)

    def constrain(self, state: PointMassState) -> PointMassState:
        """The identity: the point mass is unconstrained."""
        return state

    def effector(self, state: PointMassState) -> tuple[Float[Array, " xy"], Float[Array, " xy"]]:
        """The position and velocity, each shape `(2,)`."""
        return state.pos, state.vel

    def record(self, state: PointMassState) -> dict[str, Array]:
        """Nothing beyond the effector's position and velocity."""
        return {}

    def labels(self) -> dict[str, tuple[str, ...]]:
        """The controls are the force's x and y components."""
        return {"actuator": ("x", "y")}

    def is_reachable(self, pos: Sequence[float]) -> bool:
        """True for any finite point: the plane is unbounded."""
        return len(pos) == 2 and all(math.isfinite(float(p)) for p in pos)


class PointMassConfig(PlantConfig):
    """A point mass pushed by the network's 2-D force: `mass` (kg), viscous `damping` (N s/m)."""

    kind: Literal["point_mass"] = "point_mass"
    mass: PositiveNumber = Field(1.0, description="mass in kg")
    damping: NonNegativeNumber = Field(
        0.0, description="viscous damping (N s/m): a drag force `-damping * velocity`"
    )

    # Measured (benchmarks/README.md, "Preflight estimate"): about 350 MiB less than
    # the arms take to compile, whatever the sizes.
    TRAIN_BASE_MEMORY: ClassVar[int] = 660 * 2**20
    TRAIN_FLOATS_PER_STEP: ClassVar[int] = 150

    def build(self) -> PointMass:
        return PointMass(mass=self.mass, damping=self.damping)
