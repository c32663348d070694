"""Path-shape and timing metrics on hand-built reaches of known geometry; the condition dim."""

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from motorflow._metrics import metrics_table, reach_metrics

DT = 0.1
PER_TRIAL = ("replicate", "trial")
GEOMETRY = ["max_lateral_deviation", "initial_angle_error", "path_length_ratio"]


def reach_states(pos, goal, *, dims=PER_TRIAL, goal_dims=("trial",), vel=None, coords=None):
    """States: ``pos`` `(*dims, time, component)`, ``goal`` `(*goal_dims, [time,] component)`."""
    pos = np.asarray(pos, dtype=float)
    goal = np.asarray(goal, dtype=float)
    vel = np.gradient(pos, DT, axis=-2) if vel is None else np.asarray(vel, dtype=float)
    vector = (*dims, "time", "component")
    goal_time = ("time",) if goal.ndim == len(goal_dims) + 2 else ()
    n_steps = pos.shape[-2]
    return xr.Dataset(
        {
            "pos": (vector, pos),
            "vel": (vector, vel),
            "goal": ((*goal_dims, *goal_time, "component"), goal),
        },
        coords={
            **{dim: np.arange(size) for dim, size in zip(dims, pos.shape) if dim != "condition"},
            "time": np.arange(n_steps) * DT,
            "component": np.array(["x", "y"], dtype=object),
            **(coords or {}),
        },
    )


def one_reach(path, goal, **options) -> xr.Dataset:
    """Metrics of a single path `(time, 2)` towards a fixed `goal` `(2,)`, as scalars."""
    states = reach_states(np.asarray(path)[None, None], np.asarray(goal)[None])
    return reach_metrics(states, **options).isel(replicate=0, trial=0)


def straight(start, goal, n_steps=11):
    return np.linspace(start, goal, n_steps)


def bulging(goal, side_vector, bulge, n_steps=11):
    """From the origin to `goal`, pushed `bulge` along `side_vector` at the middle step."""
    fraction = np.linspace(0.0, 1.0, n_steps)[:, None]
    return fraction * np.asarray(goal) + bulge * np.sin(np.pi * fraction) * np.asarray(side_vector)


@pytest.mark.parametrize(
    "start, goal",
    [((0, 0), (1, 0)), ((0, 0), (0, 0.5)), ((0.2, -0.1), (-0.4, 0.3)), ((1, 1), (1, -1))],
)
def test_straight_reach_has_no_deviation_no_angle_error_and_unit_path_ratio(start, goal):
    metrics = one_reach(straight(start, goal), goal)
    assert float(metrics.max_lateral_deviation) == pytest.approx(0.0, abs=1e-12)
    assert float(metrics.initial_angle_error) == pytest.approx(0.0, abs=1e-12)
    assert float(metrics.path_length_ratio) == pytest.approx(1.0, rel=1e-12)


# (goal from the origin, the unit vector to the left of that reach, written out by hand)
LEFT_OF = [((1, 0), (0, 1)), ((0, 1), (-1, 0)), ((-1, 0), (0, -1)), ((0, -0.5), (1, 0))]


@pytest.mark.parametrize("goal, left", LEFT_OF)
@pytest.mark.parametrize("side", [1, -1])
def test_lateral_deviation_is_positive_to_the_left_of_the_reach(goal, left, side):
    metrics = one_reach(bulging(goal, left, side * 0.1), goal)
    assert float(metrics.max_lateral_deviation) == pytest.approx(side * 0.1, rel=1e-9)


def test_lateral_deviation_is_taken_where_it_is_largest_in_magnitude():
    # A small bulge to the left early on, a larger one to the right later.
    path = np.array([[0, 0], [0.2, 0.05], [0.4, 0], [0.6, -0.1], [0.8, -0.02], [1, 0]])
    assert float(one_reach(path, (1, 0)).max_lateral_deviation) == pytest.approx(-0.1)
    assert float(one_reach(path * [1, -1], (1, 0)).max_lateral_deviation) == pytest.approx(0.1)


