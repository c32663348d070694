"""The pipeline through `snakemake --profile profiles/slurm` on a real SLURM cluster.

The cluster is a single node on this machine, started by tests/slurm/local-cluster.sh
(it installs the Debian packages when they are missing, so it needs root and apt-get).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import xarray as xr
from workflow_helpers import (
    EXPERIMENT_STORES,
    REPO,
    assert_same_results,
    make_workdir,
    snakemake,
    snakemake_command,
    snakemake_env,
    tiny_config,
)

import motorflow.pipeline as mfp

CLUSTER = REPO / "tests" / "slurm" / "local-cluster.sh"
# Short: slurmd keeps Unix sockets in its spool folder (paths of at most 108 bytes).
STATE = Path(tempfile.gettempdir()) / f"motorflow-slurm-test-{os.getpid()}"


def why_no_cluster() -> str | None:
    if os.geteuid() != 0:
        return "a local SLURM cluster needs root (to start munged, slurmctld and slurmd)"
    installed = all(shutil.which(c) for c in ("slurmctld", "slurmd", "sbatch", "munged"))
    if not installed and not shutil.which("apt-get"):
        return "SLURM is not installed and there is no apt-get to install it"
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "snakemake-executor-plugin-slurm is missing: pip install -e '.[slurm]'"
    return None


pytestmark = [
    pytest.mark.workflow,
    pytest.mark.slurm,
    pytest.mark.skipif(why_no_cluster() is not None, reason=why_no_cluster() or ""),
]


@pytest.fixture(scope="module")
def cluster():
    """A single-node SLURM cluster on this machine while this module's tests run."""
    env = {**os.environ, "MOTORFLOW_SLURM_DIR": str(STATE)}
    started = subprocess.run(
        [str(CLUSTER), "start"], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert started.returncode == 0, started.stdout + started.stderr
    yield
    subprocess.run([str(CLUSTER), "stop"], env=env, check=True, timeout=120)
    shutil.rmtree(STATE, ignore_errors=True)


# The site-specific part, for this test cluster: its partition and an account, and
# polling by squeue (it has no slurmdbd for sacct).
CLUSTER_ARGS = (
    "--profile",
    "profiles/slurm",
    "--default-resources",
    "slurm_partition=debug",
    "slurm_account=ci",
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "1",
    "--seconds-between-status-checks",
    "1",
)


def slurm_config() -> dict:
    config = tiny_config()
    del config["experiments"]["noisy"]
    del config["protocols"]  # it draws 'noisy'
    # Every job fits the 2-core test node, so the jobs never wait for each other's cores.
    config["resources"] = {
        stage: {"threads": 1, "mem_mb": 1000, "runtime": 10}
        for stage in ("trials", "train", "evaluate", "analysis", "figures")
    }
    return config


def test_the_pipeline_runs_through_sbatch_and_matches_a_local_run(cluster, tmp_path):
    local = make_workdir(tmp_path / "local", slurm_config())
    snakemake(local)

    cluster = make_workdir(tmp_path / "cluster", slurm_config())
    snakemake(cluster, *CLUSTER_ARGS)

    job_ids = {}
    for log in sorted((cluster / "results/logs").rglob("*.log")):
        found = re.search(r"SLURM job (\d+)", log.read_text())
        assert found, f"{log} does not name a SLURM job: the job did not run under sbatch"
        job_ids[log.relative_to(cluster / "results/logs").as_posix()] = found.group(1)
    # trials, train, evaluate, analysis, the experiment's figures and its analysis
    # figures, the summary and the comparison figure
    assert len(job_ids) == 8, job_ids
    assert len(set(job_ids.values())) == 8, f"jobs share a SLURM job: {job_ids}"
    for log, job_id in job_ids.items():
        record = subprocess.run(
            ["scontrol", "show", "job", job_id],
            check=False,
            capture_output=True,
            text=True,
        )
        assert "JobState=COMPLETED" in record.stdout, f"{log}: {record.stdout}{record.stderr}"

    assert_same_results(local, cluster, ["quiet"], (*EXPERIMENT_STORES, "analysis.zarr"))
    xr.testing.assert_identical(
        mfp.open_dataset(local / "results/summary.zarr"),
        mfp.open_dataset(cluster / "results/summary.zarr"),
    )
    for figure in ("comparison", "quiet/loss", "quiet/trajectories", "quiet/speed", "quiet/pca"):
        assert (cluster / f"results/figures/{figure}.png").stat().st_size > 0


def test_a_train_job_warned_by_slurm_checkpoints_and_its_retry_resumes_there(cluster, tmp_path):
    """The profile's --signal=USR1 reaches the training through the job's own Snakemake
    (which must survive it): the job checkpoints off schedule and fails, and the
    retry resumes from that checkpoint to the uninterrupted run's results."""
    config = slurm_config()
    n_batches = 20000
    # Checkpoints only at the end: any other one is the signal's.
    config["trainings"]["quick"].update(
        n_batches=n_batches,
        validation={"every": 5000},
        log={"every": 500},
        checkpoint={"times": 1},
    )
    target = "results/quiet/history.zarr"
    local = make_workdir(tmp_path / "local", config)
    snakemake(local, target)

    work = make_workdir(tmp_path / "cluster", config)
    log = work / "results/logs/train/quiet.log"
    with (work / "snakemake.out").open("w") as out:
        run = subprocess.Popen(
            snakemake_command(*CLUSTER_ARGS, target),
            cwd=work,
            env=snakemake_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            # Once training is under way (its handler installed), what SLURM sends
            # before a time limit: SIGUSR1 to every process of the job's steps.
            deadline = time.monotonic() + 300
            while not (log.exists() and f"batch 1000/{n_batches}" in log.read_text()):
                assert run.poll() is None, (work / "snakemake.out").read_text()[-3000:]
                assert time.monotonic() < deadline, "the train job did not start training"
                time.sleep(0.2)
            job = re.search(r"SLURM job (\d+)", log.read_text()).group(1)
            subprocess.run(["scancel", "--signal=USR1", job], check=True, timeout=30)
            assert run.wait(timeout=600) == 0, (work / "snakemake.out").read_text()[-3000:]
        finally:
            run.kill()

    (first_attempt,) = (work / ".snakemake/slurm_logs/rule_train/quiet").glob(f"{job}.log")
    text = first_attempt.read_text()
    stopped = re.search(r"Training stopped at batch (\d+) on SIGUSR1", text)
    assert stopped, text[-3000:]
    batch = int(stopped.group(1))
    assert 1000 <= batch < n_batches and batch % 100 == 0  # a chunk boundary
    # The job's Snakemake outlived the signal and reported the training's exit.
    assert "task 0: Exited with exit code 1" in text and "User defined signal" not in text
    resumed = f"Resuming from the checkpoint at batch {batch} in"
    assert resumed in log.read_text(), log.read_text()[-3000:]
    record = json.loads(mfp.open_dataset(work / target).attrs["run_record"])
    assert record["resumed_from_batch"] == batch
    assert_same_results(local, work, ["quiet"])
