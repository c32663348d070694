"""The hallmark of Sussillo & Barak (2013) on a small trained reaching network: under
each goal's steady input, one stable point at that reach's end state.

The expectation for a reach (one attractor per target near the end-of-trial hidden
state, the inputs held at the goal plus the feedback of a hand at rest on it) and its
small-size test are those of the project's notes on classic results, section 5.
"""

import jax
import numpy as np
import pytest

import motorflow as mf
from motorflow._analysis._fixed_points import (
    end_state_plane,
    find_fixed_points,
    sample_starts,
    steady_inputs,
)
from motorflow._evaluate import evaluate

N_DIRECTIONS = 8
SEARCH = {"steps": 3000, "learning_rate": 0.02, "tolerance": 1e-8, "distinct_tolerance": 1e-3}


@pytest.fixture(scope="module")
def trained():
    model = mf.ModelConfig.from_dict(
        {
            "dt": 0.05,
            "plant": {"kind": "point_mass", "mass": 1.0, "damping": 0.0},
            "network": {"cell": "gru", "hidden_size": 16},
            "feedback": {"delay": 2, "noise_std": 0.0},
        }
    )
    task = mf.Task(
        mf.TaskConfig.from_dict(
            {"n_steps": 60, "eval": {"n_directions": N_DIRECTIONS, "distances": [0.5]}}
        )
    )
    config = mf.TrainConfig.from_dict(
        {
            "n_replicates": 1,
            "n_batches": 1000,
            "batch_size": 32,
            "optimizer": {"name": "adam", "learning_rate": 0.01},
            "loss": {
                "position": {"weight": 1.0, "discount_power": 6},
                "final_velocity": {"weight": 1.0},
                "effort": {"weight": 1e-5},
                "hidden": {"weight": 1e-5},
            },
            "validation": {"every": 1000},
            "log": {"every": 1000},
            "checkpoint": {"every": 1000},
        }
    )
    init_key, trials_key, train_key, eval_key = jax.random.split(jax.random.key(0), 4)
    ensemble = mf.make_ensemble(model, n_replicates=1, n_task_inputs=task.n_inputs, key=init_key)
    trials = task.training_trials(key=trials_key, n_replicates=1, n_batches=1000, batch_size=32)
    result = mf.train(ensemble, trials, task, config, key=train_key, progress=False)
    return result.ensemble, task, evaluate(result.ensemble, task, model, key=eval_key)


def search(ensemble, task, states, inputs):
    starts = sample_starts(states, n_starts=8, noise=0.05, key=jax.random.key(2))
    return find_fixed_points(ensemble, inputs, starts, **SEARCH).isel(replicate=0)


def test_each_goal_has_a_stable_point_at_its_end_state_and_the_goals_points_are_apart(trained):
    ensemble, task, states = trained
    found = search(ensemble, task, states, steady_inputs(task))
    hidden = states.hidden.isel(replicate=0).transpose(..., "trial", "time", "unit").values
    hidden = hidden.reshape(-1, *hidden.shape[-3:])[0]  # first condition
    end = hidden[:, -1]
    spread = np.sqrt(
        ((hidden.reshape(-1, hidden.shape[-1]) - hidden.mean((0, 1))) ** 2).sum(-1).mean()
    )
    points = found.fixed_point.transpose("trial", "start", "unit").values
    ok = (found.converged & found.stable).transpose("trial", "start").values
    distance = np.where(ok, np.linalg.norm(points - end[:, None], axis=-1), np.inf)
    nearest = distance.argmin(axis=1)

    assert (distance.min(axis=1) < 0.1 * spread).all(), distance.min(axis=1) / spread
    magnitude = found.max_eigenvalue_magnitude.transpose("trial", "start").values
    assert (magnitude[np.arange(N_DIRECTIONS), nearest] < 1).all()
    chosen = points[np.arange(N_DIRECTIONS), nearest]
    apart = np.linalg.norm(chosen[:, None] - chosen[None], axis=-1)[
        np.triu_indices(N_DIRECTIONS, 1)
    ]
    assert apart.min() > 10 * SEARCH["distinct_tolerance"]

    # The plane the figure draws them on keeps them apart (the trajectories' own
    # PC1-PC2 need not: there they can collapse onto one spot).
    plane = end_state_plane(states).isel(replicate=0)
    drawn = (chosen - plane.end_plane_mean.values) @ plane.end_plane_loading.values.T
    drawn_apart = np.linalg.norm(drawn[:, None] - drawn[None], axis=-1)
    assert drawn_apart[np.triu_indices(N_DIRECTIONS, 1)].min() > 0.5 * apart.min()


def test_with_the_goal_input_zeroed_the_goals_points_collapse(trained):
    # The goal reaches the network twice at rest: as the task input and as the fed-back
    # position of the hand resting on it. Zero both (a hand at rest on the centre with
    # no goal): the points were told apart by the input alone, not by memory of the
    # reach (the starts still come from all eight reaches), so they fall together.
    ensemble, task, states = trained
    inputs = np.array(steady_inputs(task))
    inputs[:, : task.n_inputs + 2] = 0.0
    found = search(ensemble, task, states, inputs)

    kept = (found.converged & found.stable).values
    points = found.fixed_point.transpose("trial", "start", "unit").values[kept]
    clusters = []
    for point in points:
        if not any(np.linalg.norm(point - c) < 10 * SEARCH["distinct_tolerance"] for c in clusters):
            clusters.append(point)
    assert 1 <= len(clusters) <= 2
