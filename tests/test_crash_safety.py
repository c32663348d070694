"""Killed, damaged, diverged: the pipeline resumes to identical results or explains."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from workflow_helpers import (
    REPO,
    assert_same_results,
    finished_tiny_pipeline,
    make_workdir,
    snakemake,
    snakemake_command,
    snakemake_env,
    tiny_config,
    train_through_stages,
)

import motorflow.pipeline as mfp

pytestmark = pytest.mark.workflow

# The library under test, then these tests' helpers (workflow_helpers).
TESTS_PATH = os.pathsep.join([str(REPO / "src"), str(Path(__file__).parent)])


def one_experiment_config() -> dict:
    config = tiny_config()
    del config["experiments"]["noisy"]
    del config["protocols"]  # it draws 'noisy'
    config["trainings"]["quick"].update(n_batches=40, checkpoint={"every": 10})
    # What these tests compare is trained and evaluated: no figure of the experiment's,
    # and a short fixed-point search.
    config["figures"]["experiments"] = []
    config["analysis"] = {"fixed_points": {"n_starts": 2, "steps": 50}}
    return config


def newest_checkpoint(experiment) -> int:
    """The batch of the newest checkpoint written in full under `experiment` (0: none)."""
    steps = [int(p.name) for p in experiment.glob("checkpoints/*/*") if p.name.isdigit()]
    return max(steps, default=0)


def resumed_from(experiment) -> int:
    """The batch the training that wrote `experiment`'s history resumed from."""
    record = mfp.open_dataset(experiment / "history.zarr").attrs["run_record"]
    return json.loads(record)["resumed_from_batch"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    workdir = make_workdir(tmp_path_factory.mktemp("reference"), one_experiment_config())
    snakemake(workdir)
    return workdir


# A train job's work, as its script does it (the trial specs, then the train stage),
# in a process of its own that a kill point can end.
TRAIN_JOB = """
import json, sys
from pathlib import Path

import motorflow.pipeline as mfp
from workflow_helpers import train_through_stages

config, results, cache = sys.argv[1:]
mfp.enable_compilation_cache(cache)
train_through_stages(mfp.resolve_experiments(json.loads(config))["quiet"], Path(results))
"""


@pytest.mark.parametrize(
    ("kill_at", "left_behind", "resumes_at"),
    [
        # during the compilation of the first training chunk: before any checkpoint
        ("chunk#1#0.3", None, 0),
        # in the middle of the third chunk (batches 20-30); where it resumes depends on
        # how far the background write of the checkpoint at 20 had got
        ("chunk#3#0.05", None, None),
        # inside the (background) write of the checkpoint at batch 20
        ("checkpoint#2", "checkpoints/*/20.orbax-checkpoint-tmp*", 10),
        # inside the write of history.zarr, after training finished
        ("write:history.zarr", ".history.zarr.tmp-*", 40),
        # inside the write of the final model
        ("save_model", ".model.tmp-*", 40),
    ],
)
def test_a_killed_train_job_resumes_to_identical_results(
    reference, tmp_path, compilation_cache, kill_at, left_behind, resumes_at
):
    # The train stage killed at each point, then run again (as Snakemake's rerun of the
    # job does), equals the workflow's uninterrupted run. The workflow's own kill and
    # resume is test_a_killed_snakemake_run_resumes_with_the_same_command.
    config = json.dumps(one_experiment_config())
    killed = subprocess.run(  # noqa: PLW1510 - its status is the test's
        [sys.executable, "-c", TRAIN_JOB, config, str(tmp_path / "results"), str(compilation_cache)],
        env=snakemake_env({"MOTORFLOW_KILL_AT": kill_at, "PYTHONPATH": TESTS_PATH}),
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    experiment = tmp_path / "results" / "quiet"
    assert not (experiment / "model").exists()
    # What Snakemake does before it reruns a failed job: its declared outputs go.
    for output in ("model", "model_best", "history.zarr"):
        shutil.rmtree(experiment / output, ignore_errors=True)
    if left_behind is not None:
        assert list(experiment.glob(left_behind)), f"the kill did not land inside {left_behind}"
    checkpointed = newest_checkpoint(experiment)
    assert resumes_at is None or checkpointed == resumes_at
    train_through_stages(mfp.resolve_experiments(json.loads(config))["quiet"], tmp_path / "results")
    assert resumed_from(experiment) == checkpointed
    assert_same_results(reference, tmp_path, ["quiet"], stores_of_each=("history.zarr",))
    assert not list(experiment.glob(".*.tmp-*"))


def test_a_killed_snakemake_run_resumes_with_the_same_command(reference, tmp_path):
    # A lost terminal or node: snakemake dies with its train job, leaving its lock and
    # the job marked incomplete. The README's way back: --unlock once, then the command.
    workdir = make_workdir(tmp_path, one_experiment_config())
    run = subprocess.Popen(
        snakemake_command(),
        cwd=workdir,
        env=snakemake_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    checkpoints = workdir / "results/quiet/checkpoints"

    def checkpointed():
        return any(checkpoints.glob("*/10"))

    deadline = time.monotonic() + 300
    while not checkpointed() and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    assert checkpointed() and not (workdir / "results/quiet/model").exists()
    # The checkpoint at 10, or a later one written before the kill landed.
    left = newest_checkpoint(workdir / "results/quiet")
    snakemake(workdir, "--unlock")
    snakemake(workdir)  # the documented command, unchanged
    assert resumed_from(workdir / "results/quiet") == left
    assert_same_results(reference, workdir, ["quiet"])


def test_divergence_stops_the_job_naming_batch_replicates_and_term(tmp_path):
    config = one_experiment_config()
    # The learning rate grows 10^4-fold every 10 batches: the loss overflows after batch 10.
    config["trainings"]["quick"]["optimizer"] = {
        "name": "sgd",
        "learning_rate": 0.01,
        "schedule": {"kind": "exponential", "decay_rate": 1.0e4, "decay_steps": 10},
    }
    workdir = make_workdir(tmp_path, config)
    result = snakemake(workdir, check=False)
    assert result.returncode != 0
    log = (workdir / "results/logs/train/quiet.log").read_text()
    match = re.search(
        r"Non-finite training loss at batch (\d+) in replicate\(s\) ([\d, ]+), loss term\(s\) (\w+)",
        log,
    )
    assert match, log[-2000:]
    assert int(match.group(1)) >= 10
    assert "The last good checkpoint (batch 10) is kept" in log
    assert "optimizer.learning_rate" in log
    assert list((workdir / "results/quiet/checkpoints").glob("*/10"))
    assert not (workdir / "results/quiet/model").exists()


def test_outputs_stay_inside_results_and_nothing_is_pickled():
    reference = finished_tiny_pipeline()  # every kind of output, figures included
    made = {p.name for p in reference.iterdir()} - {".complete"}  # the session's mark
    assert made <= {
        "Snakefile",
        "workflow",
        "profiles",
        "config",
        "results",
        ".snakemake",
        ".jax_cache",
    }
    pickle_headers = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
    written = [p for p in (reference / "results").rglob("*") if p.is_file()]
    assert written
    for path in written:
        assert path.suffix not in {".pkl", ".pickle", ".npy", ".npz"}, path
        with open(path, "rb") as stream:
            assert not stream.read(2).startswith(pickle_headers), path
