"""Perturbations: their per-step effects, their draws, and what they do in the closed loop."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import raises_config_error, tiny_model_config, tiny_task, tiny_train_config

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow._perturbations import endpoint_force
from motorflow._plants import step

DT, N_STEPS = 0.01, 60


def geometry(start=(0.0, 0.0), goal=(0.0, 0.1)):
    return mf.TrialGeometry(
        start=jnp.asarray(start, jnp.float32),
        goal=jnp.asarray(goal, jnp.float32),
        n_steps=N_STEPS,
        dt=DT,
    )


def effects_of(perturbation, trial=None, key=0):
    params = mf.draw_params(perturbation, (), key=jax.random.key(key))
    return perturbation.effects(params, trial or geometry())


def nonzero_steps(values):
    values = np.asarray(values).reshape(N_STEPS, -1)
    return np.flatnonzero(np.any(values != 0, axis=1)).tolist()


@pytest.mark.parametrize(
    ("perturbation", "field", "steps"),
    [
        (mf.ForcePulse(start=0.3, duration=0.1), "force", range(30, 40)),
        (mf.ForcePulse(start=0.07, duration=0.02), "force", range(7, 9)),
        (mf.FeedbackOffset(start=0.2, duration=0.25), "feedback", range(20, 45)),
        (mf.TargetJump(time=0.33), "goal", range(33, N_STEPS)),
        (mf.ConstantField(strength=2.0), "force", range(N_STEPS)),
        (mf.CurlField(strength=5.0), "viscosity", range(N_STEPS)),
        (mf.ViscousField(scale=0.5), "viscosity", range(N_STEPS)),
    ],
)
def test_each_perturbation_acts_exactly_in_its_time_window(perturbation, field, steps):
    effects = effects_of(perturbation)
    assert nonzero_steps(getattr(effects, field)) == list(steps)
    for other in ("force", "viscosity", "feedback", "goal"):
        if other != field:
            assert nonzero_steps(getattr(effects, other)) == []


def test_reach_frame_angles_turn_with_the_movement_and_world_ones_do_not():
    # A reach along +y: 90 degrees in the reach frame is to its left, i.e. -x.
    pulse = mf.ForcePulse(amplitude=3.0, angle=90.0, frame="reach", start=0.0, duration=0.1)
    np.testing.assert_allclose(effects_of(pulse).force[0], [-3.0, 0.0], atol=1e-6)
    world = mf.ForcePulse(amplitude=3.0, angle=90.0, frame="world", start=0.0, duration=0.1)
    np.testing.assert_allclose(effects_of(world).force[0], [0.0, 3.0], atol=1e-6)
    jump = mf.TargetJump(time=0.0, distance=0.05, angle=-90.0)
    along_x = geometry(goal=(0.2, 0.0))
    np.testing.assert_allclose(effects_of(jump, along_x).goal[-1], [0.0, -0.05], atol=1e-7)


@pytest.mark.parametrize("direction", ["cw", "ccw"])
def test_the_curl_force_is_perpendicular_to_velocity_and_does_no_work(direction):
    curl = mf.CurlField(strength=13.0, direction=direction)
    effects = effects_of(curl)
    velocities = jax.random.normal(jax.random.key(3), (100, 2))
    forces = jax.vmap(lambda v: endpoint_force(effects.force[0], effects.viscosity[0], v))(
        velocities
    )
    np.testing.assert_allclose(jnp.sum(forces * velocities, axis=1), 0.0, atol=1e-5)
    np.testing.assert_allclose(
        jnp.linalg.norm(forces, axis=1), 13.0 * jnp.linalg.norm(velocities, axis=1), rtol=1e-5
    )
    # Counter-clockwise turns +x towards +y; clockwise towards -y.
    sign = 1.0 if direction == "ccw" else -1.0
    along_x = endpoint_force(effects.force[0], effects.viscosity[0], jnp.array([1.0, 0.0]))
    np.testing.assert_allclose(along_x, [0.0, 13.0 * sign])


def test_a_free_mass_in_a_curl_field_keeps_its_speed_and_turns():
    """No work: kinetic energy is conserved while the field bends the path (RK4, fine steps)."""
    mass = mf.PointMass(mass=1.5, damping=0.0)
    gain = 4.0  # counter-clockwise

    def force(pos, vel):
        return endpoint_force(jnp.zeros(2), gain * jnp.array([[0.0, -1.0], [1.0, 0.0]]), vel)

    state = mass.init(jnp.zeros(2), jnp.array([0.4, 0.0]))
    for _ in range(400):
        state = step(mass, state, jnp.zeros(2), force, dt=0.005, method="rk4")
    np.testing.assert_allclose(jnp.linalg.norm(state.vel), 0.4, rtol=1e-6)
    # Uniform circular motion at angular rate gain / mass for 2 s.
    turned = np.arctan2(state.vel[1], state.vel[0])
    np.testing.assert_allclose(turned, np.angle(np.exp(1j * gain / 1.5 * 2.0)), atol=1e-4)


def test_the_viscous_field_pushes_by_its_matrix_times_velocity():
    """Shadmehr & Mussa-Ivaldi (1994)'s field, scaled per trial: F = scale * B v."""
    field = mf.ViscousField(scale=[0.5, 2.0])
    assert field.matrix == ((-10.1, -11.2), (-11.2, 11.1))
    params = mf.draw_params(field, (), key=jax.random.key(4))
    effects = field.effects(params, geometry())
    velocity = jnp.array([0.1, 0.3])
    expected = float(params["scale"]) * np.array(
        [-10.1 * 0.1 - 11.2 * 0.3, -11.2 * 0.1 + 11.1 * 0.3]
    )
    np.testing.assert_allclose(
        endpoint_force(effects.force[5], effects.viscosity[5], velocity), expected, rtol=1e-5
    )
    # Being symmetric, the field does work: along its eigenvector of eigenvalue +15.9
    # it assists the motion, along the other (-14.9) it resists.
    values, vectors = np.linalg.eigh(np.asarray(field.matrix))
    np.testing.assert_allclose(values, [-14.93, 15.93], atol=0.01)
    unit = mf.ViscousField()
    effects = unit.effects(mf.draw_params(unit, (), key=jax.random.key(0)), geometry())
    for value, vector in zip(values, vectors.T):
        force = endpoint_force(
            effects.force[0], effects.viscosity[0], jnp.asarray(vector, jnp.float32)
        )
        np.testing.assert_allclose(force, value * vector, atol=1e-5)


