"""The task kinds: center-out, delayed reach and posture, from draws to a trained network."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import tiny_train_config

import motorflow as mf
import motorflow.pipeline as mfp

EVAL = {"center": [0.1, 0.2], "n_directions": 4, "distances": [0.2, 0.3]}


def task(kind: str, **config) -> mf.Task:
    return mf.Task(mf.TaskConfig.from_dict({"kind": kind, "eval": EVAL, **config}))


def test_every_kind_is_registered_and_picked_by_from_dict():
    assert set(mf.TASKS) == {"reach", "center_out", "delayed_reach", "posture"}
    for kind, cls in mf.TASKS.items():
        assert type(mf.TaskConfig.from_dict({"kind": kind})) is cls
    assert type(mf.TaskConfig.from_dict({"n_steps": 10})) is mf.ReachConfig


def test_a_delayed_reach_goes_where_the_reach_of_the_same_key_goes():
    key = jax.random.key(3)
    reach, delayed = task("reach").sample(50, key=key), task("delayed_reach").sample(50, key=key)
    for name in ("init_pos", "init_vel", "goal_pos"):
        np.testing.assert_array_equal(getattr(reach, name), getattr(delayed, name))
    assert reach.go_step is None and delayed.go_step.dtype == jnp.int32


def test_go_steps_cover_their_inclusive_range():
    trials = task("delayed_reach", go_step=[5, 8]).sample(400, key=jax.random.key(0))
    assert set(np.asarray(trials.go_step).tolist()) == {5, 6, 7, 8}


def test_the_go_cue_is_an_input_from_its_step_on_and_the_hold_ends_there():
    t = task("delayed_reach", n_steps=12, go_step=[3, 9])
    trials = t.sample(6, key=jax.random.key(1))
    goal = jnp.broadcast_to(trials.goal_pos[:, None], (6, 12, 2))
    inputs = jax.vmap(t.inputs)(trials, goal)
    hold = jax.vmap(t.hold)(trials)
    assert inputs.shape == (6, 12, 3) and t.n_inputs == 3
    np.testing.assert_array_equal(inputs[..., :2], goal)
    for trial in range(6):
        go = int(trials.go_step[trial])
        np.testing.assert_array_equal(inputs[trial, :, 2], [0.0] * go + [1.0] * (12 - go))
        np.testing.assert_array_equal(hold[trial], [True] * go + [False] * (12 - go))


@pytest.mark.parametrize(("setting", "expected"), [(None, 6), (2, 2)])
def test_evaluation_reaches_share_one_go_step(setting, expected):
    center_out = task("delayed_reach", go_step=[4, 9], eval_go_step=setting).eval_trials()
    np.testing.assert_array_equal(center_out.trials.go_step, [expected] * 8)
    reach = task("reach").eval_trials()
    np.testing.assert_array_equal(center_out.trials.goal_pos, reach.trials.goal_pos)


def test_center_out_training_reaches_leave_the_center_to_an_evaluated_distance():
    trials = task("center_out").sample(500, key=jax.random.key(2))
    center = np.asarray([0.1, 0.2], np.float32)
    np.testing.assert_array_equal(trials.init_pos, np.broadcast_to(center, (500, 2)))
    offset = np.asarray(trials.goal_pos) - [0.1, 0.2]
    distance = np.hypot(*offset.T)
    assert set(np.round(distance, 5)) == {0.2, 0.3}
    angle = np.arctan2(offset[:, 1], offset[:, 0])
    # uniform directions: every quarter of the circle gets about a quarter of the reaches
    counts = np.histogram(angle, bins=4, range=(-np.pi, np.pi))[0]
    assert counts.min() > 90


def test_posture_trials_hold_where_they_start_at_every_step():
    t = task("posture", workspace=[[-0.5, -0.5], [0.5, 0.5]], n_steps=9)
    trials = t.sample(300, key=jax.random.key(4))
    np.testing.assert_array_equal(trials.init_pos, trials.goal_pos)
    assert np.asarray(trials.init_pos).min() >= -0.5 and np.asarray(trials.init_pos).max() <= 0.5
    np.testing.assert_array_equal(t.hold(jax.tree.map(lambda x: x[0], trials)), [True] * 9)
    evaluation = t.eval_trials()
    reach = task("reach").eval_trials()
    np.testing.assert_array_equal(evaluation.trials.init_pos, reach.trials.goal_pos)
    np.testing.assert_array_equal(evaluation.trials.goal_pos, reach.trials.goal_pos)
    np.testing.assert_array_equal(evaluation.goal_angle, reach.goal_angle)


def test_go_steps_survive_the_trial_stores(tmp_path):
    t = task("delayed_reach", go_step=[2, 7])
    trials = t.training_trials(key=jax.random.key(5), n_replicates=2, n_batches=3, batch_size=4)
    mfp.write_trials(trials, tmp_path / "train.zarr")
    np.testing.assert_array_equal(mfp.read_trials(tmp_path / "train.zarr").go_step, trials.go_step)
    mfp.write_dataset(mfp.center_out_dataset(t.eval_trials()), tmp_path / "eval.zarr")
    stored = mfp.read_center_out(tmp_path / "eval.zarr")
    np.testing.assert_array_equal(stored.trials.go_step, t.eval_trials().trials.go_step)
    reach = task("reach").training_trials(
        key=jax.random.key(5), n_replicates=1, n_batches=2, batch_size=3
    )
    mfp.write_trials(reach, tmp_path / "reach.zarr")
    assert "go_step" not in mfp.open_dataset(tmp_path / "reach.zarr")
    assert mfp.read_trials(tmp_path / "reach.zarr").go_step is None


def test_training_refuses_trials_of_another_kind(tiny):
    setup = tiny()
    delayed = mf.Task(
        mf.TaskConfig.from_dict({"kind": "delayed_reach", "n_steps": 12, "go_step": [3, 6]})
    )
    with pytest.raises(ValueError, match="lack go steps"):
        mf.train(setup.ensemble, setup.trials, delayed, setup.config, key=setup.train_key)


def test_a_trained_network_waits_for_the_go_cue_and_then_reaches():
    """The delayed reach as a user trains it: reaction time becomes measurable."""
    config = {"n_steps": 30, "go_step": [8, 14], "eval": {"n_directions": 6, "distances": [0.5]}}
    t = mf.Task(mf.TaskConfig.from_dict({"kind": "delayed_reach", **config}))
    model = mf.ModelConfig.from_dict(
        {"network": {"hidden_size": 32}, "feedback": {"noise_std": 0.01}}
    )
    train = tiny_train_config(
        n_replicates=1,
        n_batches=400,
        batch_size=64,
        validation={"every": 100},
        log={"every": 100},
        checkpoint={"every": 100},
    )
    keys = mfp.experiment_keys(0)
    ensemble = mf.make_ensemble(model, n_replicates=1, n_task_inputs=3, key=keys["init"])
    trials = t.training_trials(key=keys["trials"], n_replicates=1, n_batches=400, batch_size=64)
    trained = mf.train(ensemble, trials, t, train, key=keys["train"], progress=False).ensemble
    states = mf.evaluate(trained, t, model, key=keys["evaluate"])
    metrics = mf.reach_metrics(states)
    go = t.config.evaluation_go_step
    np.testing.assert_allclose(states.go_time, go * model.dt)
    drift = np.hypot(*np.moveaxis(states.pos.values - states.pos.values[..., :1, :], -1, 0))
    assert drift[..., :go].max() < 0.05  # held within 5 cm of a 50 cm reach
    assert float(metrics.endpoint_error.max()) < 0.1  # and then reached the goal
    reaction = metrics.reaction_time.values
    assert np.all(reaction > 0) and np.all(reaction < 0.5), reaction
