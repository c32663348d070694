"""A two-link planar arm (shoulder and elbow) driven by joint torques."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar, Literal

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float
from pydantic import Field

from .._config_base import NonNegativeNumber, Number, Point, PositiveNumber
from ._base import AbstractPlant, PlantConfig, frozen

# Default parameters: the skeleton MotorNet builds for its six-muscle arm, the
# `TwoDofArm(m1=1.82, m2=1.43, l1g=.135, l2g=.165, i1=.051, i2=.057, l1=.309, l2=.333)`
# made by `RigidTendonArm26.__init__` (motornet/effector.py; skeleton in motornet/skeleton.py),
# whose values MotorNet takes from Nijhof & Kouwenhoven (2000), "Simulation of multijoint arm
# movements", in Winters & Crago (eds.), Biomechanics and Neural Control of Posture and Movement,
# pp. 363-372, doi:10.1007/978-1-4612-2104-3_29. Joint limits are RigidTendonArm26's (shoulder
# 0-135 deg, elbow 0-155 deg); MotorNet puts the shoulder at the origin and its joint viscosity
# defaults to zero. (MotorNet's bare `TwoDofArm()` defaults differ: l2 = 0.26 m, limits 0-140
# and 0-160 deg. We use the arm26 skeleton for both plants so that the torque arm and the muscle
# arm share one geometry and one workspace.)
UPPER_ARM_LENGTH = 0.309  # m
FOREARM_LENGTH = 0.333  # m
UPPER_ARM_MASS = 1.82  # kg
FOREARM_MASS = 1.43  # kg
UPPER_ARM_COM = 0.135  # m, shoulder to the upper arm's centre of mass
FOREARM_COM = 0.165  # m, elbow to the forearm's centre of mass
UPPER_ARM_INERTIA = 0.051  # kg m^2, about the upper arm's centre of mass
FOREARM_INERTIA = 0.057  # kg m^2, about the forearm's centre of mass
JOINT_LIMITS = (
    (0.0, math.radians(135.0)),
    (0.0, math.radians(155.0)),
)  # rad, (low, high) per joint
JOINT_NAMES = ("shoulder", "elbow")
MAX_JOINT_SPEED = 1000.0  # rad/s; MotorNet's defensive velocity bound


def _flexed_elbow_angles(x, y, upper_arm_length, forearm_length, xp):
    """Joint angles placing the hand at `(x, y)` relative to the shoulder, elbow angle in [0, pi].

    `xp` is `numpy` or `jax.numpy`, so that validation (NumPy, no JAX backend) and the
    plant (JAX) share one formula. Outside the annulus the arccos is NaN.
    """
    l1, l2 = upper_arm_length, forearm_length
    cos_elbow = (x * x + y * y - l1 * l1 - l2 * l2) / (2 * l1 * l2)
    elbow = xp.arccos(cos_elbow)
    shoulder = xp.arctan2(y, x) - xp.arctan2(l2 * xp.sin(elbow), l1 + l2 * cos_elbow)
    # Wrap into [-pi, pi): both atan2 terms lie in (-pi, pi], so their difference may not.
    shoulder = xp.mod(shoulder + math.pi, 2 * math.pi) - math.pi
    return shoulder, elbow


def _solve_2x2(matrix: Float[Array, "row col"], rhs: Float[Array, " col"]) -> Float[Array, " row"]:
    """``matrix^{-1} rhs`` by Cramer's rule: cheaper under jit and vmap than a general solver."""
    (a, b), (c, d) = matrix
    det = a * d - b * c
    return jnp.stack([d * rhs[0] - b * rhs[1], a * rhs[1] - c * rhs[0]]) / det


class ArmState(eqx.Module):
    """State of a two-link arm.

    **Arguments:**

    - `joint_angle`: shoulder and elbow angles (rad), shape `(2,)`. The shoulder angle is
      the upper arm's angle from the +x axis; the elbow angle is the forearm's angle
      relative to the upper arm (0 = straight, positive = flexed, counter-clockwise).
    - `joint_velocity`: their time derivatives (rad/s), shape `(2,)`.
    """

    joint_angle: Float[Array, " joint"]
    joint_velocity: Float[Array, " joint"]


