"""Resume state that cannot be misapplied: a checkpoint is resumed only by the identical run."""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest
from conftest import assert_trees_equal, tiny_task, tiny_train_config

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow._training._folder_lock import CheckpointsInUseError

BASE_MODEL = {
    "network": {"hidden_size": 6, "hidden_noise_std": 0.02},
    "feedback": {"delay": 1, "noise_std": 0.05},
}


def train_config() -> mf.TrainConfig:
    """Ten batches of 4 trials for 2 replicates, checkpointed after 5 and 10."""
    return tiny_train_config(
        n_replicates=2,
        n_batches=10,
        batch_size=4,
        validation={"every": 5},
        log={"every": 5},
        checkpoint={"every": 5},
    )


def _merge(base, edit):
    merged = {**base}
    for key, value in edit.items():
        merged[key] = _merge(base.get(key, {}), value) if isinstance(value, dict) else value
    return merged


def train_model(model_edit, directory=None, seed=3, **kwargs):
    """Train a tiny ensemble of the base model with `model_edit` applied (noise on)."""
    model = mf.ModelConfig.from_dict(_merge(BASE_MODEL, model_edit))
    task = tiny_task(n_steps=10)
    config = train_config()
    keys = jax.random.split(jax.random.key(seed), 3)
    ensemble = mf.make_ensemble(model, n_replicates=2, n_task_inputs=task.n_inputs, key=keys[0])
    trials = task.training_trials(key=keys[1], n_replicates=2, n_batches=10, batch_size=4)
    return mf.train(
        ensemble,
        trials,
        task,
        config,
        key=keys[2],
        checkpoint_dir=directory,
        progress=False,
        **kwargs,
    )


# Every model setting that holds no weights: each lives in the module's static structure.
SETTINGS_WITHOUT_WEIGHTS = {
    "feedback.delay": {"feedback": {"delay": 3}},
    "feedback.noise_std": {"feedback": {"noise_std": 0.2}},
    "network.hidden_noise_std": {"network": {"hidden_noise_std": 0.1}},
    "plant.mass": {"plant": {"mass": 2.0}},
    "plant.damping": {"plant": {"damping": 0.5}},
    "plant.method": {"plant": {"method": "rk4"}},
    "plant.n_substeps": {"plant": {"n_substeps": 3}},
    "plant.kind": {"plant": {"kind": "arm"}},
    "arm.joint_viscosity": {"plant": {"kind": "arm", "joint_viscosity": 0.2}},
    "dt": {"dt": 0.04},
    "network.cell": {"network": {"cell": "rnn"}},
    "network.cell.tau (leaky)": {"network": {"cell": {"kind": "leaky", "tau": 0.2}}},
}


def _setup(model_edit):
    model = mf.ModelConfig.from_dict(_merge(BASE_MODEL, model_edit))
    task = tiny_task(n_steps=10)
    config = train_config()
    keys = jax.random.split(jax.random.key(3), 3)
    ensemble = mf.make_ensemble(model, n_replicates=2, n_task_inputs=task.n_inputs, key=keys[0])
    trials = task.training_trials(key=keys[1], n_replicates=2, n_batches=10, batch_size=4)
    return ensemble, trials, task, config, keys[2]


@pytest.mark.parametrize("setting", list(SETTINGS_WITHOUT_WEIGHTS))
def test_every_setting_without_weights_is_part_of_the_run_identity(setting):
    # Checkpoints live under the run identity, so a run can only resume its own.
    before = {"network": {"cell": "leaky"}} if "tau" in setting else {}
    if setting.startswith("arm."):
        before = {"plant": {"kind": "arm"}}
    ensemble, trials, task, config, key = _setup(before)
    edited, *_ = _setup(SETTINGS_WITHOUT_WEIGHTS[setting])
    identity = mfp.run_id(mfp.run_fingerprint(ensemble, trials, task, config, key=key))
    assert identity != mfp.run_id(mfp.run_fingerprint(edited, trials, task, config, key=key))
    # ... and the identity is a function of the run alone (no time, no hash seeds).
    again, *_ = _setup(before)
    assert identity == mfp.run_id(mfp.run_fingerprint(again, trials, task, config, key=key))


