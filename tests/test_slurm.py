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
    write_config,
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
    # A cluster job asks for at most the node's two cores.
    "--cores",
    "2",
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


# The profile's groups with two experiments per cluster job.
GROUPED = ("--group-components", "trials=50", "experiments=2", "overview=100")


def submissions(since: int) -> list[dict[str, str]]:
    """The cluster jobs that ended since the job-completion log had `since` bytes
    (one line per job, written by slurmctld: tests/slurm/local-cluster.sh)."""
    with (STATE / "log" / "jobcomp.log").open("rb") as log:
        log.seek(since)
        lines = log.read().decode().splitlines()
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in lines]


def jobcomp_size() -> int:
    path = STATE / "log" / "jobcomp.log"
    return path.stat().st_size if path.exists() else 0


def sweep_config(diverging: bool) -> dict:
    """Four experiments (three datasets): `quiet`, two seeds of it, and `late`, whose
    learning rate grows 10^4-fold every 10 batches when `diverging` (its training
    then fails at batch 10: tests/test_crash_safety.py)."""
    config = slurm_config()
    config["sweeps"] = {"seeds": {"experiment": "quiet", "grid": {"seed": [1, 2]}}}
    schedule = {"kind": "exponential", "decay_rate": 1.0e4 if diverging else 0.5}
    schedule["decay_steps"] = 10
    config["trainings"]["late"] = {
        **config["trainings"]["quick"],
        "optimizer": {"name": "sgd", "learning_rate": 0.01, "schedule": schedule},
    }
    config["experiments"]["late"] = {**config["experiments"]["quiet"], "training": "late"}
    return config


EXPERIMENTS = ["quiet", "seeds-seed1", "seeds-seed2", "late"]


def test_a_grouped_sweep_submits_a_job_per_group_and_reruns_only_a_failed_group(
    cluster, tmp_path
):
    local = make_workdir(tmp_path / "local", sweep_config(diverging=False))
    snakemake(local)

    # A run where `late` diverges: its group fails, the others finish (--keep-going).
    work = make_workdir(tmp_path / "cluster", sweep_config(diverging=True))
    before = jobcomp_size()
    failed = snakemake(work, *CLUSTER_ARGS, *GROUPED, "--keep-going", "--retries", "0", check=False)
    assert failed.returncode != 0
    first = submissions(before)
    # One trials job for the three datasets, two jobs of two experiments each; the
    # sweep-wide outputs wait for the failed experiment.
    assert len(first) == 3, first
    assert sorted(job["JobState"] for job in first) == ["COMPLETED", "COMPLETED", "FAILED"]
    assert "Non-finite training loss" in (work / "results/logs/train/late.log").read_text()
    finished = [n for n in EXPERIMENTS if (work / f"results/figures/{n}/loss.png").exists()]
    assert len(finished) == 2 and "late" not in finished, finished
    kept = {n: (work / f"results/{n}/history.zarr").stat().st_mtime_ns for n in finished}

    # The fixed config: the failed group (`late` and its partner, whose outputs
    # Snakemake dropped with the group's) and the sweep-wide outputs, nothing else.
    write_config(work, sweep_config(diverging=False))
    before = jobcomp_size()
    snakemake(work, *CLUSTER_ARGS, *GROUPED)
    second = submissions(before)
    assert [job["JobState"] for job in second] == ["COMPLETED", "COMPLETED"], second
    assert {n: (work / f"results/{n}/history.zarr").stat().st_mtime_ns for n in finished} == kept

    job_ids = {}
    for log in sorted((work / "results/logs").rglob("*.log")):
        found = re.search(r"SLURM job (\d+)", log.read_text())
        assert found, f"{log} does not name a SLURM job: the job did not run under sbatch"
        job_ids[log.relative_to(work / "results/logs").as_posix()] = found.group(1)
    # The jobs of one experiment ran in one cluster job, two experiments per job.
    for name in EXPERIMENTS:
        ids = {job for log, job in job_ids.items() if log.endswith(f"/{name}.log")}
        assert len(ids) == 1, (name, job_ids)
    assert len({job_ids[f"train/{name}.log"] for name in EXPERIMENTS}) == 2, job_ids
    assert {job["JobId"] for job in first + second} >= set(job_ids.values())

    assert_same_results(local, work, EXPERIMENTS, (*EXPERIMENT_STORES, "analysis.zarr"))
    xr.testing.assert_identical(
        mfp.open_dataset(local / "results/summary.zarr"),
        mfp.open_dataset(work / "results/summary.zarr"),
    )
    for figure in ("comparison", "sweep-seeds", "late/loss", "quiet/trajectories"):
        assert (work / f"results/figures/{figure}.png").stat().st_size > 0


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

    # The train job ran in its experiment's group (profiles/slurm: groups).
    (first_attempt,) = (work / ".snakemake/slurm_logs").rglob(f"{job}.log")
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
