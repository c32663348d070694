"""Fixed points of hand-built cells, whose points and linearisations are known exactly."""

import logging

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from conftest import tiny_model_config

import motorflow as mf
from motorflow._analysis._fixed_points import find_fixed_points, sample_starts, steady_inputs
from motorflow._evaluate import evaluate

N_TASK_INPUTS, N_INPUTS = 2, 6  # the goal, then (pos, vel) feedback
SEARCH = {"steps": 1500, "learning_rate": 0.02, "tolerance": 1e-9, "distinct_tolerance": 1e-3}


def vanilla_ensemble(weight_in, weight_rec, bias) -> eqx.Module:
    """An ensemble of vanilla tanh cells with these weights, each `(replicate, ...)`."""
    n_replicates, hidden_size = np.shape(bias)
    config = mf.ModelConfig.from_dict({"network": {"cell": "rnn", "hidden_size": hidden_size}})
    ensemble = mf.make_ensemble(
        config, n_replicates=n_replicates, n_task_inputs=N_TASK_INPUTS, key=jax.random.key(0)
    )
    weights = tuple(jnp.asarray(w, jnp.float32) for w in (weight_in, weight_rec, bias))
    return eqx.tree_at(
        lambda e: (e.network.cell.weight_in, e.network.cell.weight_rec, e.network.cell.bias),
        ensemble,
        weights,
    )


def self_exciting(gain: float, n_replicates: int = 1, *, second: float = 0.5):
    """Two units, no input: ``h' = tanh(diag(gain, second) h)``."""
    weight_rec = np.broadcast_to(np.diag([gain, second]), (n_replicates, 2, 2))
    return vanilla_ensemble(
        np.zeros((n_replicates, 2, N_INPUTS)), weight_rec, np.zeros((n_replicates, 2))
    )


def solve_tanh(gain: float) -> float:
    """The positive root of ``tanh(gain h) = h`` (gain > 1), by iterating the stable map."""
    h = 1.0
    for _ in range(200):
        h = np.tanh(gain * h)
    return h


def test_without_recurrence_the_one_fixed_point_is_the_input_drive_and_stable():
    rng = np.random.default_rng(0)
    n_rep, n_trials, n_starts, hidden = 2, 3, 5, 4
    weight_in = rng.normal(0, 0.5, (n_rep, hidden, N_INPUTS))
    bias = rng.normal(0, 0.3, (n_rep, hidden))
    ensemble = vanilla_ensemble(weight_in, np.zeros((n_rep, hidden, hidden)), bias)
    inputs = rng.normal(0, 1, (n_trials, N_INPUTS)).astype(np.float32)
    starts = rng.normal(0, 1, (n_rep, n_trials, n_starts, hidden)).astype(np.float32)

    found = find_fixed_points(ensemble, inputs, starts, **SEARCH)

    expected = np.tanh(np.einsum("rhi,ti->rth", weight_in, inputs) + bias[:, None])
    assert found.converged.all()
    np.testing.assert_allclose(
        found.fixed_point, np.broadcast_to(expected[:, :, None], starts.shape), atol=1e-4
    )
    # The Jacobian of tanh(W_in u + b) with respect to h is zero.
    np.testing.assert_allclose(found.eigenvalue_real, 0, atol=1e-6)
    np.testing.assert_allclose(found.eigenvalue_imag, 0, atol=1e-6)
    assert found.stable.all()
    # Every start found the same point: one distinct point per replicate and input.
    assert (found.distinct.sum("start") == 1).all()
    assert found.distinct.isel(start=0).all()