@pytest.mark.parametrize("flip", [1, -1])
def test_lateral_distance_is_the_size_of_the_largest_bulge_either_side(flip):
    # A bulge of 5 cm to one side, then 10 cm to the other: the distance is 10 cm.
    path = np.array([[0, 0], [0.2, 0.05], [0.4, 0], [0.6, -0.1], [0.8, -0.02], [1, 0]])
    metrics = one_reach(path * [1, flip], (1, 0))
    assert float(metrics.max_lateral_distance) == pytest.approx(0.1)
    assert float(metrics.max_lateral_distance) == pytest.approx(
        abs(float(metrics.max_lateral_deviation))
    )


def test_lateral_deviation_is_measured_from_the_start_not_the_origin():
    start = np.array([0.5, 0.5])
    path = start + bulging((0, 1), (-1, 0), 0.1)
    assert float(one_reach(path, start + (0, 1)).max_lateral_deviation) == pytest.approx(0.1)


@pytest.mark.parametrize("goal_angle", [0.0, np.pi / 2, 2.5, -2.0])
@pytest.mark.parametrize("initial_error", [np.pi / 6, -np.pi / 6])
def test_initial_angle_error_of_a_path_that_first_heads_off_the_goal_direction(
    goal_angle, initial_error
):
    goal = np.array([np.cos(goal_angle), np.sin(goal_angle)])
    heading = goal_angle + initial_error
    first = 0.3 * np.array([np.cos(heading), np.sin(heading)])
    path = np.array([[0, 0], first, (first + goal) / 2, goal])
    angle = float(one_reach(path, goal).initial_angle_error)
    assert angle == pytest.approx(initial_error, rel=1e-9)


def test_initial_angle_error_is_measured_where_the_path_first_reaches_the_fraction():
    # The first step (0.1 at -60 degrees) is short of 0.2 of the 1 m reach; the next is past it.
    early = 0.1 * np.array([np.cos(-np.pi / 3), np.sin(-np.pi / 3)])
    later = 0.3 * np.array([np.cos(np.pi / 6), np.sin(np.pi / 6)])
    path = np.array([[0, 0], early, later, [1, 0]])
    assert float(one_reach(path, (1, 0)).initial_angle_error) == pytest.approx(np.pi / 6)
    at_five_percent = one_reach(path, (1, 0), initial_fraction=0.05)
    assert float(at_five_percent.initial_angle_error) == pytest.approx(-np.pi / 3)
    assert at_five_percent.attrs["initial_fraction"] == 0.05


def test_initial_angle_error_of_a_backwards_start_is_plus_pi():
    # Along -x the cross product is -0.0, where arctan2 alone would give -pi.
    metrics = one_reach([[0, 0], [0.3, 0], [-1, 0]], (-1, 0))
    assert float(metrics.initial_angle_error) == np.pi


def test_initial_angle_error_is_nan_when_the_path_never_gets_far_enough():
    metrics = one_reach([[0, 0], [0.1, 0.05], [0.15, 0]], (1, 0))
    assert np.isnan(metrics.initial_angle_error)
    assert np.isfinite(metrics.max_lateral_deviation)


@pytest.mark.parametrize(
    "path, ratio",
    [
        ([[0, 0], [1, 0], [0, 0]], 2.0),  # out to the goal and back: 2 m over 1 m
        ([[0, 0], [1, 0], [0.5, 0], [1, 0]], 2.0),  # out, halfway back, out again
        ([[0, 0], [0.5, 0.5], [1, 0]], np.sqrt(2)),  # two 45-degree legs
        ([[0, 0], [0.25, 0], [0.5, 0]], 0.5),  # stops halfway
    ],
)
def test_path_length_ratio_matches_the_hand_computed_path(path, ratio):
    assert float(one_reach(path, (1, 0)).path_length_ratio) == pytest.approx(ratio, rel=1e-12)


def test_path_length_ratio_scales_with_the_reach_not_the_coordinates():
    path = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    start = np.array([0.3, -0.7])
    assert float(
        one_reach(start + 0.2 * path, start + (0.2, 0)).path_length_ratio
    ) == pytest.approx(2)


RAMP = np.array([0.0, 0.0, 0.5, 1.0, 2.0, 4.0, 10.0, 10.0, 4.0, 0.0])


