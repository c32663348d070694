import jax
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from conftest import tiny_model_config, tiny_task

import motorflow as mf
from motorflow._metrics import metrics_table, reach_metrics

DT = 0.1
N_STEPS = 5
# Without a go_time coord there is no reaction_time.
METRIC_NAMES = [
    "endpoint_error",
    "final_speed",
    "peak_speed",
    "movement_time",
    "max_lateral_deviation",
    "max_lateral_distance",
    "initial_angle_error",
    "path_length_ratio",
    "max_displacement",
    "onset_time",
    "speed_peaks",
]


def hand_built_states() -> xr.Dataset:
    """Two replicates x two trials with known paths; goals at (1, 0) and (0, 1)."""
    pos = np.zeros((2, 2, N_STEPS, 2))
    # replicate 0, trial 0: inside the 0.05 radius from step 2 on.
    pos[0, 0, :, 0] = [0.0, 0.5, 0.97, 1.0, 1.0]
    # replicate 0, trial 1: passes through the goal, overshoots, then settles from step 3.
    pos[0, 1, :, 1] = [0.0, 0.98, 0.5, 0.99, 1.0]
    # replicate 1, trial 0: never gets there.
    pos[1, 0, :, 0] = [0.0, 0.2, 0.4, 0.6, 0.8]
    # replicate 1, trial 1: arrives, then drifts out on the last step.
    pos[1, 1, :, 1] = [0.0, 1.0, 1.0, 1.0, 0.9]
    vel = np.zeros_like(pos)
    vel[0, 0, 1] = [3.0, 4.0]  # speed 5, the peak
    vel[0, 0, -1] = [0.0, 0.5]
    vel[0, 1, 2] = [-6.0, 8.0]  # speed 10
    vel[1, 0, :, 0] = 2.0  # constant speed 2
    vel[1, 1, -1] = [0.6, -0.8]  # speed 1, peak and final
    vector = ("replicate", "trial", "time", "component")
    return xr.Dataset(
        {
            "pos": (vector, pos),
            "vel": (vector, vel),
            "goal": (("trial", "component"), np.array([[1.0, 0.0], [0.0, 1.0]])),
        },
        coords={
            "replicate": [0, 1],
            "trial": [0, 1],
            "time": (np.arange(N_STEPS) * DT).astype(np.float32),
            "component": np.array(["x", "y"], dtype=object),
            "goal_angle": ("trial", np.array([0.0, np.pi / 2])),
            "goal_distance": ("trial", np.array([1.0, 1.0])),
        },
    )


def test_metrics_on_known_paths():
    states = hand_built_states()
    metrics = reach_metrics(states, goal_radius=0.05)
    np.testing.assert_allclose(metrics.endpoint_error, [[0.0, 0.0], [0.2, 0.1]], atol=1e-12)
    np.testing.assert_allclose(metrics.final_speed, [[0.5, 0.0], [2.0, 1.0]])
    np.testing.assert_allclose(metrics.peak_speed, [[5.0, 10.0], [2.0, 1.0]])
    time = states.time.values
    np.testing.assert_array_equal(metrics.movement_time, [[time[2], time[3]], [np.nan, np.nan]])


def test_movement_time_depends_on_radius_and_is_zero_when_never_away():
    states = hand_built_states()
    wide = reach_metrics(states, goal_radius=0.15)
    time = states.time.values
    # The overshoot still leaves a 0.15 radius; the last-step drift no longer does.
    np.testing.assert_array_equal(wide.movement_time, [[time[2], time[3]], [np.nan, time[1]]])
    already_there = states.assign(goal=states.goal * 0.0).isel(time=[0])
    np.testing.assert_array_equal(reach_metrics(already_there).movement_time, 0.0)


def test_metrics_keep_trial_coords_and_record_radius():
    metrics = reach_metrics(hand_built_states(), goal_radius=0.07)
    assert list(metrics.data_vars) == METRIC_NAMES
    for name in metrics.data_vars:
        assert metrics[name].dims == ("replicate", "trial")
    assert "time" not in metrics.coords
    np.testing.assert_array_equal(metrics.goal_angle, [0.0, np.pi / 2])
    np.testing.assert_array_equal(metrics.goal_distance, [1.0, 1.0])
    assert metrics.attrs == {"goal_radius": 0.07, "initial_fraction": 0.2, "onset_fraction": 0.1}
    assert metrics.movement_time.attrs["units"] == "s"


def test_metrics_of_an_evaluated_ensemble_match_numpy():
    config, task = tiny_model_config(), tiny_task(n_steps=12)
    ensemble = mf.make_ensemble(config, n_replicates=2, n_task_inputs=2, key=jax.random.key(0))
    states = mf.evaluate(ensemble, task, config, key=jax.random.key(1))
    metrics = reach_metrics(states)
    # Whatever extra dims (e.g. condition) evaluate adds, metrics keep all but time and component.
    per_trial = tuple(dim for dim in states.pos.dims if dim not in ("time", "component"))
    assert dict(metrics.sizes) == {dim: states.sizes[dim] for dim in per_trial}
    assert (metrics.sizes["replicate"], metrics.sizes["trial"]) == (2, 4)
    assert metrics.endpoint_error.dims[0] == "replicate"
    xr.testing.assert_equal(metrics.goal_angle, states.goal_angle)
    order = (*metrics.endpoint_error.dims, "time", "component")
    pos = states.pos.transpose(*order).values
    vel = states.vel.transpose(*order).values
    goal = states.goal.broadcast_like(states.pos).transpose(*order).values
    np.testing.assert_allclose(
        metrics.endpoint_error,
        np.linalg.norm(pos[..., -1, :] - goal[..., -1, :], axis=-1),
        rtol=1e-6,
    )
    np.testing.assert_allclose(metrics.peak_speed, np.linalg.norm(vel, axis=-1).max(-1), rtol=1e-6)
    path_length = np.linalg.norm(np.diff(pos, axis=-2), axis=-1).sum(-1)
    reach_length = np.linalg.norm(goal[..., -1, :] - pos[..., 0, :], axis=-1)
    np.testing.assert_allclose(metrics.path_length_ratio, path_length / reach_length, rtol=1e-5)


def test_table_has_one_row_per_replicate_with_trial_means():
    metrics = reach_metrics(hand_built_states(), goal_radius=0.05)
    table = metrics_table(metrics)
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == ["replicate", *METRIC_NAMES]
    assert list(table.replicate) == [0, 1]
    np.testing.assert_allclose(table.endpoint_error, [0.0, 0.15], atol=1e-12)
    np.testing.assert_allclose(table.final_speed, [0.25, 1.5])
    np.testing.assert_allclose(table.peak_speed, [7.5, 1.5])
    # Unsettled trials are left out of the mean; a replicate with none settled is NaN.
    np.testing.assert_allclose(table.movement_time, [0.25, np.nan], rtol=1e-6)


def test_table_round_trips_through_csv(tmp_path):
    table = metrics_table(reach_metrics(hand_built_states()))
    table.to_csv(tmp_path / "metrics.csv", index=False)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "metrics.csv"), table, check_dtype=False)


@pytest.mark.parametrize("radius", [0.0, 10.0])
def test_extreme_radii(radius):
    metrics = reach_metrics(hand_built_states(), goal_radius=radius)
    if radius == 0.0:
        # Only exact arrivals that stay count.
        assert np.isfinite(metrics.movement_time.sel(replicate=0)).all()
        assert np.isnan(metrics.movement_time.sel(replicate=1)).all()
    else:
        np.testing.assert_array_equal(metrics.movement_time, 0.0)
