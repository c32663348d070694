"""Stepping plants: Euler and RK4 orders, sub-steps, constraints, jit/vmap, and the registry."""

from __future__ import annotations

import functools
import itertools
import math
import subprocess
import sys
from collections.abc import Sequence
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import motorflow
from motorflow._plants import PLANTS, AbstractPlant, ArmState, MuscleArm, TwoLinkArm, step

ZERO = jnp.zeros(2)


class _State(eqx.Module):
    pos: jax.Array
    vel: jax.Array
    n_constrained: jax.Array


class _Oscillator(AbstractPlant):
    """A unit-mass spring, x'' = -omega^2 x + control: linear, with a known solution.

    `constrain` only counts its calls, so a test can see when the integrator applies it.
    """

    omega: float = eqx.field(static=True, default=2 * math.pi)

    n_controls: ClassVar[int] = 1
    record_dims: ClassVar[dict[str, str]] = {}
    record_units: ClassVar[dict[str, str]] = {}
    control_units: ClassVar[str] = "N"
    control_range: ClassVar[tuple[float, float] | None] = None
    workspace_note: ClassVar[str] = "the x axis"

    def init(self, effector_pos, effector_vel):
        return _State(pos=effector_pos[:1], vel=effector_vel[:1], n_constrained=jnp.zeros(()))

    def vector_field(self, state, control, external_force):
        accel = -(self.omega**2) * state.pos + control + external_force[:1]
        return _State(pos=state.vel, vel=accel, n_constrained=jnp.zeros(()))

    def constrain(self, state):
        return eqx.tree_at(lambda s: s.n_constrained, state, state.n_constrained + 1)

    def effector(self, state):
        return jnp.concatenate([state.pos, jnp.zeros(1)]), jnp.concatenate(
            [state.vel, jnp.zeros(1)]
        )

    def record(self, state):
        return {}

    def labels(self):
        return {"actuator": ("x",)}

    def is_reachable(self, pos: Sequence[float]) -> bool:
        return float(pos[1]) == 0.0


OSCILLATOR = _Oscillator()


@eqx.filter_jit
def _oscillator_error(method: str, n_steps: int) -> jax.Array:
    """Error after one period from x = 1 at rest: exactly back at x = 1, v = 0."""
    state0 = OSCILLATOR.init(jnp.array([1.0, 0.0]), ZERO)

    def body(state, _):
        return step(OSCILLATOR, state, jnp.zeros(1), ZERO, dt=1.0 / n_steps, method=method), None

    state = jax.lax.scan(body, state0, None, length=n_steps)[0]
    return jnp.hypot(state.pos[0] - 1.0, state.vel[0] / OSCILLATOR.omega)


@pytest.mark.parametrize(
    ("method", "n_steps", "order"), [("rk4", (8, 16, 32), 4), ("euler", (400, 800, 1600), 1)]
)
def test_convergence_order_on_a_linear_system(method, n_steps, order):
    errors = [float(_oscillator_error(method, n)) for n in n_steps]
    ratios = [coarse / fine for coarse, fine in itertools.pairwise(errors)]
    expected = 2.0**order
    for ratio in ratios:
        assert expected * 0.8 < ratio < expected * 1.2, (errors, ratios)


@pytest.mark.parametrize("method", ["euler", "rk4"])
def test_substeps_equal_that_many_shorter_steps(method):
    arm = TwoLinkArm(joint_viscosity=0.1)
    state0 = arm.init(jnp.array([0.1, 0.4]), jnp.array([0.5, -0.3]))
    torque, force = jnp.array([2.0, -1.0]), jnp.array([1.0, 3.0])
    dt, k = 0.05, 3

    @jax.jit
    def substepped_stepped_and_one_long(state0):
        substepped = step(arm, state0, torque, force, dt=dt, method=method, n_substeps=k)
        stepped = state0
        for _ in range(k):
            stepped = step(arm, stepped, torque, force, dt=dt / k, method=method)
        one_long = step(arm, state0, torque, force, dt=dt, method=method)
        return substepped, stepped, one_long

    substepped, stepped, one_long = substepped_stepped_and_one_long(state0)

    def gap(x, y):
        return max(
            float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(x), jax.tree.leaves(y))
        )

    assert gap(substepped, stepped) <= 1e-6
    # Sub-steps do change the result: one long step lands measurably elsewhere.
    assert gap(substepped, one_long) > 10 * max(gap(substepped, stepped), 1e-7)


@pytest.mark.parametrize("n_substeps", [1, 3])
@pytest.mark.parametrize("method", ["euler", "rk4"])
def test_constrain_follows_every_substep(method, n_substeps):
    state = OSCILLATOR.init(jnp.array([1.0, 0.0]), ZERO)
    state = step(
        OSCILLATOR, state, jnp.zeros(1), ZERO, dt=0.1, method=method, n_substeps=n_substeps
    )
    assert int(state.n_constrained) == n_substeps


def test_euler_is_one_explicit_update():
    state = OSCILLATOR.init(jnp.array([1.0, 0.0]), jnp.array([0.5, 0.0]))
    stepped = step(OSCILLATOR, state, jnp.array([2.0]), ZERO, dt=0.1)
    np.testing.assert_array_equal(stepped.pos, state.pos + 0.1 * state.vel)
    np.testing.assert_array_equal(
        stepped.vel, state.vel + 0.1 * (-(OSCILLATOR.omega**2) * state.pos + 2.0)
    )