def test_a_curl_field_is_the_viscous_field_of_a_rotation_matrix():
    velocity = jax.random.normal(jax.random.key(5), (2,))
    for direction, sign in (("ccw", 1.0), ("cw", -1.0)):
        curl = effects_of(mf.CurlField(strength=7.0, direction=direction))
        matrix = ((0.0, -7.0 * sign), (7.0 * sign, 0.0))
        viscous = effects_of(mf.ViscousField(matrix=matrix))
        np.testing.assert_array_equal(curl.viscosity, viscous.viscosity)
        # The force turns the velocity a quarter turn: left for ccw, right for cw.
        force = endpoint_force(jnp.zeros(2), curl.viscosity[0], velocity)
        expected = 7.0 * sign * jnp.array([-velocity[1], velocity[0]])
        np.testing.assert_allclose(force, expected, rtol=1e-5)


def silent_model(plant="point_mass"):
    """A model whose network outputs zero control: the plant moves only by what is done to it."""
    config = mf.ModelConfig.from_dict({"network": {"hidden_size": 8}, "plant": {"kind": plant}})
    model = mf.build_model(config, n_task_inputs=2, key=jax.random.key(0))
    readout = model.network.readout
    return eqx.tree_at(
        lambda m: (m.network.readout.weight, m.network.readout.bias),
        model,
        (jnp.zeros_like(readout.weight), jnp.zeros_like(readout.bias)),
    )


@pytest.mark.parametrize(("direction", "sign"), [("ccw", 1.0), ("cw", -1.0)])
def test_the_curl_field_pushes_a_moving_effector_to_its_side_in_the_loop(direction, sign):
    model = silent_model()
    task = mf.Task(mf.TaskConfig.from_dict({"n_steps": 20}))
    trial = mf.Trials(
        init_pos=jnp.zeros(2), init_vel=jnp.array([1.0, 0.0]), goal_pos=jnp.array([0.5, 0.0])
    )
    curl = mf.CurlField(strength=5.0, direction=direction)
    perturbed = trial.perturbed_by((curl,), (mf.draw_params(curl, (), key=jax.random.key(0)),))
    plain, _ = mf.run_trial(model, task, trial, key=jax.random.key(1))
    curled, _ = mf.run_trial(model, task, perturbed, key=jax.random.key(1))
    np.testing.assert_allclose(plain.pos[:, 1], 0.0, atol=1e-7)
    assert np.all(sign * np.asarray(curled.pos[2:, 1]) > 0)
    np.testing.assert_allclose(curled.pos[1], plain.pos[1])  # the field acts from step 0 on