def ramp_states(speeds, *, coords=None, dims=PER_TRIAL) -> xr.Dataset:
    """Reaches along +x whose speed over time is `speeds` `(*dims, time)`."""
    speeds = np.asarray(speeds, dtype=float)
    vel = np.stack([speeds, np.zeros_like(speeds)], axis=-1)
    pos = np.cumsum(vel, axis=-2) * DT
    goal = np.broadcast_to([1.0, 0.0], (speeds.shape[dims.index("trial")], 2))
    return reach_states(pos, goal, vel=vel, dims=dims, coords=coords)


def delayed(speeds, n_steps):
    return np.concatenate([np.zeros(n_steps), speeds[:-n_steps]])


# Trial 0 ramps to a peak of 10 at step 6; trial 1, [0, 2, 5, 5, 2, ...], peaks at 5 at step 2.
@pytest.mark.parametrize(
    "fraction, step, reversed_step", [(0.1, 3, 1), (0.05, 2, 1), (0.5, 6, 2), (1.0, 6, 2)]
)
def test_onset_is_the_first_step_that_reaches_the_fraction_of_peak_speed(
    fraction, step, reversed_step
):
    states = ramp_states([[RAMP, RAMP[::-1] * 0.5]])
    metrics = reach_metrics(states, onset_fraction=fraction)
    np.testing.assert_allclose(metrics.onset_time, [[step * DT, reversed_step * DT]])
    assert metrics.onset_time.attrs["units"] == "s"
    assert metrics.attrs["onset_fraction"] == fraction


def test_onset_is_nan_for_a_trial_that_never_moves():
    metrics = reach_metrics(ramp_states([[RAMP, np.zeros_like(RAMP)]]))
    np.testing.assert_allclose(metrics.onset_time, [[0.3, np.nan]])


def test_reaction_time_is_onset_minus_go_time():
    states = ramp_states([[RAMP, delayed(RAMP, 2)]], coords={"go_time": ("trial", [0.1, 0.25])})
    metrics = reach_metrics(states)
    np.testing.assert_allclose(metrics.onset_time, [[0.3, 0.5]])
    np.testing.assert_allclose(metrics.reaction_time, [[0.2, 0.25]])
    assert metrics.reaction_time.attrs["units"] == "s"
    assert "reaction_time" not in reach_metrics(states.drop_vars("go_time")).data_vars


def test_reaction_time_with_go_time_per_condition_and_trial():
    speeds = np.stack([[RAMP, RAMP], [delayed(RAMP, 1), RAMP]])[None]  # (1, condition, trial, time)
    go_time = [[0.0, 0.1], [0.2, 0.3]]
    states = ramp_states(
        speeds,
        dims=("replicate", "condition", "trial"),
        coords={"condition": ["a", "b"], "go_time": (("condition", "trial"), go_time)},
    )
    metrics = reach_metrics(states)
    assert metrics.reaction_time.dims == ("replicate", "condition", "trial")
    np.testing.assert_allclose(metrics.reaction_time, [[[0.3, 0.2], [0.2, 0.0]]], atol=1e-12)


