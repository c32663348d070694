"""The two-link arm actuated by six Hill-type muscles with rigid tendons."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float
from pydantic import Field

from .._config_base import PositiveNumber
from ._arm import JOINT_NAMES, ArmConfig, ArmState, TwoLinkArm
from ._base import AbstractPlant, frozen
from ._hill_muscle import PASSIVE_REACH, activation_rate, hill_force

# Default parameters: MotorNet's `RigidTendonArm26` (motornet/effector.py), a "lumped-muscle"
# arm after Nijhof & Kouwenhoven (2000), "Simulation of multijoint arm movements", in Winters &
# Crago (eds.), Biomechanics and Neural Control of Posture and Movement, pp. 363-372,
# doi:10.1007/978-1-4612-2104-3_29: six muscles, their strengths, optimal fibre lengths, tendon
# lengths and the quadratic musculotendon-length polynomials below. The muscle model
# (`_hill_muscle`) is MotorNet's `RigidTendonHillMuscle`.
MUSCLE_NAMES = (
    "pectoralis",
    "deltoid",
    "brachioradialis",
    "triceps_lateral",
    "biceps",
    "triceps_long",
)
MAX_ISOMETRIC_FORCE = (838.0, 1207.0, 1422.0, 1549.0, 414.0, 603.0)  # N
OPTIMAL_FIBRE_LENGTH = (0.134, 0.140, 0.092, 0.093, 0.137, 0.127)  # m
TENDON_LENGTH = (0.039, 0.066, 0.172, 0.187, 0.204, 0.217)  # m (rigid)
# Musculotendon length L(q) = L0 + sum_j (s_j + k_j dq_j) dq_j with dq = q - REFERENCE_JOINT_ANGLE;
# rows are joints (shoulder, elbow), columns muscles.
REFERENCE_JOINT_ANGLE = (math.pi / 2, 0.0)  # rad
LENGTH_AT_REFERENCE = (0.151, 0.2322, 0.2859, 0.2355, 0.3329, 0.2989)  # m
LENGTH_SLOPE = (  # m/rad
    (-0.03, 0.03, 0.0, 0.0, -0.03, 0.03),
    (0.0, 0.0, -0.014, 0.025, -0.016, 0.03),
)
LENGTH_CURVATURE = (  # m/rad^2
    (0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.0, 0.0, -4e-3, -2.2e-3, -5.7e-3, -3.2e-3),
)


class MuscleArmState(eqx.Module):
    """State of the muscle-driven arm.

    **Arguments:**

    - `joint_angle`: shoulder and elbow angles (rad), shape `(2,)` (as in `ArmState`).
    - `joint_velocity`: their time derivatives (rad/s), shape `(2,)`.
    - `activation`: muscle activations in `[min_activation, 1]`, shape `(6,)`.
    """

    joint_angle: Float[Array, " joint"]
    joint_velocity: Float[Array, " joint"]
    activation: Float[Array, " muscle"]


class MuscleArm(AbstractPlant):
    """The two-link arm driven by six Hill-type muscles with rigid tendons.

    Controls are muscle excitations, expected in `[0, 1]` (`control_range`): squash the
    network's output (e.g. with a sigmoid). The plant clips them into
    `[min_activation, 1]`, as MotorNet does. Each activation follows Thelen's
    first-order dynamics, rising with time constant
    ``activation_time_constant * (0.5 + 1.5 a)`` and falling with
    ``deactivation_time_constant / (0.5 + 1.5 a)``. Muscle force comes from
    :func:`hill_force` at the fibre length and velocity the joint angles imply (rigid
    tendon: fibre length = musculotendon length - tendon length), and the joint torque
    is ``moment_arm @ force`` with ``moment_arm = -dL/dq`` (positive for a flexor).
    Joint limits, viscosity and the external force act through `arm` as for
    :class:`TwoLinkArm`; :meth:`constrain` also clips activations into
    `[min_activation, 1]`.

    Unlike MotorNet, which updates the force once per step from the previous step's
    geometry, the force here is a function of the current state, so RK4's stages see
    consistent forces.

    **Arguments:**

    - `arm`: the skeleton (:class:`TwoLinkArm`); its default is MotorNet's arm26 skeleton.
    - `muscle_names`: six names, used as labels in records.
    - `max_isometric_force`: per muscle (N).
    - `optimal_fibre_length`: per muscle (m).
    - `tendon_length`: per muscle (m); the tendon is rigid.
    - `reference_joint_angle`: posture `q_ref` (rad) the length polynomial is centred on,
      shape `(2,)`.
    - `length_at_reference`: musculotendon length at `q_ref` (m), per muscle.
    - `length_slope`, `length_curvature`: `(2 joints, 6 muscles)` coefficients `s`, `k`
      of ``L(q) = L_ref + sum_j (s_j + k_j dq_j) dq_j``, ``dq = q - q_ref``.
    - `slack_fibre_length`: fibre length where passive force starts, in optimal lengths.
    - `max_shortening_speed`: in optimal lengths per second.
    - `min_activation`: the activation floor (> 0; the Hill model needs it).
    - `activation_time_constant`, `deactivation_time_constant`: seconds.
    """

    arm: TwoLinkArm = eqx.field(default_factory=TwoLinkArm)
    muscle_names: tuple[str, ...] = eqx.field(static=True, default=MUSCLE_NAMES, converter=tuple)
    max_isometric_force: tuple[float, ...] = eqx.field(
        static=True, default=MAX_ISOMETRIC_FORCE, converter=frozen
    )
    optimal_fibre_length: tuple[float, ...] = eqx.field(
        static=True, default=OPTIMAL_FIBRE_LENGTH, converter=frozen
    )
    tendon_length: tuple[float, ...] = eqx.field(
        static=True, default=TENDON_LENGTH, converter=frozen
    )
    reference_joint_angle: tuple[float, float] = eqx.field(
        static=True, default=REFERENCE_JOINT_ANGLE, converter=frozen
    )
    length_at_reference: tuple[float, ...] = eqx.field(
        static=True, default=LENGTH_AT_REFERENCE, converter=frozen
    )
    length_slope: tuple[tuple[float, ...], tuple[float, ...]] = eqx.field(
        static=True, default=LENGTH_SLOPE, converter=frozen
    )
    length_curvature: tuple[tuple[float, ...], tuple[float, ...]] = eqx.field(
        static=True, default=LENGTH_CURVATURE, converter=frozen
    )
    slack_fibre_length: float = eqx.field(static=True, default=1.4)
    max_shortening_speed: float = eqx.field(static=True, default=10.0)
    min_activation: float = eqx.field(static=True, default=0.001)
    activation_time_constant: float = eqx.field(static=True, default=0.015)
    deactivation_time_constant: float = eqx.field(static=True, default=0.05)

    n_controls: ClassVar[int] = 6
    record_dims: ClassVar[dict[str, str]] = {
        "joint_angle": "joint",
        "joint_velocity": "joint",
        "muscle_activation": "muscle",
        "muscle_force": "muscle",
        "fibre_length": "muscle",
        "fibre_velocity": "muscle",
    }
    record_units: ClassVar[dict[str, str]] = {
        "joint_angle": "rad",
        "joint_velocity": "rad/s",
        "muscle_activation": "1",
        "muscle_force": "N",
        "fibre_length": "m",
        "fibre_velocity": "m/s",
    }
    control_units: ClassVar[str] = "1"
    control_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    workspace_note: ClassVar[str] = TwoLinkArm.workspace_note

    def __check_init__(self):
        per_muscle = (
            self.muscle_names,
            self.max_isometric_force,
            self.optimal_fibre_length,
            self.tendon_length,
            self.length_at_reference,
            *self.length_slope,
            *self.length_curvature,
        )
        if any(len(values) != self.n_controls for values in per_muscle):
            raise ValueError(f"every per-muscle setting needs {self.n_controls} values")
        if len(self.length_slope) != 2 or len(self.length_curvature) != 2:
            raise ValueError("length_slope and length_curvature need one row per joint (2)")
        if not 0 < self.min_activation < 1:
            raise ValueError(f"min_activation must be in (0, 1), got {self.min_activation}")
        if not 1.0 < self.slack_fibre_length < PASSIVE_REACH:
            raise ValueError(
                f"slack_fibre_length must be in (1, {PASSIVE_REACH}), got {self.slack_fibre_length}"
            )

    # -- muscle geometry and force ------------------------------------------------

    def _per_muscle(self, values, dtype) -> Array:
        return jnp.asarray(values, dtype=dtype)

    def musculotendon_length(self, joint_angle: Float[Array, " joint"]) -> Float[Array, " muscle"]:
        """Each musculotendon length (m) at `joint_angle`, shape `(6,)`."""
        dtype = joint_angle.dtype
        offset = joint_angle - self._per_muscle(self.reference_joint_angle, dtype)
        slope = self._per_muscle(self.length_slope, dtype)
        curvature = self._per_muscle(self.length_curvature, dtype)
        per_joint = (slope + curvature * offset[:, None]) * offset[:, None]
        return self._per_muscle(self.length_at_reference, dtype) + per_joint.sum(axis=0)

    def moment_arm(self, joint_angle: Float[Array, " joint"]) -> Float[Array, "joint muscle"]:
        """``-dL/dq`` (m), shape `(2 joints, 6 muscles)`: positive where the muscle flexes the joint."""
        dtype = joint_angle.dtype
        offset = joint_angle - self._per_muscle(self.reference_joint_angle, dtype)
        slope = self._per_muscle(self.length_slope, dtype)
        curvature = self._per_muscle(self.length_curvature, dtype)
        return -(slope + 2 * curvature * offset[:, None])

    def fibre_length(self, joint_angle: Float[Array, " joint"]) -> Float[Array, " muscle"]:
        """Fibre lengths (m), shape `(6,)`: musculotendon length minus the rigid tendon, >= 0."""
        tendon = self._per_muscle(self.tendon_length, joint_angle.dtype)
        return jnp.maximum(self.musculotendon_length(joint_angle) - tendon, 0.0)

    def fibre_velocity(
        self, joint_angle: Float[Array, " joint"], joint_velocity: Float[Array, " joint"]
    ) -> Float[Array, " muscle"]:
        """Fibre velocities (m/s, positive = lengthening), shape `(6,)`.

        The tendon is rigid, so the fibre changes length as fast as the musculotendon:
        ``dL/dt = dL/dq q' = -moment_arm^T q'``.
        """
        return -(joint_velocity @ self.moment_arm(joint_angle))

    def muscle_force(self, state: MuscleArmState) -> Float[Array, " muscle"]:
        """Each muscle's tension (N, active plus passive), shape `(6,)`."""
        dtype = state.joint_angle.dtype
        optimal = self._per_muscle(self.optimal_fibre_length, dtype)
        activation = jnp.clip(state.activation, self.min_activation, 1.0)
        active, passive = hill_force(
            activation,
            self.fibre_length(state.joint_angle) / optimal,
            self.fibre_velocity(state.joint_angle, state.joint_velocity)
            / (self.max_shortening_speed * optimal),
            self.slack_fibre_length,
        )
        return (active + passive) * self._per_muscle(self.max_isometric_force, dtype)

    def muscle_torque(self, state: MuscleArmState) -> Float[Array, " joint"]:
        """Shoulder and elbow torques (N m) the muscles produce, shape `(2,)`."""
        return self.moment_arm(state.joint_angle) @ self.muscle_force(state)

    # -- plant interface ----------------------------------------------------------

    def init(
        self, effector_pos: Float[Array, " xy"], effector_vel: Float[Array, " xy"]
    ) -> MuscleArmState:
        """The arm as :meth:`TwoLinkArm.init` places it, every activation at `min_activation`."""
        arm_state = self.arm.init(effector_pos, effector_vel)
        activation = jnp.full((self.n_controls,), self.min_activation, dtype=effector_pos.dtype)
        return MuscleArmState(
            joint_angle=arm_state.joint_angle,
            joint_velocity=arm_state.joint_velocity,
            activation=activation,
        )

    def vector_field(
        self,
        state: MuscleArmState,
        control: Float[Array, " muscle"],
        external_force: Float[Array, " xy"],
    ) -> MuscleArmState:
        """Joint and activation derivatives under excitations `control`, shape `(6,)`.

        Excitations are clipped into `[min_activation, 1]` first.
        """
        excitation = jnp.clip(control, self.min_activation, 1.0)
        activation = jnp.clip(state.activation, self.min_activation, 1.0)
        accel = self.arm.joint_acceleration(
            state.joint_angle, state.joint_velocity, self.muscle_torque(state), external_force
        )
        return MuscleArmState(
            joint_angle=state.joint_velocity,
            joint_velocity=accel,
            activation=activation_rate(
                excitation,
                activation,
                self.activation_time_constant,
                self.deactivation_time_constant,
            ),
        )

    def constrain(self, state: MuscleArmState) -> MuscleArmState:
        """The arm's joint limits, and activations clipped into `[min_activation, 1]`."""
        joints = self.arm.constrain(self.arm_state(state))
        return MuscleArmState(
            joint_angle=joints.joint_angle,
            joint_velocity=joints.joint_velocity,
            activation=jnp.clip(state.activation, self.min_activation, 1.0),
        )

    def arm_state(self, state: MuscleArmState) -> ArmState:
        """The skeleton's part of `state`."""
        return ArmState(joint_angle=state.joint_angle, joint_velocity=state.joint_velocity)

    def effector(self, state: MuscleArmState) -> tuple[Float[Array, " xy"], Float[Array, " xy"]]:
        """The hand's position and velocity, each shape `(2,)`."""
        return self.arm.effector(self.arm_state(state))

    def record(self, state: MuscleArmState) -> dict[str, Array]:
        """Joint and muscle variables per step, muscles in the order of `muscle_names`.

        `joint_angle` (rad) and `joint_velocity` (rad/s), shape `(2,)`;
        `muscle_activation`, `muscle_force` (N), `fibre_length` (m) and `fibre_velocity`
        (m/s, positive = lengthening), shape `(6,)`.
        """
        return {
            "joint_angle": state.joint_angle,
            "joint_velocity": state.joint_velocity,
            "muscle_activation": state.activation,
            "muscle_force": self.muscle_force(state),
            "fibre_length": self.fibre_length(state.joint_angle),
            "fibre_velocity": self.fibre_velocity(state.joint_angle, state.joint_velocity),
        }

    def labels(self) -> dict[str, tuple[str, ...]]:
        """Controls are the muscles' excitations; the joints are the arm's."""
        names = tuple(self.muscle_names)
        return {"actuator": names, "joint": JOINT_NAMES, "muscle": names}

    def is_reachable(self, pos: Sequence[float]) -> bool:
        """As :meth:`TwoLinkArm.is_reachable` for `arm`. Plain NumPy, no JAX."""
        return self.arm.is_reachable(pos)