def test_feedback_offsets_reach_the_network_after_the_delay_and_nowhere_else():
    delay = 2
    config = tiny_model_config()
    config = mf.ModelConfig.from_dict({**config.to_dict(), "feedback": {"delay": delay}})
    model = mf.build_model(config, n_task_inputs=2, key=jax.random.key(0))
    task = mf.Task(mf.TaskConfig.from_dict({"n_steps": 20}))
    trial = task.sample(1, key=jax.random.key(4))
    trial = jax.tree.map(lambda x: x[0], trial)
    offset = mf.FeedbackOffset(distance=0.1, angle=0.0, frame="world", start=0.25, duration=0.2)
    params = (mf.draw_params(offset, (), key=jax.random.key(0)),)
    # dt 0.05: the offset is sensed at steps 5..8 and seen delay steps later.
    plain, _ = mf.run_trial(model, task, trial, key=jax.random.key(1))
    shifted, _ = mf.run_trial(
        model, task, trial.perturbed_by((offset,), params), key=jax.random.key(1)
    )
    first = 5 + delay
    np.testing.assert_array_equal(shifted.feedback[:first], plain.feedback[:first])
    np.testing.assert_allclose(
        shifted.feedback[first, :2] - plain.feedback[first, :2], [0.1, 0.0], atol=1e-6
    )
    np.testing.assert_array_equal(shifted.pos[: first + 1], plain.pos[: first + 1])


def test_a_target_jump_moves_the_goal_the_network_sees_and_the_loss_uses():
    model = silent_model()
    task = mf.Task(mf.TaskConfig.from_dict({"n_steps": 10}))
    trial = mf.Trials(init_pos=jnp.zeros(2), init_vel=jnp.zeros(2), goal_pos=jnp.array([0.2, 0.0]))
    jump = mf.TargetJump(time=0.2, distance=0.1, angle=90.0)
    perturbed = trial.perturbed_by((jump,), (mf.draw_params(jump, (), key=jax.random.key(0)),))
    _, targets = mf.run_trial(model, task, perturbed, key=jax.random.key(1))
    goal = targets.goal
    np.testing.assert_allclose(goal[:4], np.broadcast_to([0.2, 0.0], (4, 2)))
    np.testing.assert_allclose(goal[4:], np.broadcast_to([0.2, 0.1], (6, 2)), atol=1e-7)
    np.testing.assert_array_equal(task.inputs(perturbed, goal), goal)


def test_draws_stay_in_their_ranges_follow_the_probability_and_repeat_per_key():
    pulse = mf.ForcePulse.from_dict(
        {"probability": 0.3, "amplitude": [1.0, 2.0], "angle": [0, 360], "start": 0.1}
    )
    params = mf.draw_params(pulse, (4000,), key=jax.random.key(7))
    assert set(params) == {"active", "amplitude", "angle", "start", "duration"}
    assert 1.0 <= float(params["amplitude"].min()) and float(params["amplitude"].max()) <= 2.0
    assert float(params["angle"].std()) > 90  # spread over the circle, not a constant
    np.testing.assert_array_equal(params["start"], 0.1 * np.ones(4000, np.float32))
    assert 0.27 < float(params["active"].mean()) < 0.33
    again = mf.draw_params(pulse, (4000,), key=jax.random.key(7))
    other = mf.draw_params(pulse, (4000,), key=jax.random.key(8))
    np.testing.assert_array_equal(params["angle"], again["angle"])
    assert not np.array_equal(params["angle"], other["angle"])


def test_an_inactive_trial_is_not_perturbed():
    pulse = mf.ForcePulse(amplitude=5.0, start=0.0, duration=0.2)
    params = {**mf.draw_params(pulse, (), key=jax.random.key(0)), "active": jnp.float32(0)}
    assert nonzero_steps(pulse.effects(params, geometry()).force) == []


def test_training_trials_carry_the_tasks_perturbations_and_train():
    config = mf.TaskConfig.from_dict(
        {
            "n_steps": 12,
            "eval": {"n_directions": 4},
            "perturbations": [
                {"kind": "curl", "strength": [0.0, 10.0], "probability": 0.5},
                {"kind": "force_pulse", "angle": [0, 360], "start": [0.0, 0.3]},
            ],
        }
    )
    task = mf.Task(config)
    trials = task.training_trials(key=jax.random.key(0), n_replicates=2, n_batches=3, batch_size=5)
    assert [p.kind for p in trials.perturbations] == ["curl", "force_pulse"]
    assert trials.params[0]["strength"].shape == (2, 3, 5)
    model = tiny_model_config()
    ensemble = mf.make_ensemble(model, n_replicates=2, n_task_inputs=2, key=jax.random.key(1))
    train = tiny_train_config(
        n_replicates=2,
        n_batches=3,
        batch_size=5,
        validation={"every": 3},
        log={"every": 3},
        checkpoint={"every": 3},
    )
    result = mf.train(ensemble, trials, task, train, key=jax.random.key(2), progress=False)
    assert np.isfinite(result.history["loss"]["total"]).all()
    # The same trials without their perturbations train to different weights.
    bare = trials.perturbed_by((), ())
    unperturbed = mf.train(ensemble, bare, task, train, key=jax.random.key(2), progress=False)
    assert not np.array_equal(
        result.ensemble.network.readout.weight, unperturbed.ensemble.network.readout.weight
    )


