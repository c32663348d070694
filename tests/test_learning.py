"""Learning rules: full and truncated backpropagation through time."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_trees_equal, tiny_model_config, tiny_task

import motorflow as mf
from motorflow._model._ensemble import take_replicate
from motorflow._model._episode import run_trials
from motorflow._training.rules import LEARNING_RULES, TruncatedBPTT, target_outputs

N_STEPS = 12


def _hidden_jacobian(window: int | None) -> np.ndarray:
    """d hidden[t] / d task_input[s] of one noisy rollout, `(t, s)` norms."""
    model = mf.build_model(tiny_model_config(), n_task_inputs=2, key=jax.random.key(1))
    task_input = jnp.tile(jnp.asarray([0.3, -0.2]), (N_STEPS, 1))

    def hidden(task_input):
        rollout = model.rollout(
            jnp.zeros(2), jnp.zeros(2), task_input, key=jax.random.key(2), options=mf.RolloutOptions(gradient_window=window)
        )
        return rollout.hidden

    jacobian = jax.jacrev(hidden)(task_input)  # (t, unit, s, input)
    return np.linalg.norm(np.asarray(jacobian), axis=(1, 3))


@pytest.mark.parametrize("window", [1, 4, 5])
def test_no_gradient_flows_back_across_a_window_boundary(window):
    norms = _hidden_jacobian(window)
    for t in range(N_STEPS):
        for s in range(N_STEPS):
            # Boundaries at window, 2 window, ...: step s reaches step t if none lies in (s, t].
            crosses = any(s < k <= t for k in range(window, N_STEPS, window))
            if s > t or crosses:
                assert norms[t, s] == 0, (t, s)
            else:
                assert norms[t, s] > 0, (t, s)


def test_the_forward_rollout_is_the_same_whatever_the_window():
    model = mf.build_model(tiny_model_config(), n_task_inputs=2, key=jax.random.key(1))
    task_input = jnp.tile(jnp.asarray([0.3, -0.2]), (N_STEPS, 1))
    runs = [
        model.rollout(
            jnp.zeros(2), jnp.zeros(2), task_input, key=jax.random.key(2), options=mf.RolloutOptions(gradient_window=w)
        )
        for w in (None, 3)
    ]
    assert_trees_equal(runs[0], runs[1])


def test_a_window_as_long_as_the_rollout_trains_bitwise_as_full_bptt(tiny):
    full = tiny(n_batches=10).train()
    window = tiny(n_batches=10, learning={"kind": "truncated_bptt", "window": tiny_task().n_steps})
    truncated = window.train()
    assert_trees_equal(full.state.params, truncated.state.params)
    assert_trees_equal(full.state.opt_state, truncated.state.opt_state)
    assert_trees_equal(full.history, truncated.history)


def test_a_short_window_trains_to_other_weights_and_still_learns(tiny):
    full = tiny(n_batches=40).train()
    short = tiny(n_batches=40, learning={"kind": "truncated_bptt", "window": 2}).train()
    leaves = jax.tree.leaves(full.state.params), jax.tree.leaves(short.state.params)
    assert any(not np.array_equal(a, b) for a, b in zip(*leaves))
    loss = short.history["loss"]["total"]
    assert np.mean(loss[-5:]) < np.mean(loss[:5])


class Interrupt(Exception):
    pass


RULES = {
    "truncated_bptt": ({}, {"learning": {"kind": "truncated_bptt", "window": 3}}),
    "updates_within_rollouts": (
        {},
        {"learning": {"kind": "truncated_bptt", "window": 3, "update_every": 5}},
    ),
    "eprop": ({"cell": "leaky"}, {"learning": {"kind": "eprop", "trace_clip": 5.0}}),
    "eprop_symmetric": ({"cell": "rnn"}, {"learning": {"kind": "eprop", "feedback": "symmetric"}}),
    "eprop_online_in_pieces": (
        {"cell": "gru"},
        {"learning": {"kind": "eprop", "online": True, "segment_steps": 4}},
    ),
    "rls": ({"cell": "leaky"}, {"learning": {"kind": "rls"}, "trainable": ["network.readout"]}),
    "online_rls": (
        {"cell": "leaky"},
        {"learning": {"kind": "rls", "update_every": 1}, "trainable": ["network.readout"]},
    ),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_training_with_each_rule_resumes_bitwise(tiny, tmp_path, rule):
    network, overrides = RULES[rule]
    setup = tiny(network=network, n_batches=20, **overrides)
    uninterrupted = setup.train()

    def interrupt_at_10(done, history):
        if done == 10:
            raise Interrupt

    with pytest.raises(Interrupt):
        setup.train(checkpoint_dir=tmp_path, on_log=interrupt_at_10)
    resumed = setup.train(checkpoint_dir=tmp_path)
    assert resumed.record["resumed_from_batch"] == 10
    assert_trees_equal(uninterrupted.state, resumed.state)
    assert_trees_equal(uninterrupted.history, resumed.history)


def test_eprop_lowers_the_loss(tiny):
    network, overrides = RULES["eprop"]
    result = tiny(network=network, n_batches=40, **overrides).train()
    loss = result.history["loss"]["total"]
    assert np.all(np.mean(loss[-5:], axis=0) < np.mean(loss[:5], axis=0))


def _target_error(setup, ensemble) -> np.ndarray:
    """Per replicate, the mean squared distance of the outputs to RLS's targets."""
    rule = setup.config.learning
    trials = jax.tree.map(lambda x: x[0, 0], setup.trials)
    keys = jax.random.split(jax.random.key(9), trials.init_pos.shape[0])

    def one(model):
        rollouts, _ = run_trials(model, setup.task, trials, keys)
        targets = jax.vmap(
            lambda trial: target_outputs(
                model, trial, jnp.arange(setup.task.n_steps), rule.movement_time
            )
        )(trials)
        return jnp.mean((rollouts.output - targets) ** 2)

    return np.asarray(eqx.filter_vmap(one)(ensemble))


