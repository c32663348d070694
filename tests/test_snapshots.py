"""What training records for analysing learning: parameter snapshots, trial specs and
gradient norms."""

import equinox as eqx
import jax
import numpy as np
import optax
from conftest import assert_trees_equal, raises_config_error

import motorflow as mf
from motorflow._training._run_record import named_arrays

SNAPSHOTS = {"batches": {"every": 15, "at": [4]}}


def test_snapshots_hold_the_parameters_after_their_batches(tiny):
    setup = tiny(snapshots=SNAPSHOTS, validation={"every": 20})
    result = setup.train()
    steps = result.history["snapshot_step"]
    np.testing.assert_array_equal(steps, [0, 4, 15, 30])
    snapshot = result.history["snapshot"]
    initial = named_arrays(eqx.filter(setup.ensemble, eqx.is_array))
    assert set(snapshot) == set(named_arrays(result.state.params))
    for name, values in snapshot.items():
        np.testing.assert_array_equal(values[0], initial[name])
    # A run of 15 batches on the same trials ends where the snapshot at 15 was taken.
    short = mf.train(
        setup.ensemble,
        setup.trials,
        setup.task,
        setup.config.model_copy(update={"n_batches": 15, "snapshots": None}),
        key=setup.train_key,
        progress=False,
    )
    for name, value in named_arrays(short.state.params).items():
        np.testing.assert_array_equal(snapshot[name][2], value)
        assert not np.array_equal(snapshot[name][2], snapshot[name][3])


def test_snapshots_and_gradient_norms_survive_resuming(tiny, tmp_path):
    setup = tiny(snapshots=SNAPSHOTS, gradient_norms="per_term", checkpoint={"every": 10})
    reference = setup.train()
    directory = tmp_path / "checkpoints"

    def stop_at_20(done, history):
        if done == 20:
            raise KeyboardInterrupt

    try:
        setup.train(checkpoint_dir=directory, on_log=stop_at_20)
    except KeyboardInterrupt:
        pass
    resumed = setup.train(checkpoint_dir=directory)
    assert resumed.record["resumed_from_batch"] == 20
    assert_trees_equal(resumed.history, reference.history)
    assert_trees_equal(resumed.state, reference.state)


def batch_gradients(setup, trainer, batch=0):
    """Each replicate's gradients of its total and of each weighted term in `batch`,
    computed by hand as the update computes them."""
    state = trainer.init(key=jax.random.split(setup.train_key)[0])
    keys = jax.random.split(jax.random.fold_in(state.key, batch), setup.config.n_replicates)
    weights = {name: term.weight for name, term in setup.config.loss.terms.items()}

    def gradients(r):
        params = jax.tree.map(lambda x: x[r], state.params)
        frozen = jax.tree.map(lambda x: x[r], trainer.frozen)
        trials = jax.tree.map(lambda x: x[r, batch], setup.trials)

        def part(params, name):
            total, (terms, _) = trainer._replicate_loss(params, frozen, trials, keys[r])
            return total if name == "total" else weights[name] * terms[name]

        return {name: jax.grad(part)(params, name) for name in ["total", *weights]}

    return [gradients(r) for r in range(setup.config.n_replicates)]


def test_gradient_norms_are_those_of_the_trained_arrays_before_clipping(tiny):
    setup = tiny(
        gradient_norms="per_term",
        trainable=["network.readout"],
        stages=[{"at": 20, "trainable": ["network"]}],
        optimizer={"clip_global_norm": 1e-3},
    )
    trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
    result = setup.train()
    norms = result.history["grad_norm"]
    for r, grads in enumerate(batch_gradients(setup, trainer)):
        for name, grad in grads.items():
            # In the first stage only the readout trains: its gradient alone counts.
            expected = optax.tree.norm(grad.network.readout)
            np.testing.assert_allclose(norms[name][0, r], expected, rtol=1e-4)
        assert norms["total"][0, r] > 1e-3  # recorded before the clip
    assert np.isfinite(norms["total"]).all() and (norms["total"] > 0).all()
    assert np.isfinite(norms["effort"]).all()


def test_by_default_only_the_total_gradient_norm_is_recorded_and_training_is_unchanged(tiny):
    setup = tiny()
    plain = setup.train()
    per_term = tiny(gradient_norms="per_term").train()
    norms = plain.history["grad_norm"]
    assert np.isfinite(norms["total"]).all()
    assert all(np.isnan(norms[name]).all() for name in setup.config.loss.terms)
    # The extra backward passes only observe: the run learns bit for bit the same.
    np.testing.assert_array_equal(per_term.history["grad_norm"]["total"], norms["total"])
    assert_trees_equal(per_term.state.params, plain.state.params)


def test_the_history_dataset_holds_snapshots_and_the_trials_that_made_them(tiny):
    setup = tiny(snapshots=SNAPSHOTS, shared_trials=True)
    result = setup.train()
    dataset = mf.history_dataset(result.history, trials=setup.trials)
    weight = dataset["snapshot.network.readout.weight"]
    assert weight.dims[:2] == ("snapshot_step", "replicate")
    np.testing.assert_array_equal(
        weight.sel(snapshot_step=30).values, result.history["snapshot"]["network.readout.weight"][3]
    )
    # Snapshot b's parameters were last trained on batch index b - 1.
    np.testing.assert_array_equal(dataset.trials_batch, [3, 14, 29])
    goal = dataset["trials.goal_pos"]
    assert goal.dims == ("trials_batch", "replicate", "trial", "component")
    shared = np.asarray(setup.trials.goal_pos)[0, 14]
    for r in range(setup.config.n_replicates):
        np.testing.assert_array_equal(goal.sel(trials_batch=14, replicate=r), shared)
    assert dataset.grad_norm.dims == ("term", "batch", "replicate")
    assert "snapshot_step" not in mf.history_dataset(tiny().train().history).coords


def test_snapshots_need_a_schedule_within_the_run():
    for snapshots, key in [
        ({"batches": {}}, "snapshots.batches"),
        ({"batches": {"at": [41]}}, "snapshots.batches.at"),
        ({"batches": {"every": 5}, "trials": "yes"}, "snapshots.trials"),
    ]:
        with raises_config_error(key):
            mf.TrainConfig.from_dict({"n_batches": 40, "snapshots": snapshots})
