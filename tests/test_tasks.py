import jax
import numpy as np

import motorflow as mf


def task(**config):
    # The center-out evaluation must lie in the workspace too.
    evaluation = {"center": [0.5, 0.25], "distances": [0.2]}
    return mf.Task(
        mf.TaskConfig.from_dict({"workspace": [[-1, 0], [2, 0.5]], "eval": evaluation, **config})
    )


def test_reaches_start_at_rest_inside_the_workspace():
    trials = task().sample(2000, key=jax.random.key(0))
    for points in (trials.init_pos, trials.goal_pos):
        points = np.asarray(points)
        assert points[:, 0].min() >= -1 and points[:, 0].max() <= 2
        assert points[:, 1].min() >= 0 and points[:, 1].max() <= 0.5
        assert points[:, 0].max() - points[:, 0].min() > 2.5  # spread over the workspace
    np.testing.assert_array_equal(trials.init_vel, 0)


def test_training_trials_have_replicate_batch_trial_dims_and_differ():
    trials = task().training_trials(
        key=jax.random.key(1), n_replicates=3, n_batches=4, batch_size=5
    )
    assert trials.goal_pos.shape == (3, 4, 5, 2)
    goal = np.asarray(trials.goal_pos)
    assert not np.array_equal(goal[0], goal[1]) and not np.array_equal(goal[0, 0], goal[0, 1])
    shared = task().training_trials(
        key=jax.random.key(1), n_replicates=3, n_batches=4, batch_size=5, shared=True
    )
    assert shared.goal_pos.shape == (1, 4, 5, 2)


def test_any_batch_can_be_regenerated_alone():
    key = jax.random.key(2)
    trials = task().training_trials(key=key, n_replicates=2, n_batches=6, batch_size=3)
    alone = task().sample(3, key=jax.random.fold_in(jax.random.fold_in(key, 1), 4))
    np.testing.assert_array_equal(trials.goal_pos[1, 4], alone.goal_pos)


def test_center_out_set_lays_goals_around_the_center():
    t = task(eval={"center": [0.5, 0.25], "n_directions": 4, "distances": [0.1, 0.2]})
    center_out = t.eval_trials()
    goal = np.asarray(center_out.trials.goal_pos)
    assert goal.shape == (8, 2)
    np.testing.assert_allclose(center_out.goal_distance, [0.1] * 4 + [0.2] * 4)
    np.testing.assert_allclose(
        center_out.goal_angle[:4], [0, np.pi / 2, np.pi, 3 * np.pi / 2], rtol=1e-6
    )
    np.testing.assert_allclose(
        np.hypot(*(goal - [0.5, 0.25]).T), center_out.goal_distance, rtol=1e-5
    )
    np.testing.assert_allclose(goal[1], [0.5, 0.35], atol=1e-6)
    np.testing.assert_array_equal(center_out.trials.init_pos, np.broadcast_to([0.5, 0.25], (8, 2)))


def test_inputs_hold_the_goal_for_every_step():
    t = task(n_steps=7)
    trials = t.sample(3, key=jax.random.key(0))
    model = mf.build_model(mf.ModelConfig(), n_task_inputs=t.n_inputs, key=jax.random.key(1))
    _, targets = mf.run_trials(model, t, trials, jax.random.split(jax.random.key(2), 3))
    goal = targets.goal
    inputs = jax.vmap(t.inputs)(trials, goal)
    assert inputs.shape == goal.shape == (3, 7, 2)
    for step in range(7):
        np.testing.assert_array_equal(inputs[:, step], trials.goal_pos)
