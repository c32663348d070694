"""Activity-dependent weight updates after the optimizer's step: Hebbian and Oja rules."""

import jax
import numpy as np
import pytest
from conftest import assert_trees_equal, raises_config_error

import motorflow as mf
from motorflow._training._driver import _chunk_inputs


def first_batch(setup):
    """The trainer, its initial state and the state after the first batch, run as
    `train` runs it."""
    trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
    plan = mf.TrainingPlan(setup.config)
    state = trainer.init(key=jax.random.split(setup.train_key)[0])
    after, _ = trainer.run_chunk(state, *_chunk_inputs(setup.trials, 0, 1, plan))
    return trainer, state, after


def first_batch_states(setup, trainer, state, r):
    """Replicate r's hidden states and outputs in the first batch, by hand."""
    key = jax.random.split(jax.random.fold_in(state.key, 0), setup.config.n_replicates)[r]
    params = jax.tree.map(lambda x: x[r], state.params)
    frozen = jax.tree.map(lambda x: x[r], trainer.frozen)
    trials = jax.tree.map(lambda x: x[r, 0], setup.trials)
    _, (_, rollouts) = trainer._replicate_loss(params, frozen, trials, key, states=True)
    return np.asarray(rollouts.hidden, np.float64), np.asarray(rollouts.output, np.float64)


def mean_outer(post, pre):
    post, pre = post.reshape(-1, post.shape[-1]), pre.reshape(-1, pre.shape[-1])
    return post.T @ pre / len(post)


def no_self(delta):
    return delta * (1 - np.eye(len(delta)))


def test_a_hebbian_rule_adds_the_batch_averaged_outer_product_of_the_hidden_states(tiny):
    rule = {"kind": "hebbian", "rate": 0.5, "target": "recurrent", "batches": {"at": [1, 3]}}
    setup = tiny(network={"cell": "rnn"}, trainable=["network.readout"], update_rules=[rule])
    trainer, before, after = first_batch(setup)
    weight = np.asarray(before.params.network.cell.weight_rec, np.float64)
    for r in range(setup.config.n_replicates):
        hidden, _ = first_batch_states(setup, trainer, before, r)
        expected = weight[r] + 0.5 * no_self(mean_outer(hidden, hidden))
        got = after.params.network.cell.weight_rec[r]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert np.abs(after.params.network.cell.weight_rec - weight).max() > 1e-3
    # The optimizer trains only the readout; it does not step the rule's matrix.
    (adam, _) = after.opt_state[-1].network.cell.weight_rec
    assert adam.count.tolist() == [0] * 3


def test_a_rule_off_its_schedule_leaves_the_weights_bit_identical(tiny):
    rule = {"kind": "hebbian", "rate": 0.5, "batches": {"at": [2]}}
    setup = tiny(network={"cell": "rnn"}, trainable=["network.readout"], update_rules=[rule])
    _, before, after = first_batch(setup)
    assert_trees_equal(after.params.network.cell, before.params.network.cell)
    result = setup.train()
    assert not np.array_equal(
        result.state.params.network.cell.weight_rec, before.params.network.cell.weight_rec
    )


def test_oja_acts_on_a_grus_candidate_block_with_the_previous_steps_states(tiny):
    rate = 0.3
    rule = {"kind": "oja", "rate": rate, "lag": 1}
    setup = tiny(trainable=["network.readout"], update_rules=[rule])
    trainer, before, after = first_batch(setup)
    hidden_size = setup.ensemble.network.cell.hidden_size
    candidate = slice(2 * hidden_size, 3 * hidden_size)
    old = np.asarray(before.params.network.cell.gru.weight_hh, np.float64)
    new = np.asarray(after.params.network.cell.gru.weight_hh)
    for r in range(setup.config.n_replicates):
        hidden, _ = first_batch_states(setup, trainer, before, r)
        previous = np.concatenate([np.zeros_like(hidden[:, :1]), hidden[:, :-1]], axis=1)
        weight = old[r, candidate]
        decay = np.mean(hidden.reshape(-1, hidden_size) ** 2, axis=0)[:, None] * weight
        expected = weight + rate * no_self(mean_outer(hidden, previous) - decay)
        np.testing.assert_allclose(new[r, candidate], expected, rtol=1e-5, atol=1e-6)
        # The reset and update gates' rows are not the rule's.
        np.testing.assert_array_equal(new[r, : 2 * hidden_size], old[r, : 2 * hidden_size])


def test_a_readout_rule_pairs_the_outputs_with_the_hidden_states(tiny):
    rule = {"kind": "hebbian", "rate": 0.2, "target": "readout"}
    setup = tiny(trainable=["network.cell"], update_rules=[rule])
    trainer, before, after = first_batch(setup)
    old = np.asarray(before.params.network.readout.weight, np.float64)
    for r in range(setup.config.n_replicates):
        hidden, output = first_batch_states(setup, trainer, before, r)
        expected = old[r] + 0.2 * mean_outer(output, hidden)  # the diagonal too
        np.testing.assert_allclose(
            after.params.network.readout.weight[r], expected, rtol=1e-5, atol=1e-6
        )


def test_ojas_rule_keeps_the_weights_bounded_where_hebbs_grows_them(tiny):
    norms = {}
    for kind in ("hebbian", "oja"):
        for rate in (0.5, 2.0):
            rule = {"kind": kind, "rate": rate}
            setup = tiny(
                network={"cell": "rnn"}, trainable=["network.readout"], update_rules=[rule]
            )
            weight = setup.train().state.params.network.cell.weight_rec
            norms[kind, rate] = float(np.max(np.linalg.norm(weight, axis=-1)))
    # Oja's rows settle at a norm whatever the rate; Hebb's grow with it, without bound.
    assert norms["oja", 2.0] < 1.1 * norms["oja", 0.5]
    assert norms["hebbian", 2.0] > 3 * norms["hebbian", 0.5] > 10 * norms["oja", 0.5]


@pytest.mark.parametrize(
    ("rule", "path"),
    [
        ({"kind": "anti_hebbian", "rate": 1}, "update_rules[0].kind"),
        ({"kind": "oja", "rate": 0}, "update_rules[0].rate"),
        ({"kind": "oja", "rate": 1, "target": "readout", "lag": 1}, "update_rules[0].lag"),
        ({"kind": "oja", "rate": 1, "lag": 2}, "update_rules[0].lag"),
        ({"kind": "oja", "rate": 1, "target": "input"}, "update_rules[0].target"),
        ({"kind": "hebbian", "rate": 1, "batches": {"at": [41]}}, "update_rules[0].batches.at"),
    ],
)
def test_a_bad_rule_is_named_by_its_key(rule, path):
    with raises_config_error(path):
        mf.TrainConfig.from_dict({"n_batches": 40, "update_rules": [rule]})