def test_conditions_share_their_noise_and_differ_only_by_their_perturbations():
    config, task = tiny_model_config(), tiny_task()
    ensemble = mf.make_ensemble(config, n_replicates=2, n_task_inputs=2, key=jax.random.key(0))
    conditions = {
        "unperturbed": (),
        "curl_cw": (mf.CurlField(strength=10.0, direction="cw"),),
        "curl_ccw": (mf.CurlField(strength=10.0, direction="ccw"),),
    }
    states = mf.evaluate(ensemble, task, config, key=jax.random.key(1), conditions=conditions)
    alone = mf.evaluate(ensemble, task, config, key=jax.random.key(1))
    assert list(states.condition.values) == list(conditions)
    np.testing.assert_array_equal(
        states.pos.sel(condition="unperturbed"), alone.pos.sel(condition="unperturbed")
    )
    cw, ccw = states.pos.sel(condition="curl_cw"), states.pos.sel(condition="curl_ccw")
    assert not np.allclose(cw, ccw)
    np.testing.assert_array_equal(cw.isel(time=slice(0, 2)), ccw.isel(time=slice(0, 2)))
    assert states.perturbation0_strength.dims == ("condition", "trial")
    np.testing.assert_array_equal(states.perturbation0_active.values[:, 0], [0, 1, 0])
    assert states.perturbation1_active.attrs == {
        "condition": "curl_ccw",
        "kind": "curl",
        "units": "1",
    }
    assert states.perturbation0_strength.attrs["units"] == "N*s/m"


def test_trial_stores_keep_the_perturbations_and_their_draws(tmp_path):
    config = mf.TaskConfig.from_dict(
        {"n_steps": 12, "perturbations": [{"kind": "target_jump", "angle": [-90, 90]}]}
    )
    task = mf.Task(config)
    trials = task.training_trials(key=jax.random.key(0), n_replicates=2, n_batches=3, batch_size=4)
    mfp.write_trials(trials, tmp_path / "train.zarr")
    back = mfp.read_trials(tmp_path / "train.zarr")
    assert back.perturbations == trials.perturbations
    for name, values in trials.params[0].items():
        np.testing.assert_array_equal(back.params[0][name], values)
    validation = task.validation_set(key=jax.random.key(1))
    mfp.write_dataset(mfp.center_out_dataset(validation), tmp_path / "eval.zarr")
    again = mfp.read_center_out(tmp_path / "eval.zarr")
    assert again.trials.perturbations == config.perturbations
    np.testing.assert_array_equal(
        again.trials.params[0]["angle"], validation.trials.params[0]["angle"]
    )


@pytest.mark.parametrize(
    ("block", "path", "words"),
    [
        ({"kind": "curl", "strength": -1}, "perturbations[0].strength", ">= 0"),
        ({"kind": "force_pulse", "start": [0.3, 0.1]}, "perturbations[0].start", "low <= high"),
        ({"kind": "curl", "direction": "left"}, "perturbations[0].direction", "'cw' or 'ccw'"),
        ({"kind": "wind"}, "perturbations[0].kind", "unknown kind"),
        ({"kind": "curl", "probability": 1.5}, "perturbations[0].probability", "<= 1"),
        ({"kind": "target_jump", "amplitude": 1}, "perturbations[0].amplitude", "unknown key"),
        (
            {"kind": "viscous_field", "matrix": [[1.0, 2.0]]},
            "perturbations[0].matrix",
            "2 or more items",
        ),
        (
            {"kind": "viscous_field", "matrix": [[1, "a"], [0, 0]]},
            "perturbations[0].matrix[0][1]",
            "number",
        ),
    ],
)
def test_bad_perturbation_settings_name_their_key(block, path, words):
    with raises_config_error(path, words):
        mf.TaskConfig.from_dict({"perturbations": [block]})


def test_a_perturbation_setting_is_part_of_the_run_identity():
    """Checkpoints of training under one field are never resumed under another."""
    task = tiny_task()
    ensemble = mf.make_ensemble(
        tiny_model_config(), n_replicates=2, n_task_inputs=2, key=jax.random.key(0)
    )
    trials = task.training_trials(key=jax.random.key(1), n_replicates=2, n_batches=2, batch_size=4)
    config = tiny_train_config(n_replicates=2, n_batches=2, batch_size=4)

    def identity(direction):
        curl = mf.CurlField(direction=direction)
        params = (mf.draw_params(curl, (2, 2, 4), key=jax.random.key(2)),)
        perturbed = trials.perturbed_by((curl,), params)
        return mfp.run_id(
            mfp.run_fingerprint(ensemble, perturbed, task, config, key=jax.random.key(3))
        )

    assert identity("cw") != identity("ccw")
    assert identity("cw") == identity("cw")
