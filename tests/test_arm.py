"""The torque-driven two-link arm: kinematics, rigid-body dynamics, external forces, joint limits."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from motorflow._plants import ArmState, TwoLinkArm, step

FREE_ARM = TwoLinkArm(joint_limits=None, max_joint_speed=None)
ZERO = jnp.zeros(2)


def _random_points(key_seed: int, n: int, half_width: float = 0.7) -> np.ndarray:
    key = jax.random.key(key_seed)
    return np.asarray(jax.random.uniform(key, (n, 2), minval=-half_width, maxval=half_width))


def _random_angles(key_seed: int, n: int) -> jax.Array:
    """Angles spread over the default limits, away from the straight-arm singularity."""
    low = jnp.array([0.0, 0.2])
    high = jnp.array([math.radians(135), math.radians(155)])
    return jax.random.uniform(jax.random.key(key_seed), (n, 2), minval=low, maxval=high)


@pytest.mark.parametrize(
    "arm",
    [TwoLinkArm(), FREE_ARM, TwoLinkArm(shoulder_pos=(0.1, -0.3))],
    ids=["default-limits", "no-limits", "moved-shoulder"],
)
def test_forward_kinematics_inverts_inverse_kinematics(arm):
    points = _random_points(0, 400) + np.asarray(arm.shoulder_pos)
    reachable = np.array([arm.is_reachable(p) for p in points])
    assert reachable.sum() > 50
    points = jnp.asarray(points[reachable])
    angles = jax.jit(jax.vmap(arm.inverse_kinematics))(points)
    assert bool(jnp.all((angles[:, 1] >= 0) & (angles[:, 1] <= math.pi)))
    np.testing.assert_allclose(jax.jit(jax.vmap(arm.forward_kinematics))(angles), points, atol=2e-6)


def test_is_reachable_agrees_with_inverse_kinematics():
    arm = TwoLinkArm()
    points = _random_points(1, 2000)
    angles = np.asarray(jax.jit(jax.vmap(arm.inverse_kinematics))(jnp.asarray(points)), np.float64)
    limits = np.asarray(arm.joint_limits)
    solved = np.all(np.isfinite(angles), axis=1)
    within = np.all((angles >= limits[:, 0]) & (angles <= limits[:, 1]), axis=1)
    ik_success = solved & within
    # Float32 (JAX) against float64 (validation) may disagree on the boundary itself only.
    radius = np.linalg.norm(points, axis=1)
    l1, l2 = arm.upper_arm_length, arm.forearm_length
    near_boundary = (
        (np.abs(radius - (l1 + l2)) < 1e-4)
        | (np.abs(radius - abs(l1 - l2)) < 1e-4)
        | np.any(np.abs(angles - limits[:, 0]) < 1e-4, axis=1)
        | np.any(np.abs(angles - limits[:, 1]) < 1e-4, axis=1)
    )
    validation = np.array([arm.is_reachable(p) for p in points])
    assert 200 < ik_success.sum() < 1800
    np.testing.assert_array_equal(validation[~near_boundary], ik_success[~near_boundary])


def test_reachability_examples():
    arm = TwoLinkArm()
    reach = arm.upper_arm_length + arm.forearm_length
    assert arm.is_reachable((0.0, 0.45))  # in front of the shoulder
    assert not arm.is_reachable((0.0, 0.0))  # the shoulder itself: closer than |l1 - l2|
    assert not arm.is_reachable((0.0, reach + 0.01))  # beyond the fully straight arm
    assert not arm.is_reachable((0.0, -0.4))  # behind: the shoulder would pass its limit
    assert FREE_ARM.is_reachable((0.0, -0.4))


def test_jacobian_is_the_derivative_of_forward_kinematics():
    arm = TwoLinkArm()
    angles = _random_angles(2, 16)
    np.testing.assert_allclose(
        jax.jit(jax.vmap(arm.jacobian))(angles),
        jax.jit(jax.vmap(jax.jacfwd(arm.forward_kinematics)))(angles),
        atol=1e-6,
    )


def test_init_places_the_hand_at_the_requested_position_and_velocity():
    arm = TwoLinkArm()
    pos, vel = jnp.array([-0.1, 0.4]), jnp.array([0.3, -0.2])
    state = jax.jit(arm.init)(pos, vel)
    hand_pos, hand_vel = jax.jit(arm.effector)(state)
    np.testing.assert_allclose(hand_pos, pos, atol=2e-6)
    np.testing.assert_allclose(hand_vel, vel, atol=2e-6)
    assert set(arm.record(state)) == {"joint_angle", "joint_velocity"}


def test_endpoint_force_acts_as_the_virtual_work_torque():
    """At rest, M q'' equals the torque whose virtual work matches the force's."""
    arm = TwoLinkArm()
    force = jnp.array([3.0, -5.0])
    eps = 1e-2

    def plant_torque(angle):
        state = ArmState(joint_angle=angle, joint_velocity=ZERO)
        return arm.mass_matrix(angle) @ arm.vector_field(state, ZERO, force).joint_velocity

    def virtual_work_torque(angle):
        # Work of the force per unit joint rotation, by central differences of the kinematics.
        shifts = eps * jnp.eye(2)
        ahead = jax.vmap(arm.forward_kinematics)(angle + shifts)
        behind = jax.vmap(arm.forward_kinematics)(angle - shifts)
        return (ahead - behind) @ force / (2 * eps)

    angles = _random_angles(3, 16)
    np.testing.assert_allclose(
        jax.jit(jax.vmap(plant_torque))(angles),
        jax.jit(jax.vmap(virtual_work_torque))(angles),
        rtol=1e-3,
        atol=1e-4,
    )