class TwoLinkArm(AbstractPlant):
    """A planar shoulder-elbow arm moving in the horizontal plane (no gravity), driven by torques.

    Joint-space rigid-body dynamics
    ``M(q) q'' + C(q, q') q' + B q' = tau + J(q)^T F_ext``, with `tau` the control
    (shoulder and elbow torques, N m, unbounded), `B = joint_viscosity * I` and `F_ext`
    the external force on the hand. The hand is the forearm's far end.

    Joint limits follow MotorNet's skeleton: after every sub-step
    (:meth:`constrain`), a joint velocity beyond `max_joint_speed` is clipped to it, a
    velocity that would carry a joint further past a limit it has reached or passed is
    set to zero, and the angle is clipped into its limits. Limits act only there: the
    vector field itself is unconstrained.

    **Arguments:**

    - `upper_arm_length`, `forearm_length`: segment lengths (m).
    - `upper_arm_mass`, `forearm_mass`: segment masses (kg).
    - `upper_arm_com`, `forearm_com`: distance (m) from the segment's proximal joint
      to its centre of mass.
    - `upper_arm_inertia`, `forearm_inertia`: moment of inertia (kg m^2) about the
      segment's centre of mass.
    - `joint_viscosity`: viscous joint damping (N m s/rad, >= 0), the same at both joints.
    - `joint_limits`: `((shoulder_low, shoulder_high), (elbow_low, elbow_high))` in rad,
      or `None` for no limits.
    - `max_joint_speed`: bound on each joint speed (rad/s), or `None` for none.
    - `shoulder_pos`: the shoulder's Cartesian position (m).
    """

    upper_arm_length: float = eqx.field(static=True, default=UPPER_ARM_LENGTH)
    forearm_length: float = eqx.field(static=True, default=FOREARM_LENGTH)
    upper_arm_mass: float = eqx.field(static=True, default=UPPER_ARM_MASS)
    forearm_mass: float = eqx.field(static=True, default=FOREARM_MASS)
    upper_arm_com: float = eqx.field(static=True, default=UPPER_ARM_COM)
    forearm_com: float = eqx.field(static=True, default=FOREARM_COM)
    upper_arm_inertia: float = eqx.field(static=True, default=UPPER_ARM_INERTIA)
    forearm_inertia: float = eqx.field(static=True, default=FOREARM_INERTIA)
    joint_viscosity: float = eqx.field(static=True, default=0.0)
    joint_limits: tuple[tuple[float, float], tuple[float, float]] | None = eqx.field(
        static=True, default=JOINT_LIMITS, converter=frozen
    )
    max_joint_speed: float | None = eqx.field(static=True, default=MAX_JOINT_SPEED)
    shoulder_pos: tuple[float, float] = eqx.field(static=True, default=(0.0, 0.0), converter=frozen)

    n_controls: ClassVar[int] = 2
    record_dims: ClassVar[dict[str, str]] = {"joint_angle": "joint", "joint_velocity": "joint"}
    record_units: ClassVar[dict[str, str]] = {"joint_angle": "rad", "joint_velocity": "rad/s"}
    control_units: ClassVar[str] = "N*m"
    control_range: ClassVar[tuple[float, float] | None] = None
    workspace_note: ClassVar[str] = (
        "points the hand reaches with the elbow angle in [0, pi] and both joint angles "
        "within joint_limits: an annulus around the shoulder of radii |l1 - l2| and "
        "l1 + l2, cut down by the limits"
    )

    def __check_init__(self):
        for name in ("upper_arm_length", "forearm_length", "upper_arm_mass", "forearm_mass"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if not self.joint_viscosity >= 0:
            raise ValueError(f"joint_viscosity must be >= 0, got {self.joint_viscosity}")
        if self.joint_limits is not None:
            for low, high in self.joint_limits:
                if not low < high:
                    raise ValueError(f"joint_limits need low < high, got {self.joint_limits}")

    # -- kinematics ---------------------------------------------------------------

    def forward_kinematics(self, joint_angle: Float[Array, " joint"]) -> Float[Array, " xy"]:
        """The hand's Cartesian position for `joint_angle`, shape `(2,)`."""
        shoulder, elbow = joint_angle[0], joint_angle[1]
        forearm_angle = shoulder + elbow
        x = self.upper_arm_length * jnp.cos(shoulder) + self.forearm_length * jnp.cos(forearm_angle)
        y = self.upper_arm_length * jnp.sin(shoulder) + self.forearm_length * jnp.sin(forearm_angle)
        return jnp.stack([x, y]) + jnp.asarray(self.shoulder_pos, dtype=x.dtype)

    def jacobian(self, joint_angle: Float[Array, " joint"]) -> Float[Array, "xy joint"]:
        """``d hand_pos / d joint_angle``, shape `(2, 2)` (rows x, y; columns shoulder, elbow)."""
        shoulder, elbow = joint_angle[0], joint_angle[1]
        forearm_angle = shoulder + elbow
        forearm_dx = -self.forearm_length * jnp.sin(forearm_angle)
        forearm_dy = self.forearm_length * jnp.cos(forearm_angle)
        return jnp.array(
            [
                [-self.upper_arm_length * jnp.sin(shoulder) + forearm_dx, forearm_dx],
                [self.upper_arm_length * jnp.cos(shoulder) + forearm_dy, forearm_dy],
            ]
        )

    def inverse_kinematics(self, hand_pos: Float[Array, " xy"]) -> Float[Array, " joint"]:
        """The joint angles that put the hand at `hand_pos`, shape `(2,)`.

        Of the two solutions, the one with the elbow angle in `[0, pi]` (the elbow bent
        counter-clockwise, the only one the default elbow limits allow); the shoulder
        angle is wrapped into `[-pi, pi)`. NaN outside the annulus the arm can span;
        angles beyond `joint_limits` are returned as they are (see :meth:`is_reachable`).
        """
        rel = hand_pos - jnp.asarray(self.shoulder_pos, dtype=hand_pos.dtype)
        shoulder, elbow = _flexed_elbow_angles(
            rel[0], rel[1], self.upper_arm_length, self.forearm_length, jnp
        )
        return jnp.stack([shoulder, elbow])

    def is_reachable(self, pos: Sequence[float]) -> bool:
        """Whether :meth:`inverse_kinematics` of `pos` is defined and within the joint limits.

        The reachable set is the annulus around the shoulder with radii
        ``|upper_arm_length - forearm_length|`` and ``upper_arm_length + forearm_length``,
        intersected with the image of `joint_limits` under the elbow-in-`[0, pi]`
        inverse kinematics. Plain NumPy on float64, no JAX.
        """
        x = float(pos[0]) - self.shoulder_pos[0]
        y = float(pos[1]) - self.shoulder_pos[1]
        l1, l2 = self.upper_arm_length, self.forearm_length
        cos_elbow = (x * x + y * y - l1 * l1 - l2 * l2) / (2 * l1 * l2)
        if not -1.0 <= cos_elbow <= 1.0:
            return False
        if self.joint_limits is None:
            return True
        angles = _flexed_elbow_angles(np.float64(x), np.float64(y), l1, l2, np)
        return all(low <= float(a) <= high for a, (low, high) in zip(angles, self.joint_limits))

    # -- dynamics -----------------------------------------------------------------

    def mass_matrix(self, joint_angle: Float[Array, " joint"]) -> Float[Array, "joint joint"]:
        """The joint-space inertia matrix `M(q)`, shape `(2, 2)`."""
        m2, l1, c2 = self.forearm_mass, self.upper_arm_length, self.forearm_com
        forearm_about_elbow = m2 * c2**2 + self.forearm_inertia
        coupling = m2 * l1 * c2 * jnp.cos(joint_angle[1])
        upper_about_shoulder = self.upper_arm_mass * self.upper_arm_com**2 + self.upper_arm_inertia
        m11 = upper_about_shoulder + forearm_about_elbow + m2 * l1**2 + 2 * coupling
        m12 = forearm_about_elbow + coupling
        return jnp.array([[m11, m12], [m12, forearm_about_elbow]])

    def hand_mobility(self, joint_angle: Float[Array, " joint"]) -> Float[Array, "xy xy"]:
        """The hand's mobility at rest, ``W = J M^{-1} J^T`` (Hogan 1985, "The mechanics
        of multi-joint posture and movement control", Biol. Cybern. 52:315): the hand's
        acceleration per unit force on it (m s^-2 N^-1), shape `(2, 2)`. Its ellipse's
        major axis is the direction in which a force moves the hand most easily (the
        inverse of the hand's apparent inertia ``(J M^{-1} J^T)^{-1}``)."""
        jacobian = self.jacobian(joint_angle)
        return jacobian @ jnp.linalg.solve(self.mass_matrix(joint_angle), jacobian.T)

    def mobility_axis(self, hand_pos: Sequence[float]) -> float:
        """The major axis of the hand's mobility ellipse (:meth:`hand_mobility`) with
        the hand at rest at `hand_pos`: its angle in rad, in [0, π), in the hand's
        Cartesian frame (0 along +x, π/2 along +y, away from the body)."""
        joint_angle = self.inverse_kinematics(jnp.asarray(hand_pos, dtype=jnp.float32))
        mobility = np.asarray(self.hand_mobility(joint_angle), dtype=np.float64)
        _, vectors = np.linalg.eigh((mobility + mobility.T) / 2)
        major = vectors[:, -1]  # eigh sorts the eigenvalues in ascending order
        return float(np.mod(np.arctan2(major[1], major[0]), np.pi))

    def velocity_torque(
        self, joint_angle: Float[Array, " joint"], joint_velocity: Float[Array, " joint"]
    ) -> Float[Array, " joint"]:
        """Coriolis and centripetal torques plus joint viscosity, ``C(q, q') q' + B q'``, shape `(2,)`."""
        h = self.forearm_mass * self.upper_arm_length * self.forearm_com * jnp.sin(joint_angle[1])
        shoulder_vel, elbow_vel = joint_velocity[0], joint_velocity[1]
        coriolis = jnp.stack([-h * (2 * shoulder_vel + elbow_vel) * elbow_vel, h * shoulder_vel**2])
        return coriolis + self.joint_viscosity * joint_velocity

    def joint_acceleration(
        self,
        joint_angle: Float[Array, " joint"],
        joint_velocity: Float[Array, " joint"],
        torque: Float[Array, " joint"],
        external_force: Float[Array, " xy"],
    ) -> Float[Array, " joint"]:
        """Solve ``M q'' = torque + J^T F_ext - C q' - B q'`` for `q''`, shape `(2,)`.

        **Arguments:**

        - `joint_angle`, `joint_velocity`: shape `(2,)`.
        - `torque`: shoulder and elbow torques (N m), shape `(2,)`.
        - `external_force`: Cartesian force on the hand (N), shape `(2,)`.
        """
        net_torque = (
            torque
            + self.jacobian(joint_angle).T @ external_force
            - self.velocity_torque(joint_angle, joint_velocity)
        )
        return _solve_2x2(self.mass_matrix(joint_angle), net_torque)

    def kinetic_energy(self, state: ArmState) -> Float[Array, ""]:
        """``0.5 q'^T M(q) q'`` (J): the arm's total mechanical energy, as it moves without gravity."""
        v = state.joint_velocity
        return 0.5 * v @ self.mass_matrix(state.joint_angle) @ v

    # -- plant interface ----------------------------------------------------------

    def init(
        self, effector_pos: Float[Array, " xy"], effector_vel: Float[Array, " xy"]
    ) -> ArmState:
        """The arm with its hand at `effector_pos` moving with `effector_vel`.

        Angles from :meth:`inverse_kinematics` (elbow angle in `[0, pi]`); joint velocity
        ``J^{-1} effector_vel``, which is singular with the arm fully straight.
        """
        joint_angle = self.inverse_kinematics(effector_pos)
        joint_velocity = _solve_2x2(self.jacobian(joint_angle), effector_vel)
        return ArmState(joint_angle=joint_angle, joint_velocity=joint_velocity)

    def vector_field(
        self, state: ArmState, control: Float[Array, " joint"], external_force: Float[Array, " xy"]
    ) -> ArmState:
        """``(q', q'')`` under shoulder and elbow torques `control`, shape `(2,)`."""
        accel = self.joint_acceleration(
            state.joint_angle, state.joint_velocity, control, external_force
        )
        return ArmState(joint_angle=state.joint_velocity, joint_velocity=accel)

    def constrain(self, state: ArmState) -> ArmState:
        """Apply the speed bound and the joint limits, as MotorNet's skeleton does after each step."""
        angle, velocity = state.joint_angle, state.joint_velocity
        if self.max_joint_speed is not None:
            velocity = jnp.clip(velocity, -self.max_joint_speed, self.max_joint_speed)
        if self.joint_limits is not None:
            low = jnp.asarray([lim[0] for lim in self.joint_limits], dtype=angle.dtype)
            high = jnp.asarray([lim[1] for lim in self.joint_limits], dtype=angle.dtype)
            # Tested on the unclipped angle, so a joint that overshot its limit this step stops.
            pushing_out = ((velocity < 0) & (angle <= low)) | ((velocity > 0) & (angle >= high))
            velocity = jnp.where(pushing_out, jnp.zeros_like(velocity), velocity)
            angle = jnp.clip(angle, low, high)
        return ArmState(joint_angle=angle, joint_velocity=velocity)

    def effector(self, state: ArmState) -> tuple[Float[Array, " xy"], Float[Array, " xy"]]:
        """The hand's position and velocity ``J(q) q'``, each shape `(2,)`."""
        pos = self.forward_kinematics(state.joint_angle)
        vel = self.jacobian(state.joint_angle) @ state.joint_velocity
        return pos, vel

    def labels(self) -> dict[str, tuple[str, ...]]:
        """Controls are the shoulder and elbow torques; the joints are the same two."""
        return {"actuator": JOINT_NAMES, "joint": JOINT_NAMES}

    def record(self, state: ArmState) -> dict[str, Array]:
        """`joint_angle` (rad) and `joint_velocity` (rad/s), each shape `(2,)`."""
        return {"joint_angle": state.joint_angle, "joint_velocity": state.joint_velocity}


class ArmConfig(PlantConfig):
    """A two-link arm driven by shoulder and elbow torques (N m).

    Defaults: MotorNet's arm26 skeleton (Nijhof & Kouwenhoven 2000); joint limits in
    degrees, shoulder then elbow (elbow 0 = straight). The hand starts every trial at
    rest at the task's start position, with the elbow flexed.
    """

    kind: Literal["arm"] = "arm"
    upper_arm_length: PositiveNumber = Field(UPPER_ARM_LENGTH, description="m")
    forearm_length: PositiveNumber = Field(FOREARM_LENGTH, description="m")
    upper_arm_mass: PositiveNumber = Field(UPPER_ARM_MASS, description="kg")
    forearm_mass: PositiveNumber = Field(FOREARM_MASS, description="kg")
    upper_arm_com: PositiveNumber = Field(
        UPPER_ARM_COM, description="m from the shoulder to the upper arm's centre of mass"
    )
    forearm_com: PositiveNumber = Field(
        FOREARM_COM, description="m from the elbow to the forearm's centre of mass"
    )
    upper_arm_inertia: PositiveNumber = Field(
        UPPER_ARM_INERTIA, description="kg m^2 about the upper arm's centre of mass"
    )
    forearm_inertia: PositiveNumber = Field(
        FOREARM_INERTIA, description="kg m^2 about the forearm's centre of mass"
    )
    joint_viscosity: NonNegativeNumber = Field(0.0, description="viscous joint damping (N m s/rad)")
    joint_limits_deg: tuple[tuple[Number, Number], tuple[Number, Number]] | None = Field(
        tuple((math.degrees(low), math.degrees(high)) for low, high in JOINT_LIMITS),
        description="shoulder and elbow `[low, high]` in degrees, or `null` for none; at a "
        "limit the joint stops",
    )
    shoulder_pos: Point = Field((0.0, 0.0), description="the shoulder's position (m)")

    HAS_JOINTS: ClassVar[bool] = True
    # Measured (benchmarks/README.md, "Preflight estimate"): compiling the arm's
    # dynamics takes about 350 MiB more than the point mass's, whatever the sizes.
    TRAIN_BASE_MEMORY: ClassVar[int] = 1000 * 2**20
    TRAIN_FLOATS_PER_STEP: ClassVar[int] = 100

    def arm_settings(self) -> dict:
        """The :class:`TwoLinkArm` keyword arguments these settings give."""
        limits = self.joint_limits_deg
        return {
            **{name: getattr(self, name) for name in ARM_SETTINGS},
            "joint_limits": None
            if limits is None
            else tuple((math.radians(lo), math.radians(hi)) for lo, hi in limits),
        }

    def build(self) -> TwoLinkArm:
        return TwoLinkArm(**self.arm_settings())


ARM_SETTINGS = (
    "upper_arm_length",
    "forearm_length",
    "upper_arm_mass",
    "forearm_mass",
    "upper_arm_com",
    "forearm_com",
    "upper_arm_inertia",
    "forearm_inertia",
    "joint_viscosity",
    "shoulder_pos",
)