def test_a_self_exciting_unit_has_an_unstable_origin_between_two_stable_points():
    gain, h_star = 2.0, solve_tanh(2.0)
    ensemble = self_exciting(gain, n_replicates=2)
    # Past the local maximum of q (|tanh(2h) - h| peaks at h = 0.44) a start slides
    # to ±h*, short of it to the origin; duplicates of each point.
    x = [0.0, 0.2, -0.3, 0.7, 1.5, -0.7, -1.2]
    starts = np.stack([x, np.full(len(x), 0.3)], -1)
    starts = np.broadcast_to(starts, (2, 1, len(x), 2)).astype(np.float32)

    found = find_fixed_points(ensemble, np.zeros((1, N_INPUTS), np.float32), starts, **SEARCH)

    assert found.converged.all()
    expected_x = np.array([0, 0, 0, h_star, h_star, -h_star, -h_star])
    np.testing.assert_allclose(found.fixed_point.isel(unit=0)[0, 0], expected_x, atol=1e-4)
    np.testing.assert_allclose(found.fixed_point.isel(unit=1), 0, atol=1e-4)
    # Jacobian diag(gain (1 - tanh²(gain x)), 0.5 (1 - 0)) at (x, 0), largest first.
    origin = [gain, 0.5]
    attractor = [0.5, gain * (1 - h_star**2)]
    eigenvalues = [origin] * 3 + [attractor] * 4
    np.testing.assert_allclose(found.eigenvalue_real[0, 0], eigenvalues, atol=1e-4)
    np.testing.assert_allclose(found.eigenvalue_imag, 0, atol=1e-6)
    np.testing.assert_array_equal(found.stable[0, 0], [False] * 3 + [True] * 4)
    np.testing.assert_allclose(found.max_eigenvalue_magnitude[0, 0, 0], gain, rtol=1e-5)
    np.testing.assert_array_equal(found.distinct[0, 0], [1, 0, 0, 1, 0, 1, 0])


def test_a_rotation_linearises_to_a_complex_pair():
    radius, angle = 0.9, 0.5
    rotation = radius * np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    ensemble = vanilla_ensemble(np.zeros((1, 2, N_INPUTS)), rotation[None], np.zeros((1, 2)))
    starts = np.random.default_rng(1).normal(0, 0.5, (1, 1, 4, 2)).astype(np.float32)

    found = find_fixed_points(ensemble, np.zeros((1, N_INPUTS), np.float32), starts, **SEARCH)

    assert found.converged.all() and found.stable.all()
    np.testing.assert_allclose(found.fixed_point, 0, atol=1e-4)
    np.testing.assert_allclose(found.eigenvalue_real, radius * np.cos(angle), atol=1e-4)
    imag = np.sort(found.eigenvalue_imag.values, axis=-1)
    pair = np.broadcast_to([-1, 1], imag.shape) * radius * np.sin(angle)
    np.testing.assert_allclose(imag, pair, atol=1e-4)
    np.testing.assert_allclose(found.max_eigenvalue_magnitude, radius, atol=1e-4)


def test_a_nan_replicate_finds_nothing_and_the_others_are_unaffected():
    ensemble = self_exciting(2.0, n_replicates=2)
    starts = np.tile(np.float32([[[[1.2, 0.1], [-0.8, 0.0]]]]), (2, 1, 1, 1))
    inputs = np.zeros((1, N_INPUTS), np.float32)
    alone = find_fixed_points(ensemble, inputs, starts, **SEARCH)
    starts[1] = np.nan

    angle = {"goal_angle": ("trial", [0.3])}
    found = find_fixed_points(ensemble, inputs, starts, **SEARCH, coords=angle)

    assert np.isnan(found.fixed_point[1]).all() and np.isnan(found.speed[1]).all()
    assert not (found.converged[1] | found.distinct[1] | found.stable[1]).any()
    healthy = found.isel(replicate=0).drop_vars("goal_angle")
    xr.testing.assert_identical(healthy, alone.isel(replicate=0))
    assert found.goal_angle.dims == ("trial",)


@pytest.fixture(scope="module")
def states():
    config = tiny_model_config(cell="rnn")
    task = mf.Task(mf.TaskConfig.from_dict({"n_steps": 8, "eval": {"n_directions": 3}}))
    ensemble = mf.make_ensemble(
        config, n_replicates=2, n_task_inputs=task.n_inputs, key=jax.random.key(0)
    )
    return ensemble, task, evaluate(ensemble, task, config, key=jax.random.key(1))


