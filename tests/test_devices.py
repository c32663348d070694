"""Each GPU job gets GPUs of its own; JAX never preallocates a shared GPU."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from workflow_helpers import make_workdir, snakemake, tiny_config

import motorflow.pipeline as mfp
from motorflow.pipeline import _devices

HOLD_GPUS = """
import sys, time
from motorflow.pipeline import claim_gpus
print(",".join(claim_gpus({n}, pool={pool!r}, lock_dir={lock_dir!r})), flush=True)
time.sleep(600)
"""

SET_UP = """
import json, os, jax
import motorflow.pipeline as mfp
mfp.use_devices(cpu_devices=2, gpus={gpus})
print(json.dumps({{
    "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
    "preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"),
    "n_devices": len(jax.devices()),
}}))
"""


@pytest.fixture(autouse=True)
def release_claims():
    yield
    while _devices._held:
        _devices._held.pop().close()


def hold_gpus(n, pool, lock_dir):
    """A separate process holding `n` GPUs of `pool`, and the ids it got."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD_GPUS.format(n=n, pool=pool, lock_dir=str(lock_dir))],
        stdout=subprocess.PIPE,
        text=True,
    )
    return process, process.stdout.readline().strip().split(",")


def test_concurrent_claims_get_distinct_gpus(tmp_path):
    first = mfp.claim_gpus(1, pool=["0", "1", "2"], lock_dir=tmp_path)
    second = mfp.claim_gpus(2, pool=["0", "1", "2"], lock_dir=tmp_path)
    assert sorted(first + second) == ["0", "1", "2"]


def test_a_claim_waits_until_a_job_holding_the_gpus_dies(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="motorflow")
    holder, held = hold_gpus(2, ["0", "1"], tmp_path)
    assert sorted(held) == ["0", "1"]
    got = []
    waiter = threading.Thread(
        target=lambda: got.extend(
            mfp.claim_gpus(1, pool=["0", "1"], lock_dir=tmp_path, poll_seconds=0.05)
        ),
        daemon=True,
    )
    waiter.start()
    deadline = time.monotonic() + 60
    while "Waiting for 1 free GPU(s) of 0, 1" not in caplog.text:  # it tried every GPU
        assert time.monotonic() < deadline and waiter.is_alive(), caplog.text
        time.sleep(0.01)
    assert not got, "claimed a GPU another job holds"
    holder.send_signal(signal.SIGKILL)  # a killed job must not keep its GPUs
    holder.wait()
    waiter.join(timeout=30)
    assert got in (["0"], ["1"])


def test_asking_for_more_gpus_than_visible_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"asks for 2 GPU\(s\) but only 1 are visible \(7\)"):
        mfp.claim_gpus(2, pool=["7"], lock_dir=tmp_path)


@pytest.mark.parametrize(
    ("listed", "pool"), [("3,5", ["3", "5"]), ("", []), ("-1", []), ("GPU-ab12", ["GPU-ab12"])]
)
def test_visible_gpus_follow_cuda_visible_devices(monkeypatch, listed, pool):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", listed)
    assert mfp.visible_gpus() == pool


def set_up_devices(tmp_path, gpus, **env):
    inherited = {
        key: value
        for key, value in os.environ.items()
        if key not in ("XLA_PYTHON_CLIENT_PREALLOCATE", "SLURM_JOB_ID")
    }
    env = {
        **inherited,
        "MOTORFLOW_GPU_LOCK_DIR": str(tmp_path),
        "CUDA_VISIBLE_DEVICES": "3,5",
        **env,
    }
    out = subprocess.run(
        [sys.executable, "-c", SET_UP.format(gpus=gpus)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.splitlines()[-1])


def test_a_gpu_job_sees_only_its_claimed_gpu_and_never_preallocates(tmp_path):
    holder, held = hold_gpus(1, ["3", "5"], tmp_path)
    try:
        job = set_up_devices(tmp_path, gpus=1)
    finally:
        holder.kill()
        holder.wait()
    assert job["cuda"] in ("3", "5") and [job["cuda"]] != held
    assert job["preallocate"] == "false"
    assert job["n_devices"] == 2  # one XLA CPU device per thread (no GPU on this machine)


def test_under_slurm_the_schedulers_gpus_are_kept(tmp_path):
    job = set_up_devices(tmp_path, gpus=1, SLURM_JOB_ID="42")
    assert job["cuda"] == "3,5"
    assert job["preallocate"] == "false"


def test_devices_cannot_change_once_jax_has_started():
    import jax

    jax.devices()
    with pytest.raises(Exception, match="jax_num_cpu_devices"):
        mfp.use_devices(cpu_devices=2)


@pytest.mark.workflow
def test_local_gpu_jobs_run_on_distinct_gpus(tmp_path):
    config = tiny_config()
    # One thread each, so both train jobs run at once on 2 cores, each asking for a GPU.
    config["resources"] = {"train": {"threads": 1, "gpus": 1}}
    workdir = make_workdir(tmp_path / "work", config)
    snakemake(
        workdir,
        # The train jobs only: what runs after them claims no GPU.
        *(f"results/{experiment}/model" for experiment in ("quiet", "noisy")),
        "--resources",
        "gpu=2",
        env={"CUDA_VISIBLE_DEVICES": "3,5", "MOTORFLOW_GPU_LOCK_DIR": str(tmp_path / "locks")},
    )
    claimed = {
        experiment: re.search(
            r"Claimed GPU\(s\) (\S+) of 3,5",
            (workdir / f"results/logs/train/{experiment}.log").read_text(),
        ).group(1)
        for experiment in ("quiet", "noisy")
    }
    assert sorted(claimed.values()) == ["3", "5"], claimed