@pytest.mark.parametrize(
    ("settings", "match"), [({"method": "midpoint"}, "method"), ({"n_substeps": 0}, "n_substeps")]
)
def test_bad_step_settings_are_refused(settings, match):
    state = OSCILLATOR.init(jnp.array([1.0, 0.0]), ZERO)
    with pytest.raises(ValueError, match=match):
        step(OSCILLATOR, state, jnp.zeros(1), ZERO, **{"dt": 0.1, **settings})


@functools.partial(jax.jit, static_argnums=(0, 1))
def _random_inputs(n: int, n_controls: int, key: jax.Array):
    """Reachable hand positions in front of the shoulder, controls in [0, 1], forces."""
    keys = jax.random.split(key, 4)
    radius = jax.random.uniform(keys[0], (n,), minval=0.35, maxval=0.5)
    angle = jax.random.uniform(keys[1], (n,), minval=0.5, maxval=2.0)
    pos = jnp.stack([radius * jnp.cos(angle), radius * jnp.sin(angle)], axis=1)
    controls = jax.random.uniform(keys[2], (n, n_controls), minval=0.0, maxval=1.0)
    return pos, controls, jax.random.normal(keys[3], (n, 2))


@pytest.mark.parametrize("name", sorted(PLANTS))
def test_vmapped_jitted_step_equals_one_at_a_time(name):
    plant = PLANTS[name]().build()
    pos, controls, forces = _random_inputs(4, plant.n_controls, jax.random.key(7))
    assert all(plant.is_reachable(p) for p in np.asarray(pos))

    def advance(pos, control, force):
        state = plant.init(pos, jnp.zeros(2))
        # Euler keeps the compiled graph small; RK4 shares every plant call with it.
        state = step(plant, state, control, force, dt=0.01, method="euler", n_substeps=2)
        return plant.effector(state), plant.record(state)

    @jax.jit
    def batched_and_one_at_a_time(*inputs):
        return jax.vmap(advance)(*inputs), jax.lax.map(lambda x: advance(*x), inputs)

    batched, sequential = batched_and_one_at_a_time(pos, controls, forces)
    assert jax.tree.structure(batched) == jax.tree.structure(sequential)
    for a, b in zip(jax.tree.leaves(batched), jax.tree.leaves(sequential)):
        assert a.shape[0] == len(pos)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(PLANTS))
def test_registry_plants_build_with_defaults_and_hold_no_arrays(name):
    plant = PLANTS[name]().build()
    assert isinstance(plant, AbstractPlant)
    assert jax.tree.leaves(plant) == []  # every setting is static: part of the tree structure
    assert isinstance(plant.n_controls, int) and plant.n_controls > 0
    assert plant.control_range is None or plant.control_range[0] < plant.control_range[1]
    assert isinstance(plant.workspace_note, str) and plant.workspace_note
    # A changed setting changes the tree structure.
    assert jax.tree.structure(plant) != jax.tree.structure(type(plant)(**{_a_setting(plant): 0.5}))


def _a_setting(plant: AbstractPlant) -> str:
    if isinstance(plant, MuscleArm):
        return "min_activation"
    if isinstance(plant, TwoLinkArm):
        return "joint_viscosity"
    return "damping"


def test_registry_names_and_control_sizes():
    assert set(PLANTS) == {"point_mass", "arm", "muscle_arm"}
    plants = {name: config().build() for name, config in PLANTS.items()}
    assert {name: plant.n_controls for name, plant in plants.items()} == {
        "point_mass": 2,
        "arm": 2,
        "muscle_arm": 6,
    }
    assert plants["muscle_arm"].control_range == (0.0, 1.0)
    for name, config in PLANTS.items():
        assert config().kind == name


def test_reachability_needs_no_jax_backend():
    """Config validation runs is_reachable in a process that must not start a JAX backend."""
    # Stub the parent package so that only motorflow._plants (and JAX, NumPy) load: faster,
    # and it shows the plants need nothing else from motorflow.
    script = f"""
import sys, types
package = types.ModuleType("motorflow")
package.__path__ = {list(motorflow.__path__)!r}
sys.modules["motorflow"] = package
import jax._src.xla_bridge as xla_bridge
from motorflow._plants import PLANTS
for config in PLANTS.values():
    plant = config().build()
    plant.is_reachable([0.05, 0.42])
    plant.is_reachable((3.0, -3.0))
assert not xla_bridge.backends_are_initialized(), "a JAX backend was started"
print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_arm_state_steps_as_a_pytree_of_its_own_shape():
    arm = TwoLinkArm()
    state = ArmState(joint_angle=jnp.array([0.5, 1.0]), joint_velocity=jnp.array([0.1, -0.2]))
    stepped = step(arm, state, ZERO, ZERO, dt=0.01, method="rk4")
    assert jax.tree.structure(stepped) == jax.tree.structure(state)
    assert all(
        a.shape == b.shape and a.dtype == b.dtype
        for a, b in zip(jax.tree.leaves(stepped), jax.tree.leaves(state))
    )