def test_torque_and_force_enter_the_same_equation():
    """A torque equal to J^T F moves the arm exactly as the force does."""
    arm = TwoLinkArm(joint_viscosity=0.2)
    state = ArmState(joint_angle=jnp.array([0.6, 1.4]), joint_velocity=jnp.array([0.5, -1.0]))
    force = jnp.array([-2.0, 4.0])
    torque = arm.jacobian(state.joint_angle).T @ force
    vector_field = jax.jit(arm.vector_field)
    by_force = vector_field(state, ZERO, force)
    by_torque = vector_field(state, torque, ZERO)
    np.testing.assert_allclose(by_force.joint_velocity, by_torque.joint_velocity, rtol=1e-6)


@eqx.filter_jit
def _energy_drift(arm: TwoLinkArm, method: str, *, dt: float, n_steps: int) -> jax.Array:
    state0 = ArmState(joint_angle=jnp.array([0.5, 1.2]), joint_velocity=jnp.array([2.0, -3.0]))

    def body(state, _):
        state = step(arm, state, ZERO, ZERO, dt=dt, method=method)
        return state, arm.kinetic_energy(state)

    energy = jax.lax.scan(body, state0, None, length=n_steps)[1]
    energy0 = arm.kinetic_energy(state0)
    return energy / energy0 - 1


def test_free_arm_conserves_energy_under_rk4_and_euler_drifts():
    rk4 = float(jnp.max(jnp.abs(_energy_drift(FREE_ARM, "rk4", dt=2e-3, n_steps=150))))
    euler = float(jnp.max(jnp.abs(_energy_drift(FREE_ARM, "euler", dt=2e-3, n_steps=150))))
    assert rk4 < 2e-5  # float32 round-off over 0.3 s
    assert euler > 1e-4
    assert euler > 20 * rk4


def test_viscosity_dissipates_energy():
    arm = TwoLinkArm(joint_limits=None, joint_viscosity=0.5)
    drift = np.asarray(_energy_drift(arm, "rk4", dt=2e-3, n_steps=150))
    assert np.all(np.diff(drift) < 0)
    assert drift[-1] < -0.2


@eqx.filter_jit
def _push_into_limits(arm: TwoLinkArm, torque: jax.Array, n_steps: int = 60):
    state0 = arm.init(jnp.array([0.0, 0.45]), ZERO)

    def body(state, _):
        state = step(arm, state, torque, ZERO, dt=0.01, method="euler", n_substeps=2)
        return state, state

    return jax.lax.scan(body, state0, None, length=n_steps)[1]


@pytest.mark.parametrize("torque", [(20.0, 20.0), (-20.0, -20.0), (20.0, -20.0)])
def test_joint_limits_hold(torque):
    arm = TwoLinkArm()
    states = _push_into_limits(arm, jnp.array(torque))
    low, high = np.asarray(arm.joint_limits, dtype=np.float32).T
    angles, velocity = np.asarray(states.joint_angle), np.asarray(states.joint_velocity)
    assert np.all((angles >= low) & (angles <= high))
    at_limit = np.isclose(angles, low) | np.isclose(angles, high)
    assert at_limit[-1].all()  # the torques pin both joints
    # A pinned joint is not moving outward.
    assert np.all(velocity[np.isclose(angles, low)] >= 0)
    assert np.all(velocity[np.isclose(angles, high)] <= 0)
    # Without limits the same torques leave the range.
    free = np.asarray(_push_into_limits(FREE_ARM, jnp.array(torque)).joint_angle)
    assert np.any((free < low - 0.1) | (free > high + 0.1))


def test_speed_bound_clips_joint_velocity():
    arm = TwoLinkArm(joint_limits=None, max_joint_speed=5.0)
    state = ArmState(joint_angle=jnp.array([0.5, 1.0]), joint_velocity=jnp.array([9.0, -9.0]))
    clipped = arm.constrain(state)
    np.testing.assert_array_equal(clipped.joint_velocity, [5.0, -5.0])


@pytest.mark.parametrize(
    "settings",
    [{"upper_arm_length": 0.0}, {"joint_viscosity": -1.0}, {"joint_limits": ((1.0, 0.0), (0, 1))}],
)
def test_bad_settings_are_refused(settings):
    with pytest.raises(ValueError):
        TwoLinkArm(**settings)


def test_settings_read_as_lists_become_the_same_static_tuples():
    """YAML and JSON give lists; static fields must be hashable, and equal to the tuples."""
    from_lists = TwoLinkArm(joint_limits=[[0, 2], [0, 2.5]], shoulder_pos=[0.1, 0])
    from_tuples = TwoLinkArm(joint_limits=((0.0, 2.0), (0.0, 2.5)), shoulder_pos=(0.1, 0.0))
    assert jax.tree.structure(from_lists) == jax.tree.structure(from_tuples)
    hash(from_lists)
