"""Chained experiments: `init_from` starts training from another experiment's trained model."""

from __future__ import annotations

import copy

import jax
import numpy as np
import pytest
from conftest import raises_config_error
from workflow_helpers import tiny_config, train_through_stages

import motorflow as mf
import motorflow.pipeline as mfp


def chained_config(**child) -> dict:
    config = tiny_config()
    config["experiments"]["adapt"] = {
        "task": "reach",
        "model": "small",
        "training": "quick",
        "init_from": "quiet",
        **child,
    }
    return config


def test_an_experiment_records_what_it_starts_from_in_its_settings():
    experiments = mfp.resolve_experiments(chained_config(reset_optimizer=False))
    settings = experiments["adapt"].train_settings()
    assert settings["init_from"] == "quiet" and settings["reset_optimizer"] is False
    assert "init_from" not in experiments["quiet"].train_settings()
    assert mfp.resolve_experiment(chained_config(), "adapt").init_from == "quiet"


@pytest.mark.parametrize(
    ("edit", "path", "words"),
    [
        (
            lambda c: c["experiments"]["adapt"].update(init_from="nowhere"),
            "experiments.adapt.init_from",
            "'nowhere'",
        ),
        (
            lambda c: c["experiments"]["quiet"].update(init_from="adapt"),
            "experiments.quiet.init_from",
            "loop: ",
        ),
        (
            lambda c: c["experiments"]["adapt"].update(
                override={"model": {"network": {"hidden_size": 4}}}
            ),
            "experiments.adapt.init_from",
            "shapes",
        ),
        (
            lambda c: c["experiments"]["adapt"].update(override={"training": {"n_replicates": 3}}),
            "experiments.adapt.init_from",
            "3 replicates",
        ),
        (
            lambda c: c["experiments"]["adapt"].update(
                reset_optimizer=False, override={"training": {"optimizer": {"name": "sgd"}}}
            ),
            "experiments.adapt.reset_optimizer",
            "optimizer.name",
        ),
    ],
)
def test_a_chain_that_cannot_work_is_a_config_error(edit, path, words):
    config = chained_config()
    edit(config)
    with raises_config_error(path, words):
        mfp.resolve_experiments(config)


def test_settings_without_weights_may_differ_from_the_parents():
    config = chained_config(override={"model": {"feedback": {"noise_std": 0.3}}})
    assert mfp.resolve_experiments(config)["adapt"].model.feedback.noise_std == 0.3


def run_chain(tmp_path, config: dict, names) -> dict[str, mf.TrainResult]:
    """Trial specs and training of `names` in order, through the stage functions."""
    experiments = mfp.resolve_experiments(copy.deepcopy(config))
    for name in names:
        train_through_stages(experiments[name], tmp_path)
    return experiments


def test_a_child_starts_where_its_parent_ended(tmp_path):
    """Same seed, task and model: the child's first validation is its parent's last."""
    run_chain(tmp_path, chained_config(), ["quiet", "adapt"])
    parent = mfp.open_dataset(tmp_path / "quiet" / "history.zarr").validation_loss
    child = mfp.open_dataset(tmp_path / "adapt" / "history.zarr").validation_loss
    np.testing.assert_allclose(
        child.isel(validation_step=0), parent.isel(validation_step=-1), rtol=1e-6
    )
    assert not np.allclose(child.isel(validation_step=0), parent.isel(validation_step=0))


def test_the_optimizer_state_continues_only_when_asked(tmp_path):
    config = chained_config(reset_optimizer=False)
    config["experiments"]["fresh"] = {**config["experiments"]["adapt"], "reset_optimizer": True}
    run_chain(tmp_path, config, ["quiet", "adapt", "fresh"])
    n_batches = config["trainings"]["quick"]["n_batches"]

    def adam_count(name):
        like = mf.load_ensemble(tmp_path / name / "model")[0]
        experiment = mfp.resolve_experiments(config)[name]
        trainer = mf.Trainer(like, mf.Task(experiment.task), experiment.train)
        state = mf.load_optimizer_state(
            tmp_path / name / "model", jax.eval_shape(trainer.init, key=jax.random.key(0)).opt_state
        )
        counts = [x for x in jax.tree.leaves(state) if x.dtype == np.int32]
        return int(np.asarray(counts[0]).ravel()[0])

    assert adam_count("quiet") == n_batches
    assert adam_count("adapt") == 2 * n_batches  # continued
    assert adam_count("fresh") == n_batches  # reset
    continued = mf.load_ensemble(tmp_path / "adapt" / "model")[0]
    reset = mf.load_ensemble(tmp_path / "fresh" / "model")[0]
    assert not np.array_equal(continued.network.readout.weight, reset.network.readout.weight)