def test_a_diverged_trial_gives_nan_metrics_and_no_warnings():
    pos = np.stack([straight((0, 0), (1, 0)), bulging((0, 1), (-1, 0), 0.1)])[None]
    pos[0, 1, 4:] = np.nan
    states = reach_states(pos, [[1, 0], [0, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics = reach_metrics(states, goal_radius=10.0)
    for name in metrics.data_vars:
        assert np.isfinite(metrics[name].sel(trial=0)).all(), name
        assert np.isnan(metrics[name].sel(trial=1)).all(), name


def test_a_single_nan_position_makes_the_geometric_metrics_nan():
    pos = np.stack([bulging((1, 0), (0, 1), 0.1)] * 2)[None]
    pos[0, 1, 1, 1] = np.nan  # before the path reaches 20% of the way: the angle is affected too
    states = reach_states(pos, [[1, 0], [1, 0]], vel=np.ones_like(pos))
    metrics = reach_metrics(states)
    for name in GEOMETRY:
        assert np.isfinite(metrics[name].sel(trial=0)), name
        assert np.isnan(metrics[name].sel(trial=1)), name


def test_geometry_is_nan_when_start_and_goal_coincide():
    path = np.array([[0.2, 0.2], [0.3, 0.2], [0.2, 0.2]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics = one_reach(path, (0.2, 0.2))
    for name in GEOMETRY:
        assert np.isnan(metrics[name]), name
    assert float(metrics.endpoint_error) == 0.0


def test_target_jump_uses_the_goal_at_each_step_and_the_final_goal_for_geometry():
    # The goal jumps from (1, 0) to (0, 1) at step 3. Trial 0 first reaches the old goal;
    # trial 1 anticipates the jump, but has not arrived before the goal is there.
    paths = np.array(
        [
            [[0, 0], [1, 0], [1, 0], [1, 0], [0.5, 0.5], [0, 1], [0, 1]],
            [[0, 0], [0, 1], [0, 1], [0, 1], [0, 1], [0, 1], [0, 1]],
        ]
    )
    goal = np.broadcast_to(np.array([[1, 0]] * 3 + [[0, 1]] * 4), paths.shape)
    metrics = reach_metrics(reach_states(paths[None], goal), goal_radius=0.05).isel(replicate=0)
    np.testing.assert_allclose(metrics.movement_time, [5 * DT, 3 * DT])
    np.testing.assert_array_equal(metrics.endpoint_error, [0.0, 0.0])
    # Against the final goal straight up the y axis, (1, 0) is 1 m to the right, at -90 degrees.
    np.testing.assert_allclose(metrics.max_lateral_deviation, [-1.0, 0.0])
    np.testing.assert_allclose(metrics.initial_angle_error, [-np.pi / 2, 0.0])
    np.testing.assert_allclose(metrics.path_length_ratio, [1 + np.sqrt(2), 1.0])


def condition_states() -> xr.Dataset:
    """Two replicates x two conditions x two trials; only under 'curl' do paths bulge left."""
    goals = np.array([[1.0, 0.0], [0.0, 1.0]])
    lefts = np.array([[0.0, 1.0], [-1.0, 0.0]])
    bulge = {"none": 0.0, "curl": 0.1}
    pos = np.stack(
        [
            [
                [
                    bulging(goal, left, (1 + replicate) * bulge[condition])
                    for goal, left in zip(goals, lefts)
                ]
                for replicate in range(2)
            ]
            for condition in bulge
        ]
    )  # (condition, replicate, trial, time, component): deliberately not replicate-first
    goal = np.broadcast_to(goals[None, :, None], (2, 2, pos.shape[-2], 2))
    return reach_states(
        pos,
        goal,
        dims=("condition", "replicate", "trial"),
        goal_dims=("condition", "trial"),
        coords={
            "condition": list(bulge),
            "curl_strength": ("condition", [0.0, 1.0]),
            "goal_angle": ("trial", [0.0, np.pi / 2]),
        },
    )


def test_condition_dim_is_kept_and_metrics_differ_per_condition():
    metrics = reach_metrics(condition_states())
    for name in metrics.data_vars:
        assert metrics[name].dims == ("replicate", "condition", "trial"), name
    assert list(metrics.condition.values) == ["none", "curl"]
    np.testing.assert_array_equal(metrics.curl_strength, [0.0, 1.0])
    np.testing.assert_array_equal(metrics.goal_angle, [0.0, np.pi / 2])
    np.testing.assert_allclose(metrics.max_lateral_deviation.sel(condition="none"), 0.0, atol=1e-12)
    np.testing.assert_allclose(
        metrics.max_lateral_deviation.sel(condition="curl"), [[0.1, 0.1], [0.2, 0.2]]
    )
    assert (metrics.initial_angle_error.sel(condition="curl") > 0).all()
    assert (metrics.path_length_ratio.sel(condition="curl") > 1).all()


def test_extra_dims_are_carried_and_each_slice_matches_its_own_metrics():
    base = condition_states()
    stacked = xr.concat([base, base.assign(pos=base.pos * 0.5)], dim="noise_level")
    metrics = reach_metrics(stacked)
    assert metrics.endpoint_error.dims == ("replicate", "condition", "trial", "noise_level")
    for level in range(2):
        xr.testing.assert_allclose(
            metrics.isel(noise_level=level).drop_vars("curl_strength"),
            reach_metrics(stacked.isel(noise_level=level)).drop_vars("curl_strength"),
        )


def test_old_layout_gives_the_same_metrics_as_one_condition_with_a_goal_per_step():
    pos = np.stack(
        [bulging((1, 0), (0, 1), 0.1), [[0, 0], *[[0.2 * k, 0.05] for k in range(1, 11)]]]
    )
    old = reach_states(pos[None], [[1, 0], [1.5, 0.5]], vel=np.gradient(pos[None], axis=-2))
    goal_per_step = old.goal.expand_dims(condition=["none"]).broadcast_like(old.time)
    new = old.expand_dims(condition=["none"], axis=1).assign(
        goal=goal_per_step.transpose("condition", "trial", "time", "component")
    )
    assert new.goal.dims == ("condition", "trial", "time", "component")
    old_metrics = reach_metrics(old, goal_radius=0.1)
    assert "condition" not in old_metrics.dims
    new_metrics = reach_metrics(new, goal_radius=0.1).isel(condition=0, drop=True)
    xr.testing.assert_identical(new_metrics, old_metrics)


def test_table_has_one_row_per_replicate_and_condition_with_trial_means(tmp_path):
    metrics = reach_metrics(condition_states())
    table = metrics_table(metrics)
    assert list(table.columns) == ["replicate", "condition", *metrics.data_vars]
    assert list(zip(table.replicate, table.condition)) == [
        (0, "none"),
        (0, "curl"),
        (1, "none"),
        (1, "curl"),
    ]
    np.testing.assert_allclose(table.max_lateral_deviation, [0.0, 0.1, 0.0, 0.2], atol=1e-12)
    expected = metrics.path_length_ratio.mean("trial").transpose("replicate", "condition")
    np.testing.assert_allclose(table.path_length_ratio, expected.values.ravel())
    table.to_csv(tmp_path / "metrics.csv", index=False)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "metrics.csv"), table, check_dtype=False)


def test_table_leaves_nan_trials_out_of_each_condition_mean():
    metrics = reach_metrics(condition_states())
    metrics["onset_time"] = metrics.onset_time.where(metrics.trial == 0)
    metrics["initial_angle_error"] = metrics.initial_angle_error * np.nan
    table = metrics_table(metrics)
    np.testing.assert_allclose(table.onset_time, metrics.onset_time.isel(trial=0).values.ravel())
    assert table.initial_angle_error.isna().all()


@pytest.mark.parametrize(
    "options", [{"initial_fraction": 0.0}, {"initial_fraction": 1.5}, {"onset_fraction": -0.1}]
)
def test_fractions_outside_zero_to_one_are_rejected(options):
    with pytest.raises(ValueError, match=next(iter(options))):
        reach_metrics(condition_states(), **options)


def test_max_displacement_is_the_farthest_the_hand_gets_from_its_start():
    # A posture trial: pushed 3 cm up and 4 cm right (5 cm away), then back home.
    path = np.array([[0.2, 0.1], [0.22, 0.11], [0.24, 0.13], [0.21, 0.11], [0.2, 0.1]])
    metrics = one_reach(path, (0.2, 0.1))
    assert float(metrics.max_displacement) == pytest.approx(0.05, rel=1e-12)
    assert np.isnan(float(metrics.max_lateral_deviation))  # no reach to deviate from


def test_displacement_before_go_is_how_far_the_hand_gets_while_it_should_hold():
    # Positions 0, 0, 0.05, 0.15, 0.35, ... (RAMP's speeds over steps of 0.1 s).
    states = ramp_states([[RAMP, RAMP]], coords={"go_time": ("trial", [0.35, 0.0])})
    metrics = reach_metrics(states)
    # Trial 0 holds for the steps at 0 to 0.3 s; trial 1 is told to go at once.
    np.testing.assert_allclose(metrics.displacement_before_go, [[0.15, 0.0]], atol=1e-12)
    assert metrics.displacement_before_go.attrs["units"] == "m"
    assert "displacement_before_go" not in reach_metrics(states.drop_vars("go_time"))
