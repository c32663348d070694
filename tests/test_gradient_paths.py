"""BPTT with the gradient's path through the sensory feedback or the recurrence cut:
the same rollout values, and exact references (symmetric e-prop; networks without
the cut path)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import (
    replicate_batch,
    tiny_model_config,
    tiny_task,
    tiny_train_config,
)

import motorflow as mf
from motorflow._model._attribute_paths import attribute_getter
from motorflow._training.rules import BPTT, EProp, TruncatedBPTT

# Where each cell keeps the matrix that maps the hidden state to the next one.
_RECURRENT = {"rnn": "network.cell.weight_rec", "leaky": "network.cell.rnn.weight_rec"}
_RECURRENT["gru"] = "network.cell.gru.weight_hh"
_INPUT = {"rnn": "network.cell.weight_in", "leaky": "network.cell.rnn.weight_in"}
_INPUT["gru"] = "network.cell.gru.weight_ih"


def _setup(cell: str):
    task = tiny_task()
    config = tiny_train_config(n_replicates=1)
    ensemble = mf.make_ensemble(
        tiny_model_config(cell=cell),
        n_replicates=1,
        n_task_inputs=task.n_inputs,
        key=jax.random.key(3),
    )
    return task, config, ensemble


def _gradients(ensemble, task, config, rule):
    params, batch = replicate_batch(ensemble, task, config)
    return rule.value_and_grad(batch, params, None)[1]


def _assert_close(found, want, **tolerance):
    for a, b in zip(jax.tree.leaves(found), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(a, b, **tolerance)


def _differ(a, b) -> bool:
    return any(
        not np.allclose(x, y, rtol=1e-3, atol=1e-7)
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


def _zeroed(ensemble, path: str, columns: slice = slice(None)):
    get = attribute_getter(path)
    return eqx.tree_at(get, ensemble, get(ensemble).at[..., columns].set(0.0))


@pytest.mark.parametrize("cell", ["rnn", "leaky"])
def test_symmetric_eprop_is_bptt_without_the_feedback_path_and_beyond_the_leak(cell):
    # e-prop's learning signal is the loss's derivative through the plant alone, and
    # its traces follow each unit's leak (1 - a), treating the other units' states as
    # inputs: exactly BPTT with the feedback path cut and the recurrence cut to the
    # leak, whatever the recurrent weights (nonzero here, from the default draw).
    # Checked by breaking it: with the feedback path kept, or the recurrence not cut
    # (or cut entirely, dropping the leak), the gradients differ and this fails.
    task, config, ensemble = _setup(cell)
    recurrent = attribute_getter(_RECURRENT[cell])(ensemble)
    assert np.all(np.abs(np.asarray(recurrent)) > 0)
    eprop = _gradients(ensemble, task, config, EProp(feedback="symmetric"))
    cut = _gradients(ensemble, task, config, BPTT(through_feedback=False, recurrence="leak"))
    _assert_close(eprop, cut, rtol=1e-4, atol=1e-7)
    full = _gradients(ensemble, task, config, BPTT())
    assert _differ(cut, full)
    # Each cut alone is another gradient again.
    for rule in (BPTT(through_feedback=False), BPTT(recurrence="leak")):
        assert _differ(_gradients(ensemble, task, config, rule), cut), rule


@pytest.mark.parametrize("cell", ["rnn", "leaky", "gru"])
def test_cutting_the_recurrence_to_the_leak_changes_nothing_without_recurrent_weights(cell):
    # With no recurrent matrix, each unit's carry ((1 - a) h, a GRU's z h, none
    # for the rnn) is the only path from one hidden state to the next: the cut
    # gradient is the whole one. With the recurrent weights it is not.
    task, config, ensemble = _setup(cell)
    rule = BPTT(recurrence="leak")
    assert _differ(
        _gradients(ensemble, task, config, rule), _gradients(ensemble, task, config, BPTT())
    )
    ensemble = _zeroed(ensemble, _RECURRENT[cell])
    _assert_close(
        _gradients(ensemble, task, config, rule),
        _gradients(ensemble, task, config, BPTT()),
        rtol=1e-4,
        atol=1e-8,
    )


def test_cutting_the_feedback_path_changes_nothing_when_the_network_ignores_feedback():
    task, config, ensemble = _setup("leaky")
    rule = BPTT(through_feedback=False)
    assert _differ(
        _gradients(ensemble, task, config, rule), _gradients(ensemble, task, config, BPTT())
    )
    n_task = task.n_inputs  # the feedback is the last 4 inputs
    ensemble = _zeroed(ensemble, _INPUT["leaky"], slice(n_task, None))
    _assert_close(
        _gradients(ensemble, task, config, rule),
        _gradients(ensemble, task, config, BPTT()),
        rtol=1e-4,
        atol=1e-8,
    )


def test_a_whole_trial_window_with_cut_paths_is_bptt_with_the_same_cuts():
    task, config, ensemble = _setup("leaky")
    paths = {"through_feedback": False, "recurrence": "leak"}
    _assert_close(
        _gradients(ensemble, task, config, TruncatedBPTT(window=task.n_steps, **paths)),
        _gradients(ensemble, task, config, BPTT(**paths)),
        rtol=1e-5,
        atol=1e-9,
    )


@pytest.mark.parametrize("cell", ["rnn", "leaky", "gru"])
def test_cut_paths_leave_the_rollouts_values_alone(cell):
    model = mf.build_model(tiny_model_config(cell=cell), n_task_inputs=2, key=jax.random.key(1))
    task_input = jnp.tile(jnp.asarray([0.3, -0.2]), (10, 1))
    runs = [
        model.rollout(
            jnp.zeros(2),
            jnp.zeros(2),
            task_input,
            key=jax.random.key(2),
            options=mf.RolloutOptions(through_feedback=feedback, recurrence=recurrence),
        )
        for feedback, recurrence in ((True, "full"), (False, "leak"))
    ]
    # Equal to the last bit where XLA optimises the two programs (users' jobs); compiled
    # without its backend optimisation (the tests' setting) the GRU's differ in the last
    # float32 digits (seen: up to 7.5e-9 apart, values of 1e-4 to 0.2): a cut that
    # changed the values would differ by far more.
    for cut, whole in zip(jax.tree.leaves(runs[1]), jax.tree.leaves(runs[0]), strict=True):
        np.testing.assert_allclose(cut, whole, rtol=1e-6, atol=1e-7)


def test_the_config_names_the_paths():
    rule = mf.TrainConfig.from_dict(
        {"learning": {"kind": "bptt", "through_feedback": False, "recurrence": "leak"}}
    ).learning
    assert (rule.through_feedback, rule.recurrence) == (False, "leak")
    with pytest.raises(mf.ConfigError):
        mf.TrainConfig.from_dict({"learning": {"kind": "bptt", "recurrence": "none"}})