class MuscleArmConfig(ArmConfig):
    """The arm driven by six Hill-type muscles with rigid tendons; controls are excitations.

    Defaults: MotorNet's `RigidTendonArm26` (Kistemaker, Wong & Gribble 2010); the
    muscles are, in order, pectoralis, deltoid, brachioradialis, triceps lateral,
    biceps and triceps long. The network's outputs pass through a sigmoid into [0, 1].
    """

    kind: Literal["muscle_arm"] = "muscle_arm"
    max_isometric_force: Annotated[
        tuple[PositiveNumber, ...], Field(min_length=6, max_length=6)
    ] = Field(
        MAX_ISOMETRIC_FORCE,
        description="N, per muscle: pectoralis, deltoid, brachioradialis, triceps "
        "lateral, biceps, triceps long",
    )
    activation_time_constant: PositiveNumber = Field(
        0.015, description="s, rising activation (Thelen 2003 dynamics)"
    )
    deactivation_time_constant: PositiveNumber = Field(0.05, description="s, falling activation")

    # Measured apart from the arm's, with the same values (benchmarks/README.md,
    # "Preflight estimate").
    TRAIN_BASE_MEMORY: ClassVar[int] = 1000 * 2**20
    TRAIN_FLOATS_PER_STEP: ClassVar[int] = 100

    def build(self) -> MuscleArm:
        return MuscleArm(
            arm=TwoLinkArm(**self.arm_settings()),
            max_isometric_force=self.max_isometric_force,
            activation_time_constant=self.activation_time_constant,
            deactivation_time_constant=self.deactivation_time_constant,
        )