@pytest.mark.parametrize("setting", ["feedback.delay", "network.hidden_noise_std"])
def test_a_run_never_resumes_the_checkpoints_of_another_setting(tmp_path, setting):
    edit = SETTINGS_WITHOUT_WEIGHTS[setting]
    first = train_model({}, tmp_path)
    edited = train_model(edit, tmp_path)
    fresh = train_model(edit)
    # The first run's finished checkpoint lies in the store: the edited run starts afresh.
    assert edited.record["resumed_from_batch"] == 0
    assert_trees_equal(edited.state, fresh.state)
    assert_trees_equal(edited.history, fresh.history)
    assert edited.run_id != first.run_id
    assert not np.array_equal(edited.history["loss"]["total"], first.history["loss"]["total"])


def test_checkpoint_cadence_is_not_part_of_the_run_identity():
    ensemble, trials, task, config, key = _setup({})
    cadence = mf.TrainConfig.from_dict(
        {**config.to_dict(), "checkpoint": {"every": 500}, "keep_checkpoints": 7}
    )
    assert mfp.run_id(mfp.run_fingerprint(ensemble, trials, task, config, key=key)) == mfp.run_id(
        mfp.run_fingerprint(ensemble, trials, task, cadence, key=key)
    )


def test_reverting_an_edit_restores_the_finished_run_without_training(tmp_path):
    first = train_model({}, tmp_path)
    train_model({"feedback": {"delay": 2}}, tmp_path)
    chunks = []
    again = train_model({}, tmp_path, on_log=lambda done, _: chunks.append(done))
    assert chunks == [] and again.record["resumed_from_batch"] == 10
    assert_trees_equal(again.state, first.state)
    assert_trees_equal(again.history, first.history)


def test_restart_trains_from_the_first_batch(tmp_path):
    first = train_model({}, tmp_path)
    chunks = []
    again = train_model({}, tmp_path, restart=True, on_log=lambda done, _: chunks.append(done))
    assert chunks == [5, 10] and again.record["resumed_from_batch"] == 0
    assert_trees_equal(again.state, first.state)


def test_the_store_keeps_the_checkpoints_of_the_three_newest_configurations(tmp_path):
    # Four configurations (seeds) that share one compiled program.
    runs = [train_model({}, tmp_path, seed=seed).run_id for seed in range(4)]
    kept = mfp.CheckpointStore(tmp_path).runs()
    assert kept == [run[:16] for run in runs[1:]]


@pytest.mark.parametrize("kind", ["store", "run"])
def test_a_directory_holding_foreign_files_is_refused_and_left_untouched(tmp_path, kind):
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.npy").write_bytes(b"123")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(mfp.ForeignFilesError, match="did not write") as error:
        if kind == "store":
            train_model({}, tmp_path)
        else:
            mfp.Checkpoints(tmp_path, fingerprint={"run": 1})
    assert str(tmp_path) in str(error.value) and "notes.txt" in str(error.value)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_foreign_file_inside_a_store_is_refused(tmp_path):
    train_model({}, tmp_path)
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(mfp.ForeignFilesError, match="mine.txt"):
        train_model({}, tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


HOLD = """
import sys, time
import motorflow.pipeline as mfp
checkpoints = mfp.CheckpointStore(sys.argv[1]).open("0123456789abcdef", fingerprint={"run": 1})
print("holding", flush=True)
time.sleep(600)
"""


def test_a_second_training_in_a_checkpoint_directory_is_refused_until_the_first_ends(tmp_path):
    first = mfp.CheckpointStore(tmp_path).open("0123456789abcdef", fingerprint={"run": 1})
    with pytest.raises(CheckpointsInUseError, match=f"{os.getpid()}.*wait for that one to end"):
        train_model({}, tmp_path)
    first.close()
    train_model({}, tmp_path)  # the directory is free again, and nothing of it was lost
    # A training that is killed (SIGKILL: no clean-up of its own) leaves no lock held.
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "holding\n"
        with pytest.raises(CheckpointsInUseError, match=f"process {holder.pid} "):
            train_model({}, tmp_path)
    finally:
        holder.kill()
        holder.wait()
    assert train_model({}, tmp_path).record["resumed_from_batch"] > 0