def test_starts_are_the_replicates_own_states_plus_noise_of_the_scale_asked(states):
    _, _, states = states
    pooled = states.hidden.transpose("replicate", ..., "unit").values
    pooled = pooled.reshape(2, -1, pooled.shape[-1])
    key = jax.random.key(3)

    exact = np.asarray(sample_starts(states, n_starts=50, noise=0.0, key=key))
    noisy = np.asarray(sample_starts(states, n_starts=50, noise=0.1, key=key))

    assert exact.shape == (2, states.sizes["trial"], 50, states.sizes["unit"])
    for replicate in range(2):
        distance = np.abs(exact[replicate].reshape(-1, 1, exact.shape[-1]) - pooled[replicate])
        assert (distance.max(-1).min(-1) == 0).all()  # each start is one of the states
        jitter_std = (noisy[replicate] - exact[replicate]).std()
        np.testing.assert_allclose(jitter_std, 0.1 * pooled[replicate].std(), rtol=0.1)


def test_another_experiment_of_the_same_shapes_draws_its_starts_without_tracing(states, caplog):
    # A warm worker analyses a seed sweep's experiments one after another: those of
    # equal shapes trace and compile the draw once (a program traced at every call
    # cost each analysis job its tracing and a compile-cache read).
    _, _, states = states
    other = states.assign(hidden=states.hidden * 2.0 + 1.0)  # another experiment's

    def traced(states, n_starts, seed):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="jax"), jax.log_compiles():
            starts = sample_starts(states, n_starts=n_starts, noise=0.0, key=jax.random.key(seed))
        return starts, [
            r.message for r in caplog.records if r.message.startswith("Finished tracing")
        ]

    traced(states, 7, 0)
    starts, traces = traced(other, 7, 1)
    assert traces == []
    assert np.isin(np.asarray(starts), other.hidden.values).all()  # from its own states
    assert traced(other, 8, 1)[1]  # other shapes: a program of their own


def test_the_same_key_gives_the_same_points_bit_for_bit_and_another_key_other_starts(states):
    ensemble, task, states = states
    inputs = steady_inputs(task)
    draw = {"n_starts": 4, "noise": 0.2}
    starts = sample_starts(states, **draw, key=jax.random.key(5))
    np.testing.assert_array_equal(starts, sample_starts(states, **draw, key=jax.random.key(5)))
    assert not np.array_equal(starts, sample_starts(states, **draw, key=jax.random.key(6)))

    search = {**SEARCH, "steps": 200}
    first = find_fixed_points(ensemble, inputs, starts, **search)
    xr.testing.assert_identical(first, find_fixed_points(ensemble, inputs, starts, **search))
    n_trials, n_units = states.sizes["trial"], states.sizes["unit"]
    assert first.fixed_point.shape == (2, n_trials, 4, n_units)


def test_steady_inputs_are_the_goal_with_a_hand_at_rest_on_it():
    reach = mf.Task(mf.TaskConfig.from_dict({"n_steps": 10, "eval": {"n_directions": 4}}))
    goals = np.asarray(reach.eval_trials().trials.goal_pos)

    inputs = np.asarray(steady_inputs(reach))

    assert inputs.shape == (4, reach.n_inputs + 4)
    np.testing.assert_array_equal(inputs[:, :2], goals)  # task input: the goal
    np.testing.assert_array_equal(inputs[:, 2:4], goals)  # feedback position
    np.testing.assert_array_equal(inputs[:, 4:], 0)  # feedback velocity


def test_steady_inputs_of_a_delayed_reach_have_the_go_cue_on():
    delayed = mf.Task(
        mf.TaskConfig.from_dict(
            {"kind": "delayed_reach", "n_steps": 10, "go_step": [2, 6], "eval": {"n_directions": 3}}
        )
    )
    goals = np.asarray(delayed.eval_trials().trials.goal_pos)

    inputs = np.asarray(steady_inputs(delayed))

    assert inputs.shape == (3, 3 + 4)
    np.testing.assert_array_equal(inputs[:, :2], goals)
    np.testing.assert_array_equal(inputs[:, 2], 1)  # the go cue, on once the reach is over
    np.testing.assert_array_equal(inputs[:, 3:5], goals)
    np.testing.assert_array_equal(inputs[:, 5:], 0)
