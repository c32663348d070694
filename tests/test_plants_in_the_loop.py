"""Every registered plant trains, evaluates and is stored the same way as the point mass."""

from __future__ import annotations

import equinox as eqx
import jax
import numpy as np
import pytest
from conftest import tiny_train_config

import motorflow as mf

# A workspace in front of the arm's shoulder (MotorNet's arm26 reaches about 0.64 m).
ARM_TASK = {
    "n_steps": 12,
    "workspace": [[-0.15, 0.3], [0.15, 0.55]],
    "eval": {"center": [0.0, 0.42], "n_directions": 4, "distances": [0.1]},
}
PLANT_SETTINGS = {
    "point_mass": {"kind": "point_mass", "damping": 0.5},
    "arm": {"kind": "arm", "method": "rk4", "joint_viscosity": 0.1},
    "muscle_arm": {"kind": "muscle_arm", "n_substeps": 2},
}


def setup(kind: str, n_replicates: int = 2):
    model = mf.ModelConfig.from_dict(
        {
            "plant": PLANT_SETTINGS[kind],
            "network": {"hidden_size": 8, "hidden_noise_std": 0.01},
            "feedback": {"noise_std": 0.01},
        }
    )
    task_config = mf.TaskConfig.from_dict(ARM_TASK)
    mf.check_model_fits_task(model, task_config)
    task = mf.Task(task_config)
    ensemble = mf.make_ensemble(
        model, n_replicates=n_replicates, n_task_inputs=task.n_inputs, key=jax.random.key(0)
    )
    return model, task, ensemble


def test_every_registered_plant_is_tested():
    assert set(PLANT_SETTINGS) == set(mf.PLANTS)


# The unit each plant's evaluation store must give its variables, as the plants' modules
# state them: the point mass is pushed by a force (N); the arms follow MotorNet's arm26
# (joint torques in N*m, muscle excitations and activations dimensionless, muscle forces
# in N, fibre lengths in m).
EXPECTED_UNITS = {
    "point_mass": {"pos": "m", "vel": "m/s", "control": "N"},
    "arm": {"pos": "m", "control": "N*m", "joint_angle": "rad", "joint_velocity": "rad/s"},
    "muscle_arm": {
        "pos": "m",
        "control": "1",
        "joint_angle": "rad",
        "muscle_activation": "1",
        "muscle_force": "N",
        "fibre_length": "m",
        "fibre_velocity": "m/s",
    },
}


@pytest.mark.parametrize("kind", sorted(PLANT_SETTINGS))
def test_every_state_variable_names_its_unit(kind):
    model, task, ensemble = setup(kind, n_replicates=1)
    conditions = {"pushed": [mf.PERTURBATIONS["force_pulse"]()]}
    states = mf.evaluate(ensemble, task, model, key=jax.random.key(1), conditions=conditions)
    assert {str(n): v.attrs.get("units") for n, v in states.data_vars.items()}.items() >= (
        EXPECTED_UNITS[kind].items()
    )
    missing = [str(n) for n, v in states.data_vars.items() if not v.attrs.get("units")]
    assert missing == []
    assert set(ensemble.plant.record_units) == set(ensemble.plant.record_dims)


@pytest.mark.parametrize("kind", sorted(PLANT_SETTINGS))
def test_evaluation_stores_the_plants_variables_with_labelled_dims(kind):
    model, task, ensemble = setup(kind)
    plant = ensemble.plant
    states = mf.evaluate(ensemble, task, model, key=jax.random.key(1))
    assert states.sizes["actuator"] == plant.n_controls
    assert tuple(states.actuator.values) == plant.labels()["actuator"]
    for name, dim in plant.record_dims.items():
        assert states[name].dims == ("replicate", "condition", "trial", "time", dim)
        assert tuple(states[dim].values) == plant.labels()[dim]
    for name in states.data_vars:
        assert np.isfinite(states[name].values).all(), name
    # Every reach starts at rest at the center, whatever the plant's own coordinates.
    np.testing.assert_allclose(
        states.pos.isel(time=0), np.broadcast_to([0.0, 0.42], (2, 1, 4, 2)), atol=1e-5
    )
    np.testing.assert_allclose(states.vel.isel(time=0), 0.0, atol=1e-5)
    if plant.control_range is not None:
        low, high = plant.control_range
        assert ((states.control >= low) & (states.control <= high)).all()


