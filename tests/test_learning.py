"""Learning rules: full and truncated backpropagation through time."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_trees_equal, tiny_model_config, tiny_task

import motorflow as mf
from motorflow._learning import LEARNING_RULES, TruncatedBPTT

N_STEPS = 12


def _hidden_jacobian(window: int | None) -> np.ndarray:
    """d hidden[t] / d task_input[s] of one noisy rollout, `(t, s)` norms."""
    model = mf.build_model(tiny_model_config(), n_task_inputs=2, key=jax.random.key(1))
    task_input = jnp.tile(jnp.asarray([0.3, -0.2]), (N_STEPS, 1))

    def hidden(task_input):
        rollout = model.rollout(
            jnp.zeros(2), jnp.zeros(2), task_input, key=jax.random.key(2), gradient_window=window
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
            jnp.zeros(2), jnp.zeros(2), task_input, key=jax.random.key(2), gradient_window=w
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


def test_truncated_training_resumes_bitwise(tiny, tmp_path):
    setup = tiny(n_batches=20, learning={"kind": "truncated_bptt", "window": 3})
    uninterrupted = setup.train()

    def interrupt_at_10(done, history):
        if done == 10:
            raise Interrupt

    with pytest.raises(Interrupt):
        setup.train(checkpoint_dir=tmp_path, on_log=interrupt_at_10)
    resumed = setup.train(checkpoint_dir=tmp_path)
    assert_trees_equal(uninterrupted.state, resumed.state)
    assert_trees_equal(uninterrupted.history, resumed.history)


def test_the_registry_names_every_rule_and_configs_pick_them_by_kind():
    assert set(LEARNING_RULES) == {"bptt", "truncated_bptt"}
    config = mf.TrainConfig.from_dict({"learning": {"kind": "truncated_bptt", "window": 7}})
    assert config.learning == TruncatedBPTT(window=7)
    assert mf.TrainConfig().learning.kind == "bptt"
