"""Cosine tuning recovered exactly from units that are cosines of the reach direction."""

import numpy as np
import pytest
import xarray as xr

from motorflow._analysis._tuning import directional_tuning, preferred_direction_axis

N_REP, N_COND, N_TRIALS, N_STEPS, N_UNITS = 2, 2, 8, 30, 5
STILL = 10  # the hand rests for the first steps (a delayed reach's hold)
ANGLE = np.linspace(0, 2 * np.pi, N_TRIALS, endpoint=False) + 0.1


@pytest.fixture
def tuned() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    shape = (N_REP, N_COND, N_UNITS)
    return {
        "preferred_direction": rng.uniform(0, 2 * np.pi, shape),
        "tuning_depth": rng.uniform(0.1, 1.0, shape),
        "baseline": rng.normal(0, 0.5, shape),
    }


def synthetic_states(tuned: dict[str, np.ndarray], still_activity: float) -> xr.Dataset:
    """States whose units, while the hand moves, are exact cosines of the goal angle;
    while it rests, they sit at `still_activity`."""
    theta = ANGLE[:, None, None]  # (trial, time, unit) after the (replicate, condition)
    baseline, depth, preferred = (
        tuned[name][:, :, None, None]
        for name in ("baseline", "tuning_depth", "preferred_direction")
    )
    cosine = baseline + depth * np.cos(theta - preferred)
    hidden = np.broadcast_to(cosine, (N_REP, N_COND, N_TRIALS, N_STEPS, N_UNITS)).copy()
    hidden[:, :, :, :STILL] = still_activity
    # A bell-shaped speed profile after the rest, in the goal's direction.
    speed = np.zeros(N_STEPS)
    speed[STILL:] = np.sin(np.linspace(0, np.pi, N_STEPS - STILL + 2)[1:-1])
    direction = np.stack([np.cos(ANGLE), np.sin(ANGLE)], -1)
    vel = speed[None, :, None] * direction[:, None, :]
    vel = np.broadcast_to(vel, (N_REP, N_COND, N_TRIALS, N_STEPS, 2))
    leading = ("replicate", "condition", "trial", "time")
    return xr.Dataset(
        {"hidden": ((*leading, "unit"), hidden), "vel": ((*leading, "component"), vel)},
        coords={
            "replicate": np.arange(N_REP),
            "condition": np.array(["a", "b"], dtype=object),
            "trial": np.arange(N_TRIALS),
            "time": np.arange(N_STEPS) * 0.01,
            "component": np.array(["x", "y"], dtype=object),
            "unit": np.arange(N_UNITS),
            "goal_angle": ("trial", ANGLE, {"units": "rad"}),
            "diverged_at": ("replicate", [-1, -1]),
        },
        attrs={"conditions": "{}"},
    )


def test_exact_cosines_give_back_their_direction_depth_and_baseline(tuned):
    tuning = directional_tuning(synthetic_states(tuned, 0.0), speed_threshold=0.2)

    assert tuning.preferred_direction.dims == ("replicate", "condition", "unit")
    for name, expected in tuned.items():
        np.testing.assert_allclose(tuning[name], expected, atol=1e-9, err_msg=name)
    np.testing.assert_allclose(tuning.r_squared, 1, atol=1e-12)
    assert ((tuning.preferred_direction >= 0) & (tuning.preferred_direction < 2 * np.pi)).all()
    assert tuning.preferred_direction.attrs["units"] == "rad"
    assert list(tuning.diverged_at.values) == [-1, -1]


def test_activity_while_the_hand_is_still_does_not_count(tuned):
    at_rest = directional_tuning(synthetic_states(tuned, 0.0), speed_threshold=0.2)
    other_rest = directional_tuning(synthetic_states(tuned, 7.5), speed_threshold=0.2)
    # With a threshold of 0 every step counts, the rest included.
    everything = directional_tuning(synthetic_states(tuned, 7.5), speed_threshold=0.0)

    xr.testing.assert_allclose(at_rest, other_rest)
    assert not np.allclose(everything.baseline, at_rest.baseline)


def test_a_nan_replicate_gets_nan_and_a_flat_unit_no_r_squared(tuned):
    states = synthetic_states(tuned, 0.0)
    hidden, vel = states.hidden.values.copy(), states.vel.values.copy()
    hidden[1], vel[1] = np.nan, np.nan
    hidden[0, 0, :, :, 3] = 0.25
    tuning = directional_tuning(
        states.copy(data={"hidden": hidden, "vel": vel}), speed_threshold=0.2
    )

    assert np.isnan(tuning.to_array().sel(replicate=1)).all()
    np.testing.assert_allclose(tuning.tuning_depth[0, 0, 3], 0, atol=1e-12)
    assert np.isnan(tuning.r_squared[0, 0, 3])
    np.testing.assert_allclose(tuning.r_squared[0, 1], 1, atol=1e-12)


def test_too_few_directions_are_refused(tuned):
    two_angles = ("trial", np.tile([0.0, 1.0], 4))
    states = synthetic_states(tuned, 0.0).assign_coords(goal_angle=two_angles)

    with pytest.raises(ValueError, match="at least 3 directions"):
        directional_tuning(states, speed_threshold=0.2)


def _tuning_of(preferred: np.ndarray, r_squared: np.ndarray) -> xr.Dataset:
    dims = ("replicate", "condition", "unit")
    return xr.Dataset(
        {
            "preferred_direction": (dims, preferred[None, None]),
            "r_squared": (dims, r_squared[None, None]),
        }
    )


def _one(result: xr.Dataset) -> xr.Dataset:
    """The statistics of the one replicate and condition."""
    return result.isel(replicate=0, condition=0)


def test_two_opposite_modes_are_bimodal_along_their_axis_and_uniform_ones_are_not():
    rng = np.random.default_rng(0)
    n = 200
    axis = 2.0  # rad: the modes at 2.0 and 2.0 + π
    modes = axis + np.pi * rng.integers(0, 2, n) + rng.vonmises(0, 8, n)
    bimodal = _one(
        preferred_direction_axis(
            _tuning_of(np.mod(modes, 2 * np.pi), np.ones(n)), min_r_squared=0.5
        )
    )
    # E[cos 2x] = I2(8)/I0(8) = 0.77 for von Mises spread κ = 8
    assert float(bimodal.pd_bimodality) > 0.65
    np.testing.assert_allclose(float(bimodal.pd_axis), axis, atol=0.1)
    assert float(bimodal.pd_uniformity_p) < 1e-10
    uniform = _one(
        preferred_direction_axis(
            _tuning_of(rng.uniform(0, 2 * np.pi, n), np.ones(n)), min_r_squared=0.5
        )
    )
    assert float(uniform.pd_bimodality) < 0.2
    assert float(uniform.pd_uniformity_p) > 0.01
    assert int(uniform.pd_n_tuned) == n


def test_only_well_tuned_units_count():
    preferred = np.array([0.5, 0.5 + np.pi, 0.5, 2.0, 2.1])
    r_squared = np.array([0.9, 0.8, 0.7, 0.1, 0.2])
    result = _one(preferred_direction_axis(_tuning_of(preferred, r_squared), min_r_squared=0.5))
    assert int(result.pd_n_tuned) == 3
    np.testing.assert_allclose(float(result.pd_bimodality), 1, atol=1e-12)
    np.testing.assert_allclose(float(result.pd_axis), 0.5, atol=1e-12)
    none = _one(preferred_direction_axis(_tuning_of(preferred, r_squared), min_r_squared=0.95))
    assert int(none.pd_n_tuned) == 0 and np.isnan(float(none.pd_bimodality))
