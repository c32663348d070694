"""Killed, damaged, diverged: the pipeline resumes to identical results or explains."""

from __future__ import annotations

import pytest
from workflow_helpers import assert_same_results, make_workdir, snakemake, tiny_config

pytestmark = pytest.mark.workflow


def one_experiment_config() -> dict:
    config = tiny_config()
    del config["experiments"]["noisy"]
    config["trainings"]["quick"].update(n_batches=40, checkpoint_every=10)
    return config


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    workdir = make_workdir(tmp_path_factory.mktemp("reference"), one_experiment_config())
    snakemake(workdir)
    return workdir


def test_two_runs_in_fresh_directories_are_identical(reference, tmp_path):
    workdir = make_workdir(tmp_path, one_experiment_config())
    snakemake(workdir)
    assert_same_results(reference, workdir, ["quiet"])


@pytest.mark.parametrize(
    ("kill_at", "left_behind"),
    [
        # during the compilation of the first training chunk
        ("chunk#1#0.3", None),
        # in the middle of the third chunk (batches 20-30)
        ("chunk#3#0.05", None),
        # inside the (background) write of the checkpoint at batch 20
        ("checkpoint#2", "checkpoints/20.orbax-checkpoint-tmp*"),
        # inside the write of history.zarr, after training finished
        ("write:history.zarr", ".history.zarr.tmp-*"),
        # inside the write of the final model
        ("save_model", ".model.tmp-*"),
    ],
)
def test_a_killed_train_job_resumes_to_identical_results(reference, tmp_path, kill_at, left_behind):
    workdir = make_workdir(tmp_path, one_experiment_config())
    killed = snakemake(workdir, env={"MOTORFLOW_KILL_AT": kill_at}, check=False)
    assert killed.returncode != 0
    assert "Error in rule train" in killed.stderr + killed.stdout
    experiment = workdir / "results" / "quiet"
    assert not (experiment / "model").exists() and not (experiment / "history.zarr").exists()
    if left_behind is not None:
        assert list(experiment.glob(left_behind)), f"the kill did not land inside {left_behind}"
    snakemake(workdir)  # the documented command, unchanged
    assert_same_results(reference, workdir, ["quiet"])
    assert not list(experiment.glob(".*.tmp-*"))