def test_rls_brings_the_outputs_toward_their_targets(tiny):
    network, overrides = RULES["rls"]
    setup = tiny(network=network, n_batches=40, **overrides)
    result = setup.train()
    assert np.all(_target_error(setup, result.ensemble) < _target_error(setup, setup.ensemble))


def test_an_rls_step_sets_the_readout_to_the_ridge_fit_of_its_batch(tiny):
    network, overrides = RULES["rls"]
    setup = tiny(network=network, n_batches=1, **overrides)
    rule = setup.config.learning
    trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
    params = take_replicate(trainer.initial_params, 0)
    batch = trainer.replicate_batch(
        params,
        take_replicate(trainer.frozen, 0),
        jax.tree.map(lambda x: x[0, 0], setup.trials),
        key=jax.random.key(1),
    )
    state = rule.init(batch.model, key=None)
    (_, (_, rollouts)), _, state = rule.value_and_grad(batch, params, state, states=True)
    model, _ = rule.apply(batch, batch.model, state, rollouts)
    hidden = np.asarray(rollouts.hidden).reshape(-1, 8)
    features = np.concatenate([hidden, np.ones((len(hidden), 1))], axis=1)
    targets = jax.vmap(
        lambda trial: target_outputs(
            batch.model, trial, jnp.arange(setup.task.n_steps), rule.movement_time
        )
    )(batch.trials)
    readout = batch.model.network.readout
    start = np.concatenate([readout.weight.T, readout.bias[None]], axis=0)
    normal = features.T @ features + rule.regularization * np.eye(9)
    rhs = features.T @ np.asarray(targets).reshape(-1, 2) + rule.regularization * start
    ridge = np.linalg.solve(normal, rhs)
    found = np.concatenate([model.network.readout.weight.T, model.network.readout.bias[None]])
    np.testing.assert_allclose(found, ridge, rtol=2e-3, atol=2e-3 * np.abs(ridge).max())


@pytest.mark.parametrize("rule", ["rls", "online_rls"])
def test_rls_sets_the_readout_and_leaves_the_rest(tiny, rule):
    network, overrides = RULES[rule]
    setup = tiny(network=network, n_batches=5, **overrides)
    result = setup.train()
    before, after = setup.ensemble.network, result.ensemble.network
    assert not np.array_equal(before.readout.weight, after.readout.weight)
    assert_trees_equal(before.cell, after.cell)
    # The information matrix of [hidden; 1] per replicate: I plus the samples' outer
    # products (5 batches of 8 trials x 12 steps), the last entry counting them.
    information = np.asarray(result.state.learning_state["information"])
    assert information.shape == (3, 9, 9)
    np.testing.assert_allclose(information[:, -1, -1], 1 + 5 * 8 * 12)
    assert np.all(np.linalg.eigvalsh(information) >= 1 - 1e-4)


def test_online_rls_changes_the_readout_within_the_rollouts_it_learns_from(tiny):
    # Every step's update acts on the next step, so the trials run (and the samples
    # learned from) differ from those of one update per rollout; one segment as long
    # as the trial is one update per rollout.
    network, overrides = RULES["rls"]
    learning = overrides["learning"]
    runs = {
        every: tiny(
            network=network,
            n_batches=5,
            **{**overrides, "learning": {**learning, "update_every": every}},
        ).train()
        for every in (None, 1, 12)
    }
    readout = {every: run.state.params.network.readout.weight for every, run in runs.items()}
    assert not np.allclose(readout[1], readout[None])
    np.testing.assert_allclose(readout[12], readout[None], rtol=1e-4, atol=1e-5)
    losses = {every: run.history["loss"]["total"] for every, run in runs.items()}
    # The first batch starts from the same readout: only within-rollout updates differ.
    assert not np.allclose(losses[1][0], losses[None][0])
    np.testing.assert_allclose(losses[12], losses[None], rtol=1e-4)


def test_the_registry_names_every_rule_and_configs_pick_them_by_kind():
    assert set(LEARNING_RULES) == {"bptt", "truncated_bptt", "eprop", "rls"}
    config = mf.TrainConfig.from_dict({"learning": {"kind": "truncated_bptt", "window": 7}})
    assert config.learning == TruncatedBPTT(window=7)
    assert mf.TrainConfig().learning.kind == "bptt"
