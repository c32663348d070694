"""The six-muscle arm: activation dynamics, Hill force relations, muscle geometry, joint torques."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from motorflow._plants import MuscleArm, MuscleArmState, TwoLinkArm, hill_force, step

PLANT = MuscleArm()
ZERO = jnp.zeros(2)
MID_POSTURE = jnp.array([math.radians(45), math.radians(80)])
NAMES = PLANT.muscle_names
# Jitted once: op-by-op dispatch of these small graphs costs more than compiling them.
vector_field = jax.jit(PLANT.vector_field)
muscle_force = jax.jit(PLANT.muscle_force)
muscle_torque = jax.jit(PLANT.muscle_torque)
hill = jax.jit(hill_force)


def _state(activation, joint_angle=MID_POSTURE, joint_velocity=ZERO) -> MuscleArmState:
    activation = jnp.broadcast_to(jnp.asarray(activation, jnp.float32), (6,))
    return MuscleArmState(
        joint_angle=joint_angle, joint_velocity=joint_velocity, activation=activation
    )


@eqx.filter_jit
def _activation_course(plant, activation0, excitation, *, dt, n_steps):
    def body(state, _):
        state = step(plant, state, excitation, ZERO, dt=dt, method="rk4")
        return state, state.activation

    return jax.lax.scan(body, _state(activation0), None, length=n_steps)[1]


def test_activation_decays_toward_its_minimum_without_excitation():
    """Zero excitation is clipped to u = min_activation; then da/dt = -(a - u)(0.5 + 1.5 a) / tau,
    whose solution is t(a) = tau / (0.5 + 1.5 u) * log((0.5 + 1.5 a) / (a - u)) + const."""
    dt, n_steps, floor = 5e-3, 100, PLANT.min_activation
    course = np.asarray(_activation_course(PLANT, 0.8, jnp.zeros(6), dt=dt, n_steps=n_steps))
    assert np.all(np.diff(course, axis=0) < 0)
    assert np.all(course >= floor)
    np.testing.assert_allclose(course[-1], floor, atol=2e-3)

    def time_to(a):
        scale = PLANT.deactivation_time_constant / (0.5 + 1.5 * floor)
        return scale * np.log((0.5 + 1.5 * a) / (a - floor))

    decaying = course[:, 0].astype(np.float64)
    times = dt * np.arange(1, n_steps + 1)
    informative = decaying - floor > 1e-2  # float32 cannot resolve a - u much below that
    assert informative.sum() > 20
    np.testing.assert_allclose(
        time_to(decaying[informative]) - time_to(0.8), times[informative], atol=1e-4
    )


def test_activation_rises_with_the_activation_time_constant():
    """Full excitation: da/dt = (1 - a) / (tau (0.5 + 1.5 a)), so t(a) = tau (-2 log(1 - a) - 1.5 a)."""
    dt, n_steps, start = 1e-3, 40, PLANT.min_activation
    course = np.asarray(_activation_course(PLANT, start, jnp.ones(6), dt=dt, n_steps=n_steps))
    assert np.all(np.diff(course, axis=0) > 0) and np.all(course <= 1.0)

    def time_to(a):
        return PLANT.activation_time_constant * (-2 * np.log1p(-a) - 1.5 * a)

    times = dt * np.arange(1, n_steps + 1)
    rising = course[:, 0].astype(np.float64)
    np.testing.assert_allclose(time_to(rising) - time_to(start), times, atol=2e-5)
    # One time constant (15 ms) takes it about 1 - 1/e of the way.
    assert course[14, 0] == pytest.approx(1 - math.exp(-1), abs=0.02)


def test_excitation_is_clipped_into_its_range():
    state = _state(0.3)
    over = vector_field(state, jnp.full(6, 2.0), ZERO)
    full = vector_field(state, jnp.ones(6), ZERO)
    under = vector_field(state, jnp.full(6, -1.0), ZERO)
    none = vector_field(state, jnp.zeros(6), ZERO)
    np.testing.assert_array_equal(over.activation, full.activation)
    np.testing.assert_array_equal(under.activation, none.activation)
    assert PLANT.control_range == (0.0, 1.0) and PLANT.n_controls == 6


def test_isometric_force_at_optimal_length_is_the_maximum_force():
    active, passive = hill(jnp.float32(1.0), jnp.float32(1.0), jnp.float32(0.0))
    np.testing.assert_allclose(active, 1.0, rtol=1e-6)
    assert float(passive) == 0.0
    # Through the plant: choose tendons that put every fibre at its optimal length here.
    musculotendon = np.asarray(jax.jit(PLANT.musculotendon_length)(MID_POSTURE), np.float64)
    tendon = tuple(float(x) for x in musculotendon - np.asarray(PLANT.optimal_fibre_length))
    plant = MuscleArm(tendon_length=tendon)
    force = jax.jit(plant.muscle_force)(_state(1.0))
    np.testing.assert_allclose(force, PLANT.max_isometric_force, rtol=1e-4)


def test_force_velocity_shortening_lowers_and_lengthening_raises_force():
    velocity = jnp.concatenate([jnp.linspace(-0.6, -0.05, 12), jnp.linspace(0.05, 0.6, 12)])
    active, _ = hill(jnp.ones(24), jnp.ones(24), velocity)
    active = np.asarray(active)
    assert np.all(np.diff(active) > 0)
    assert np.all(active[velocity < 0] < 1.0) and np.all(active[velocity > 0] > 1.0)
    assert np.all(active <= 1.5 + 1e-3)


def test_force_length_peaks_at_optimal_length_and_passive_force_starts_at_slack():
    length = jnp.linspace(0.5, 1.6, 23)
    active, passive = hill(jnp.ones(23), length, jnp.zeros(23))
    active, passive, length = np.asarray(active), np.asarray(passive), np.asarray(length)
    assert length[np.argmax(active)] == pytest.approx(1.0)
    assert np.all(passive[length <= 1.4] == 0.0)
    assert np.all(np.diff(passive[length > 1.4]) > 0)


def test_shortening_muscle_pulls_less_than_isometric_in_the_plant():
    biceps = NAMES.index("biceps")
    isometric = muscle_force(_state(1.0))[biceps]
    flexing = muscle_force(_state(1.0, joint_velocity=jnp.array([0.0, 2.0])))[biceps]
    extending = muscle_force(_state(1.0, joint_velocity=jnp.array([0.0, -2.0])))[biceps]
    assert float(flexing) < float(isometric) < float(extending)


# Positive torque flexes (counter-clockwise); 0 = no moment arm about that joint.
EXPECTED_TORQUE_SIGN = {
    "pectoralis": (1, 0),
    "deltoid": (-1, 0),
    "brachioradialis": (0, 1),
    "triceps_lateral": (0, -1),
    "biceps": (1, 1),
    "triceps_long": (-1, -1),
}


@pytest.mark.parametrize("name", NAMES)
def test_each_muscle_turns_the_joints_it_crosses_the_expected_way(name):
    index = NAMES.index(name)
    resting = muscle_torque(_state(PLANT.min_activation))
    active = muscle_torque(_state(jnp.zeros(6).at[index].set(1.0)))
    np.testing.assert_array_equal(np.sign(np.asarray(active - resting)), EXPECTED_TORQUE_SIGN[name])


def test_biceps_alone_flexes_the_elbow():
    excitation = jnp.zeros(6).at[NAMES.index("biceps")].set(1.0)
    state0 = _state(PLANT.min_activation)

    @jax.jit
    def run():
        def body(state, _):
            return step(PLANT, state, excitation, ZERO, dt=0.01, method="euler"), None

        return jax.lax.scan(body, state0, None, length=15)[0]

    assert float(run().joint_angle[1]) > float(MID_POSTURE[1]) + 0.1


def test_moment_arm_is_minus_the_length_gradient_and_torque_does_the_muscle_work():
    angle = jnp.array([0.9, 1.7])
    state = _state(0.6, joint_angle=angle, joint_velocity=jnp.array([1.5, -0.7]))

    @jax.jit
    def quantities(state):
        gradient = jax.jacfwd(PLANT.musculotendon_length)(state.joint_angle)  # (muscle, joint)
        lengthening = jax.jvp(
            PLANT.musculotendon_length, (state.joint_angle,), (state.joint_velocity,)
        )[1]
        joint_power = PLANT.muscle_torque(state) @ state.joint_velocity
        muscle_power = PLANT.muscle_force(state) @ -lengthening
        record = PLANT.record(state)
        return (
            PLANT.moment_arm(state.joint_angle),
            gradient,
            joint_power,
            muscle_power,
            (
                record["fibre_velocity"],
                lengthening,
            ),
        )

    moment_arm, gradient, joint_power, muscle_power, (fibre_velocity, lengthening) = quantities(
        state
    )
    np.testing.assert_allclose(moment_arm, -gradient.T, atol=1e-7)
    # Power balance: joint power equals the muscles' power, force times shortening speed.
    np.testing.assert_allclose(joint_power, muscle_power, rtol=1e-5)
    np.testing.assert_allclose(fibre_velocity, lengthening, atol=1e-7)


def test_record_and_init():
    pos = jnp.array([0.05, 0.42])
    state = jax.jit(PLANT.init)(pos, ZERO)
    np.testing.assert_allclose(jax.jit(PLANT.effector)(state)[0], pos, atol=2e-6)
    np.testing.assert_array_equal(state.activation, jnp.full(6, PLANT.min_activation, jnp.float32))
    record = jax.jit(PLANT.record)(state)
    assert set(record) == {
        "joint_angle",
        "joint_velocity",
        "muscle_activation",
        "muscle_force",
        "fibre_length",
        "fibre_velocity",
    }
    for key in ("muscle_activation", "muscle_force", "fibre_length", "fibre_velocity"):
        assert record[key].shape == (6,)


def test_constrain_keeps_activation_and_joints_in_range():
    wild = MuscleArmState(
        joint_angle=jnp.array([-1.0, 4.0]),
        joint_velocity=jnp.array([-3.0, 3.0]),
        activation=jnp.array([-0.5, 0.0, 0.5, 1.0, 1.5, 0.0005]),
    )
    kept = jax.jit(PLANT.constrain)(wild)
    low, high = np.asarray(PLANT.arm.joint_limits, np.float32).T
    np.testing.assert_array_equal(kept.joint_angle, [low[0], high[1]])
    np.testing.assert_array_equal(kept.joint_velocity, [0.0, 0.0])
    assert float(kept.activation.min()) == pytest.approx(PLANT.min_activation)
    assert float(kept.activation.max()) == 1.0


def test_reachability_is_the_arms():
    arm = TwoLinkArm()
    for pos in [(0.0, 0.45), (0.0, 0.0), (0.0, -0.4), (0.3, 0.3), (-0.5, 0.2)]:
        assert PLANT.is_reachable(pos) == arm.is_reachable(pos)


@pytest.mark.parametrize(
    "settings",
    [{"min_activation": 0.0}, {"max_isometric_force": (1.0,) * 5}, {"slack_fibre_length": 2.0}],
)
def test_bad_settings_are_refused(settings):
    with pytest.raises(ValueError):
        MuscleArm(**settings)
