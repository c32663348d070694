"""Gradient alignment: the cosine between a learning rule's update and the BPTT
gradient, per trained array, recorded at the validation steps.

Broken on purpose, these fail: comparing the rule's update with itself rather than
with BPTT's gradient (the random-feedback e-prop test then finds 1), and a cosine
without its normalisation (the tests expecting 1 then find the squared norms).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from conftest import tiny_model_config, tiny_task, tiny_train_config

import motorflow as mf
from motorflow._training._history import history_dataset
from motorflow._training._run_identity import trials_to_validate_on

CELL = "network.cell.rnn"  # the leaky cell's tanh unit


def _alignment(learning: dict, *, cut_network_paths: bool = False) -> dict[str, np.ndarray]:
    task = tiny_task()
    config = tiny_train_config(n_replicates=2, learning=learning)
    ensemble = mf.make_ensemble(
        tiny_model_config(cell="leaky"),
        n_replicates=2,
        n_task_inputs=task.n_inputs,
        key=jax.random.key(3),
    )
    if cut_network_paths:
        # No recurrent weights and no weight on the feedback (its last 4 inputs): the
        # loss reaches a weight only through the paths e-prop keeps.
        unit = ensemble.network.cell.rnn
        ensemble = eqx.tree_at(
            lambda m: (m.network.cell.rnn.weight_rec, m.network.cell.rnn.weight_in),
            ensemble,
            (jnp.zeros_like(unit.weight_rec), unit.weight_in.at[..., -4:].set(0.0)),
        )
    trainer = mf.Trainer(ensemble, task, config)
    key = jax.random.key(5)
    state = trainer.init(key=key, learning_key=jax.random.key(6))
    trials = trials_to_validate_on(task, None, key)
    found = trainer.alignment(state.params, state.learning_state, trials, key=key)
    return {name: np.asarray(value) for name, value in found.items()}


def test_truncated_bptt_with_the_whole_trial_as_window_is_aligned_with_bptt():
    found = _alignment({"kind": "truncated_bptt", "window": tiny_task().n_steps})
    assert f"{CELL}.weight_rec" in found and "network.readout.weight" in found
    for name, value in found.items():
        np.testing.assert_allclose(value, 1.0, atol=1e-5, err_msg=name)


def test_bptt_with_a_cut_path_is_measured_not_assumed_aligned():
    # Only uncut backpropagation is aligned by definition; cutting the feedback path
    # (or the recurrence) changes the gradient, and the trainer measures it.
    # (At the initial parameters the feedback path carries little: 0.99999 here.)
    for cut in ({"through_feedback": False}, {"recurrence": "leak"}):
        found = _alignment({"kind": "bptt", **cut})
        assert np.all(found[f"{CELL}.weight_rec"] < 1.0), cut
    assert np.all(found[f"{CELL}.weight_rec"] < 0.99)


def test_a_short_window_is_not():
    found = _alignment({"kind": "truncated_bptt", "window": 1})
    assert np.all(found[f"{CELL}.weight_rec"] < 0.999)


def test_symmetric_eprop_without_network_paths_is_aligned_with_bptt():
    found = _alignment({"kind": "eprop", "feedback": "symmetric"}, cut_network_paths=True)
    for name in ("weight_in", "bias", "weight_rec"):
        np.testing.assert_allclose(found[f"{CELL}.{name}"], 1.0, atol=1e-4, err_msg=name)


def test_random_feedback_eprop_is_aligned_on_the_readout_only():
    found = _alignment({"kind": "eprop", "feedback": "random"}, cut_network_paths=True)
    # The readout's update is exact; the unit's weights get the error through random
    # feedback weights.
    np.testing.assert_allclose(found["network.readout.weight"], 1.0, atol=1e-4)
    for name in ("weight_in", "bias"):
        assert np.all(found[f"{CELL}.{name}"] < 0.9), name


def test_bptt_records_1_at_each_validation(tiny):
    result = tiny(n_batches=10).train()
    alignment = result.history["gradient_alignment"]
    assert set(alignment) == set(result.record["parameters"])
    for name, values in alignment.items():
        assert values.shape == (2, 3), name  # validations at 0 and 10; 3 replicates
        np.testing.assert_array_equal(values, 1.0)
    dataset = history_dataset(result.history)
    assert dataset.gradient_alignment.dims == ("group", "validation_step", "replicate")
    assert list(dataset.group.values) == list(alignment)


def test_eprop_records_its_alignment_over_training(tiny):
    result = tiny(
        network={"cell": "leaky"}, n_batches=10, learning={"kind": "eprop", "trace_clip": 5.0}
    ).train()
    alignment = result.history["gradient_alignment"]
    values = alignment[f"{CELL}.weight_in"]
    assert values.shape == (2, 3)  # validations at 0 and 10; 3 replicates
    # E-prop's update of the unit's weights leaves out the recurrent paths: far from
    # BPTT's gradient in this untrained network (measured -0.28 to 0.25 over both
    # validations and 3 replicates, 2026-11-28), recorded anew at each validation; its
    # readout's update is exact (0.9997 to 1).
    for name in ("weight_in", "weight_rec", "bias"):
        assert np.all(np.abs(alignment[f"{CELL}.{name}"]) < 0.9), name
    assert not np.array_equal(values[0], values[1])
    np.testing.assert_allclose(alignment["network.readout.weight"], 1.0, atol=1e-3)
