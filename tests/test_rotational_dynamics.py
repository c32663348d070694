"""The rotational-dynamics hallmark (Churchland et al. 2012) in a small trained network:
after training on delayed center-out reaches, a rotation explains much of what a linear
dynamical system explains of the hidden states around the movement, far more than in
the same data with each unit's reach directions shuffled (Michaels et al. 2016) and
than in the untrained network; but no more than in random data with the states'
covariances across time, units and directions (Elsayed & Cunningham 2017's
surrogates), as in the shipped config's networks; and their preparation lies in the
readout's null space (Kaufman et al. 2014)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import tiny_train_config

import motorflow as mf
import motorflow.pipeline as mfp

N_REPLICATES, N_BATCHES = 2, 150


def reaches(n_batches: int):
    """The evaluation states of point-mass networks (32 GRU units, dt 0.05 s) trained
    for `n_batches` on delayed reaches in 8 directions (0: untrained), and the task."""
    config = {"n_steps": 30, "go_step": [8, 14], "eval": {"n_directions": 8, "distances": [0.5]}}
    task = mf.Task(mf.TaskConfig.from_dict({"kind": "delayed_reach", **config}))
    model = mf.ModelConfig.from_dict(
        {"network": {"hidden_size": 32}, "feedback": {"noise_std": 0.01}}
    )
    keys = mfp.experiment_keys(0)
    ensemble = mf.make_ensemble(model, n_replicates=N_REPLICATES, n_task_inputs=3, key=keys["init"])
    if n_batches:
        train = tiny_train_config(
            n_replicates=N_REPLICATES,
            n_batches=n_batches,
            batch_size=32,
            validation={"every": 50},
            log={"every": 50},
            checkpoint={"every": 50},
        )
        trials = task.training_trials(
            key=keys["trials"], n_replicates=N_REPLICATES, n_batches=n_batches, batch_size=32
        )
        ensemble = mf.train(ensemble, trials, task, train, key=keys["train"], progress=False)
        ensemble = ensemble.ensemble
    return mf.evaluate(ensemble, task, model, key=keys["evaluate"]), task, model, ensemble


@pytest.fixture(scope="module")
def fits():
    """jPCA from 2 steps before the go cue to 0.5 s after it (the movement), of the
    trained and the untrained networks, and their output-potent and output-null
    activity (under ``"<name> spaces"``)."""
    result = {}
    for name, n_batches in (("trained", N_BATCHES), ("untrained", 0)):
        states, task, model, ensemble = reaches(n_batches)
        go = task.config.evaluation_go_step * model.dt
        result[name] = mf.hidden_jpca(
            states, start=go - 2 * model.dt, stop=go + 0.5, n_shuffles=100, n_surrogates=100
        ).isel(condition=0)
        weight = np.asarray(ensemble.network.readout.weight)
        result[f"{name} spaces"] = mf.output_spaces(states, weight).isel(condition=0)
    return result


def test_a_trained_network_rotates_more_than_its_shuffled_data_and_an_untrained_one(fits):
    trained, untrained = fits["trained"], fits["untrained"]
    skew, ratio = trained.jpca_r2_skew.values, trained.jpca_r2_ratio.values
    # Measured: R²_skew 0.39-0.43, ratio 0.50-0.52, shuffled R²_skew p95 0.13-0.19;
    # untrained R²_skew 0.05-0.10.
    assert (ratio > 0.35).all(), ratio
    assert (skew > 0.25).all(), skew
    assert (skew > 1.6 * trained.jpca_shuffled_r2_skew.values).all()
    assert (skew > untrained.jpca_r2_skew.values.max() + 0.15).all()
    # The rotation turns: at most a few turns a second, not step-to-step noise.
    assert (trained.jpca_frequency.values > 0.2).all() and (trained.jpca_frequency < 5).all()


def test_the_jpc_plane_turns_counter_clockwise_around_the_movement(fits):
    """Churchland's rosette: in the top plane the states mostly turn the same way, so
    the angle from each state to its next step's change is near +90° (within 30°, the
    notes' proposal; measured 81-85°; the untrained network's 35-46°: its states drift
    outward as much as they turn)."""
    path = fits["trained"].jpca_projection.values  # (replicate, trial, time, jpc)
    step = np.diff(path, axis=-2)
    state = path[..., :-1, :]
    cross = state[..., 0] * step[..., 1] - state[..., 1] * step[..., 0]
    dot = (state * step).sum(-1)
    angle = np.degrees(np.arctan2(cross, dot))
    weight = np.hypot(*np.moveaxis(state, -1, 0))
    mean = [np.average(angle[r], weights=weight[r]) for r in range(N_REPLICATES)]
    assert all(60 < value < 120 for value in mean), mean


def test_the_rotation_is_no_more_than_the_covariances_give(fits):
    """Against tensor maximum entropy surrogates the trained networks' ratio is at
    chance: measured p 0.22 and 0.31 (100 surrogates; surrogates' 95th percentile 0.63,
    0.72 against the data's 0.50, 0.57), as the shipped config's networks (p 0.14-0.78,
    docs/explanation/rotational-dynamics.md). A claim of rotation beyond the covariances
    would have to undo this test and that page."""
    trained = fits["trained"]
    assert (trained.jpca_surrogate_p.values > 0.05).all(), trained.jpca_surrogate_p.values
    p95 = np.percentile(trained.jpca_surrogate_r2_ratio.values, 95, axis=-1)
    assert (p95 > trained.jpca_r2_ratio.values).all()


def test_preparation_lies_in_the_readouts_null_space_after_training(fits):
    """Kaufman et al. 2014 in the point mass's networks: before the go cue the reaches'
    activity differs almost only in directions the readout cannot see, while during the
    movement the potent space holds most of it; an untrained network spreads both
    epochs' activity about evenly (the potent space is 2 of 32 directions: 0.0625).
    Measured: preparatory 0.012 and 0.003, movement 0.54 and 0.54; untrained
    0.046-0.063."""
    trained, untrained = fits["trained spaces"], fits["untrained spaces"]
    isotropic = float(trained.output_isotropic_share[0])
    share = trained.output_potent_share
    assert (share.sel(epoch="preparatory") < isotropic / 3).all()
    assert (share.sel(epoch="movement") > 4 * isotropic).all()
    naive = untrained.output_potent_share
    assert (abs(naive - isotropic) < 0.5 * isotropic + 0.05).all()
