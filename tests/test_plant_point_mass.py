"""The point-mass plant: the original point mass bit for bit, and a correct damped mass."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from motorflow._plants import PointMass, PointMassState, step

MASS, DAMPING, DT = 1.3, 0.7, 0.05


def _forces(n_steps: int) -> jax.Array:
    return 3.0 * jax.random.normal(jax.random.key(0), (n_steps, 2), dtype=jnp.float32)


def _start() -> tuple[jax.Array, jax.Array]:
    pos0, vel0 = jax.random.normal(jax.random.key(1), (2, 2), dtype=jnp.float32)
    return pos0, vel0


def test_euler_is_bitwise_the_original_point_mass_update_under_jit_and_scan():
    """motorflow's first point mass, whose results must not change: one Euler step
    ``pos + dt * vel``, ``vel + dt * (force - damping * vel) / mass``."""
    plant = PointMass(mass=MASS, damping=DAMPING)
    pos0, vel0 = _start()
    zero = jnp.zeros(2, jnp.float32)

    @jax.jit
    def run_legacy(forces):
        def body(state, force):
            pos, vel = state
            accel = (force - DAMPING * vel) / MASS
            state = (pos + DT * vel, vel + DT * accel)
            return state, state

        return jax.lax.scan(body, (pos0, vel0), forces)[1]

    @jax.jit
    def run_plant(forces):
        def body(state, force):
            state = step(plant, state, force, zero, dt=DT)
            return state, (state.pos, state.vel)

        return jax.lax.scan(body, plant.init(pos0, vel0), forces)[1]

    forces = _forces(200)
    for old, new in zip(run_legacy(forces), run_plant(forces)):
        np.testing.assert_array_equal(np.asarray(new), np.asarray(old))


def test_external_force_adds_to_the_control_force():
    plant = PointMass(mass=MASS, damping=DAMPING)
    state = plant.init(*_start())
    control, push = jnp.array([1.0, -2.0]), jnp.array([0.5, 4.0])
    pushed = step(plant, state, control, push, dt=DT, method="rk4")
    summed = step(plant, state, control + push, jnp.zeros(2), dt=DT, method="rk4")
    np.testing.assert_allclose(pushed.vel, summed.vel, rtol=1e-6)
    np.testing.assert_allclose(pushed.pos, summed.pos, rtol=1e-6)


def test_damping_decays_velocity_exponentially():
    plant = PointMass(mass=2.0, damping=3.0)
    state = PointMassState(pos=jnp.zeros(2), vel=jnp.array([1.0, -0.5]))
    zero = jnp.zeros(2)

    def body(state, _):
        return step(plant, state, zero, zero, dt=0.01, method="rk4"), None

    state, _ = jax.lax.scan(body, state, None, length=100)
    decay = math.exp(-3.0 / 2.0 * 1.0)
    np.testing.assert_allclose(state.vel, np.array([1.0, -0.5]) * decay, rtol=1e-5)
    # Displacement is the integral of the velocity: v0 * m / b * (1 - decay).
    np.testing.assert_allclose(
        state.pos, np.array([1.0, -0.5]) * 2.0 / 3.0 * (1 - decay), rtol=1e-5
    )


def test_interface_facts():
    plant = PointMass()
    assert plant.n_controls == 2 and plant.control_range is None
    pos0, vel0 = jnp.array([0.1, 0.2]), jnp.array([0.3, 0.4])
    state = plant.init(pos0, vel0)
    pos, vel = plant.effector(state)
    np.testing.assert_array_equal(pos, pos0)
    np.testing.assert_array_equal(vel, vel0)
    assert plant.record(state) == {}
    assert plant.is_reachable([1e6, -3.0])
    assert not plant.is_reachable([float("nan"), 0.0])
    assert not plant.is_reachable([0.0, float("inf")])


@pytest.mark.parametrize("settings", [{"mass": 0.0}, {"mass": -1.0}, {"damping": -0.1}])
def test_bad_settings_are_refused(settings):
    with pytest.raises(ValueError):
        PointMass(**settings)