def test_the_arm_stays_inside_its_joint_limits():
    model, task, ensemble = setup("arm")
    states = mf.evaluate(ensemble, task, model, key=jax.random.key(1))
    limits = np.radians(model.plant.joint_limits_deg)
    angles = states.joint_angle.transpose(..., "joint").values
    assert (angles >= limits[:, 0] - 1e-6).all() and (angles <= limits[:, 1] + 1e-6).all()


@pytest.mark.parametrize("kind", ["arm", "muscle_arm"])
def test_a_short_run_teaches_an_arm_to_reach(kind):
    _, task, ensemble = setup(kind, n_replicates=2)
    config = tiny_train_config(
        n_replicates=2,
        n_batches=60,
        validation={"every": 20},
        log={"every": 20},
        checkpoint={"every": 20},
        optimizer={"learning_rate": 0.05},
    )
    trials_key, train_key = jax.random.split(jax.random.key(2))
    trials = task.training_trials(key=trials_key, n_replicates=2, n_batches=60, batch_size=8)
    result = mf.train(ensemble, trials, task, config, key=train_key, progress=False)
    position = result.history["loss"]["position"]
    assert np.isfinite(result.history["loss"]["total"]).all()
    assert (position[-10:].mean(axis=0) < 0.8 * position[:5].mean(axis=0)).all()


@pytest.mark.parametrize("kind", ["arm", "muscle_arm"])
def test_the_arm_figure_draws_the_hand_where_the_plant_put_it(kind):
    """The stick figure's kinematics (from the joint angles) match the evaluated hand."""
    model, task, ensemble = setup(kind)
    states = mf.evaluate(ensemble, task, model, key=jax.random.key(1))
    fig = mf.plot_arm_postures(states, replicate=1, n_postures=3)
    axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    # Small multiples: a panel per time point, each with one arm per reach (beneath
    # them every hand path), so that postures of different times never pile up.
    n_trials, times = states.sizes["trial"], states.time.values
    steps = np.linspace(0, len(times) - 1, 3).round().astype(int)
    assert [ax.get_title() for ax in axes] == [f"t = {times[s]:.2g} s" for s in steps]
    for ax in axes:
        assert len(ax.lines) == 2 * n_trials
    hand_path = axes[0].lines[0].get_xydata()  # the first trial's hand path
    expected = states.pos.sel(replicate=1).isel(condition=0, trial=0).values
    np.testing.assert_allclose(hand_path, expected, atol=1e-5)
    # each arm: shoulder, elbow, hand, the last at the hand at its panel's time
    posture = axes[-1].lines[-1].get_xydata()
    np.testing.assert_allclose(posture[0], model.plant.shoulder_pos, atol=1e-6)
    last = states.pos.sel(replicate=1).isel(condition=0, trial=-1, time=-1).values
    np.testing.assert_allclose(posture[-1], last, atol=1e-5)
    first = axes[0].lines[-1].get_xydata()
    start = states.pos.sel(replicate=1).isel(condition=0, trial=-1, time=0).values
    np.testing.assert_allclose(first[-1], start, atol=1e-5)
    assert [t.get_text() for t in fig.legends[0].get_texts()][:2] == [
        "arm: shoulder–elbow–hand",
        "hand path",
    ]


@pytest.mark.parametrize("kind", sorted(PLANT_SETTINGS))
def test_no_parameter_is_weakly_typed(kind):
    """A weakly typed array comes back strongly typed from the first update, and the
    training chunk would compile a second time."""
    _, _, ensemble = setup(kind)
    arrays = jax.tree.leaves(eqx.filter(ensemble, eqx.is_array))
    assert arrays and not any(x.weak_type for x in arrays)
