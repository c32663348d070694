"""Updates within a rollout: trials run in segments, an optimizer step after each."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_trees_equal, tiny_model_config

import motorflow as mf
from motorflow._losses import Span, loss_terms
from motorflow._model._episode import run_segment, run_trials, trial_drive

N_STEPS = 14


def _perturbed_delayed_task() -> mf.Task:
    """A delayed reach (a hold term) under a curl field and force pulses."""
    return mf.Task(
        mf.TaskConfig.from_dict(
            {
                "kind": "delayed_reach",
                "n_steps": N_STEPS,
                "go_step": [2, 6],
                "eval": {"n_directions": 4},
                "perturbations": [
                    {"kind": "curl", "strength": [0.0, 10.0], "probability": 0.5},
                    {"kind": "force_pulse", "angle": [0, 360], "start": [0.0, 0.3]},
                ],
            }
        )
    )


def _pieces(model, task, trials, keys, lengths):
    """Each trial run in consecutive segments of `lengths` steps, glued back together."""
    drives = jax.vmap(lambda trial, key: trial_drive(model, task, trial, key=key))(trials, keys)
    states = jax.vmap(model.start)(trials.init_pos, trials.init_vel)
    rollouts, targets, first = [], [], 0
    for length in lengths:
        rollout, target = jax.vmap(
            lambda drive, state, f=first, n=length: run_segment(model, drive, state, f, n)
        )(drives, states)
        states = rollout.end
        rollouts.append(dataclasses.replace(rollout, end=None))
        targets.append(target)
        first += length
    return drives, rollouts, targets


@pytest.fixture
def setting():
    task = _perturbed_delayed_task()
    model = mf.build_model(tiny_model_config(), n_task_inputs=task.n_inputs, key=jax.random.key(1))
    trials = task.training_trials(key=jax.random.key(2), n_replicates=1, n_batches=1, batch_size=5)
    trials = jax.tree.map(lambda x: x[0, 0], trials)
    return task, model, trials, jax.random.split(jax.random.key(3), 5)


def test_a_trial_run_in_segments_is_the_whole_rollout(setting):
    task, model, trials, keys = setting
    whole, whole_targets = run_trials(model, task, trials, keys)
    _, rollouts, targets = _pieces(model, task, trials, keys, [5, 5, 4])
    glued = jax.tree.map(lambda *parts: jnp.concatenate(parts, axis=1), *rollouts)
    assert_trees_equal(whole, glued)
    assert_trees_equal(whole_targets, jax.tree.map(lambda *p: jnp.concatenate(p, 1), *targets))


def test_the_loss_terms_of_a_trials_segments_add_up_to_its_terms(setting):
    task, model, trials, keys = setting
    loss = mf.LossConfig.from_dict(
        {
            "position": {"weight": 1.0, "discount_power": 2},
            "final_velocity": {"weight": 1.0},
            "effort": {"weight": 1.0},
            "hidden": {"weight": 1.0},
            "hold": {"weight": 1.0},
        }
    )
    whole = loss_terms(loss, *run_trials(model, task, trials, keys))
    drives, rollouts, targets = _pieces(model, task, trials, keys, [3, 6, 5])
    firsts = [0, 3, 9]
    parts = [
        loss_terms(loss, r, t, Span(f, N_STEPS, drives.start_pos))
        for r, t, f in zip(rollouts, targets, firsts, strict=True)
    ]
    for name, value in whole.items():
        assert float(value) > 0, name
        np.testing.assert_allclose(sum(p[name] for p in parts), value, rtol=1e-5)


def _adam_counts(opt_state) -> set[int]:
    counts = [
        leaf
        for path, leaf in jax.tree_util.tree_leaves_with_path(opt_state)
        if "count" in jax.tree_util.keystr(path)
    ]
    return {int(c) for count in counts for c in np.ravel(count)}


@pytest.mark.parametrize("update_every, per_batch", [(4, 3), (5, 3), (12, 1), (50, 1)])
def test_the_parameters_update_after_every_segment(tiny, update_every, per_batch):
    # 12-step trials: segments of 4 (3 of them), of 5 (5, 5 and 2), or one.
    learning = {"kind": "truncated_bptt", "window": 3, "update_every": update_every}
    result = tiny(n_batches=5, learning=learning).train()
    assert _adam_counts(result.state.opt_state) == {5 * per_batch}


def test_one_segment_as_long_as_the_trial_trains_as_one_update_per_rollout(tiny):
    once = tiny(n_batches=10, learning={"kind": "truncated_bptt", "window": 3}).train()
    segmented = tiny(
        n_batches=10, learning={"kind": "truncated_bptt", "window": 3, "update_every": 12}
    ).train()
    for a, b in zip(jax.tree.leaves(once.state.params), jax.tree.leaves(segmented.state.params)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(
        once.history["loss"]["total"], segmented.history["loss"]["total"], rtol=1e-4
    )


def test_updates_within_the_rollout_train_to_other_weights_and_learn(tiny):
    once = tiny(n_batches=40, learning={"kind": "truncated_bptt", "window": 3}).train()
    within = tiny(
        n_batches=40, learning={"kind": "truncated_bptt", "window": 3, "update_every": 4}
    ).train()
    leaves = jax.tree.leaves(once.state.params), jax.tree.leaves(within.state.params)
    assert any(not np.array_equal(a, b) for a, b in zip(*leaves))
    # The validation set is fixed: its loss, before the first batch and after the last.
    validation = within.history["validation"]["total"]
    assert np.all(validation[-1] < validation[0])
