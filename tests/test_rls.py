"""Recursive least squares on the readout, and the target outputs it regresses onto."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import motorflow as mf
from motorflow._plants import step
from motorflow._tasks import Trials
from motorflow._training.rules import minimum_jerk, rls_update, target_outputs
from motorflow._training.rules._targets import corrective_outputs


def test_rls_ends_at_the_ridge_solution_of_every_sample_seen():
    # A linear problem y = x W_true + noise, fed in blocks of unequal size.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(90, 4))
    y = x @ rng.normal(size=(4, 3)) + 0.1 * rng.normal(size=(90, 3))
    w0 = rng.normal(size=(4, 3))
    regularization = 0.5
    weight, information = jnp.asarray(w0), regularization * jnp.eye(4)
    for block in np.split(np.arange(90), [1, 11, 40, 41]):
        weight, information = rls_update(
            weight, information, jnp.asarray(x[block]), jnp.asarray(y[block])
        )
    # argmin |x W - y|^2 + reg |W - w0|^2, and the information matrix its normal matrix.
    normal = x.T @ x + regularization * np.eye(4)
    ridge = np.linalg.solve(normal, x.T @ y + regularization * w0)
    np.testing.assert_allclose(weight, ridge, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(information, normal, rtol=1e-5)


def test_rls_with_forgetting_ends_at_the_exponentially_weighted_least_squares():
    # Haykin, Adaptive Filter Theory: each block's squared error (and the prior's) is
    # weighted by lambda per later block; a drifting W_true makes the old blocks wrong.
    rng = np.random.default_rng(1)
    blocks = [rng.normal(size=(n, 4)) for n in (3, 7, 5, 9)]
    targets = [x @ rng.normal(size=(4, 2)) for x in blocks]
    w0, r0, lam = rng.normal(size=(4, 2)), 0.5 * np.eye(4), 0.7
    weight, information = jnp.asarray(w0), jnp.asarray(r0)
    for x, y in zip(blocks, targets):
        weight, information = rls_update(
            weight, information, jnp.asarray(x), jnp.asarray(y), forgetting=lam
        )
    n = len(blocks)
    normal = lam**n * r0 + sum(lam ** (n - 1 - k) * x.T @ x for k, x in enumerate(blocks))
    moment = lam**n * r0 @ w0 + sum(
        lam ** (n - 1 - k) * x.T @ y for k, (x, y) in enumerate(zip(blocks, targets))
    )
    np.testing.assert_allclose(weight, np.linalg.solve(normal, moment), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(information, normal, rtol=1e-5)


def _model(plant: dict, dt: float = 0.01) -> mf.ClosedLoop:
    config = mf.ModelConfig.from_dict({"dt": dt, "plant": plant})
    return mf.build_model(config, n_task_inputs=2, key=jax.random.key(0))


def _follow(model, trial, controls, n_steps):
    """Positions of the plant driven by `controls`, held over each step (fine RK4)."""
    state = model.plant.init(trial.init_pos, trial.init_vel)
    positions = []
    for t in range(n_steps):
        positions.append(model.plant.effector(state)[0])
        state = step(
            model.plant, state, controls[t], jnp.zeros(2), dt=model.dt, method="rk4", n_substeps=8
        )
    return np.asarray(positions)


@pytest.mark.parametrize(
    "plant, start, goal",
    [
        ({"kind": "point_mass", "mass": 1.5, "damping": 0.4}, [0.0, 0.0], [0.1, -0.05]),
        ({"kind": "arm"}, [0.0, 0.45], [0.1, 0.4]),
    ],
)
def test_target_outputs_drive_the_plant_along_the_minimum_jerk_reach(plant, start, goal):
    model = _model(plant)
    start, goal = jnp.asarray(start), jnp.asarray(goal)
    trial = Trials(init_pos=start, init_vel=jnp.zeros(2), goal_pos=goal, go_step=jnp.asarray(5))
    n_steps, movement_time = 60, 0.4
    controls = target_outputs(model, trial, jnp.arange(n_steps), movement_time)
    positions = _follow(model, trial, controls, n_steps)
    times = (np.arange(n_steps) - 5) * model.dt
    path = np.asarray(jax.vmap(lambda t: minimum_jerk(start, goal, t, movement_time))(times))
    distance = float(jnp.linalg.norm(goal - start))
    # Controls held over each step lag the path by about a step: errors of a few % of
    # the reach, where a wrong sign or mass would miss it by its whole length.
    assert np.max(np.linalg.norm(positions - path, axis=-1)) < 0.05 * distance
    np.testing.assert_allclose(positions[:5], np.broadcast_to(start, (5, 2)), atol=1e-6)
    assert np.linalg.norm(positions[-1] - goal) < 0.02 * distance


def _corrected_reach(model, trial, n_steps, movement_time, *, stiffness, damping, corrective):
    """Drive the plant from its (perturbed) start for `n_steps` with, at each step,
    the corrective target at its current state (or the open-loop target), held over
    the step; returns the positions and velocities."""

    def one_step(state, t):
        pos, vel = model.plant.effector(state)
        steps = t[None]
        if corrective:
            control = corrective_outputs(
                model,
                trial,
                steps,
                movement_time,
                pos[None],
                vel[None],
                stiffness=stiffness,
                damping=damping,
            )[0]
        else:
            control = target_outputs(model, trial, steps, movement_time)[0]
        state = step(model.plant, state, control, jnp.zeros(2), dt=model.dt, method="rk4")
        return state, (pos, vel)

    state = model.plant.init(trial.init_pos, trial.init_vel)
    _, (positions, velocities) = jax.lax.scan(one_step, state, jnp.arange(n_steps))
    return np.asarray(positions), np.asarray(velocities)


def test_corrective_target_equals_the_open_loop_one_on_the_path():
    # On the minimum-jerk path the position and velocity errors are zero, so the
    # corrective target is the path's inverse dynamics (the open-loop target).
    model = _model({"kind": "point_mass", "mass": 1.5, "damping": 0.4})
    start, goal = jnp.asarray([0.0, 0.0]), jnp.asarray([0.3, -0.2])
    trial = Trials(init_pos=start, init_vel=jnp.zeros(2), goal_pos=goal, go_step=jnp.asarray(3))
    steps, movement_time = jnp.arange(40), 0.3
    times = (steps - 3) * model.dt
    path = jax.vmap(lambda t: minimum_jerk(start, goal, t, movement_time))(times)
    velocity = jax.vmap(
        lambda t: jax.jvp(lambda s: minimum_jerk(start, goal, s, movement_time), (t,), (1.0,))[1]
    )(times)
    corrective = corrective_outputs(
        model, trial, steps, movement_time, path, velocity, stiffness=100.0, damping=20.0
    )
    np.testing.assert_allclose(
        corrective, target_outputs(model, trial, steps, movement_time), atol=1e-4
    )


@pytest.mark.parametrize(
    "plant, start, goal",
    [
        ({"kind": "point_mass", "mass": 1.0, "damping": 0.0}, [0.0, 0.0], [0.3, 0.1]),
        ({"kind": "arm"}, [0.0, 0.45], [0.1, 0.4]),
    ],
)
def test_corrective_target_brings_a_perturbed_effector_to_rest_on_the_goal(plant, start, goal):
    """Started moving off the path, the plant driven by the corrective target (at its
    current state every step) ends at rest on the goal; driven by the open-loop target
    it keeps the perturbation's drift. Broken on purpose (the corrective target's
    stiffness and damping terms dropped, i.e. the open-loop target) the first assertion
    fails: the effector ends 0.1 m or more off the goal."""
    model = _model(plant)
    start, goal = jnp.asarray(start), jnp.asarray(goal)
    trial = Trials(
        init_pos=start, init_vel=jnp.asarray([0.1, -0.1]), goal_pos=goal, go_step=jnp.asarray(0)
    )
    settings = {"stiffness": 100.0, "damping": 20.0}
    n_steps, movement_time = 150, 0.5
    positions, velocities = _corrected_reach(
        model, trial, n_steps, movement_time, corrective=True, **settings
    )
    assert np.linalg.norm(positions[-1] - goal) < 1e-3
    assert np.linalg.norm(velocities[-1]) < 1e-2
    positions, _ = _corrected_reach(
        model, trial, n_steps, movement_time, corrective=False, **settings
    )
    assert np.linalg.norm(positions[-1] - goal) > 0.1


def test_rls_with_the_corrective_target_fits_the_correction_at_the_visited_states():
    """One update of a fresh readout on rollouts from perturbed starts is the ridge
    solution toward the corrective target at the states the effector visited (not
    the open-loop one). Broken on purpose (the rule regressing onto the open-loop
    target), the comparison fails."""
    from motorflow._training.rules import RLS, Batch

    config = mf.ModelConfig.from_dict(
        {
            "dt": 0.05,
            "plant": {"kind": "point_mass"},
            "network": {"cell": {"kind": "reservoir", "tau": 0.05}, "hidden_size": 20},
        }
    )
    model = mf.build_model(config, n_task_inputs=2, key=jax.random.key(0))
    keys = jax.random.split(jax.random.key(1), 3)
    n_trials, n_steps = 3, 12
    trials = Trials(
        init_pos=jax.random.uniform(keys[0], (n_trials, 2), minval=-0.2, maxval=0.2),
        init_vel=jax.random.normal(keys[1], (n_trials, 2)),
        goal_pos=jax.random.uniform(keys[2], (n_trials, 2), minval=-0.5, maxval=0.5),
    )
    task_input = jnp.broadcast_to(trials.goal_pos[:, None], (n_trials, n_steps, 2))
    rollouts = jax.vmap(lambda p, v, u: model.rollout(p, v, u, key=jax.random.key(2)))(
        trials.init_pos, trials.init_vel, task_input
    )
    rule = RLS(target="corrective", stiffness=9.0, damping=6.0, regularization=0.5)
    batch = Batch(loss=None, model=model, task=None, trials=trials)
    updated, _ = rule.apply(batch, model, rule.init(model, key=None), rollouts)

    targets = jax.vmap(
        lambda trial, pos, vel: corrective_outputs(
            model, trial, jnp.arange(n_steps), 0.5, pos, vel, stiffness=9.0, damping=6.0
        )
    )(trials, rollouts.pos, rollouts.vel)
    hidden = np.asarray(rollouts.hidden).reshape(-1, 20)
    features = np.concatenate([hidden, np.ones((len(hidden), 1))], axis=1)
    start = np.concatenate([model.network.readout.weight.T, model.network.readout.bias[None]])
    normal = features.T @ features + 0.5 * np.eye(21)
    wanted = np.asarray(targets).reshape(-1, 2)
    ridge = np.linalg.solve(normal, features.T @ wanted + 0.5 * start)
    readout = updated.network.readout
    got = np.concatenate([readout.weight.T, readout.bias[None]])
    np.testing.assert_allclose(got, ridge, rtol=2e-3, atol=2e-3)
