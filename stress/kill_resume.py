"""Kill the train job at random moments, resume, and check the results are identical.

Runs a small pipeline once to completion (the reference), then N times: start
`snakemake`, SIGKILL the running train job at a random moment of its life, run
`snakemake` again (the documented way to resume) and compare every Zarr store
and model with the reference. Prints ``k/N identical``; exits non-zero unless
all are. Usage (from the repository root, with motorflow installed):

    python stress/kill_resume.py --runs 20
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from workflow_helpers import (
    assert_same_results,
    make_workdir,
    snakemake,
    tiny_config,
)


def stress_config() -> dict:
    config = tiny_config()
    del config["experiments"]["noisy"]
    config["tasks"]["reach"]["n_steps"] = 30
    config["models"]["small"]["network"]["hidden_size"] = 16
    config["trainings"]["quick"].update(
        n_batches=200,
        batch_size=16,
        validation={"every": 10},
        log={"every": 10},
        checkpoint={"every": 20},
    )
    return config


def train_process(snakemake_process: psutil.Process) -> psutil.Process | None:
    for child in snakemake_process.children(recursive=True):
        try:
            if any("train.py" in part for part in child.cmdline()):
                return child
        except psutil.NoSuchProcess:
            continue
    return None


def kill_train_at_random(workdir: Path, lifetime: float, rng: random.Random) -> tuple[bool, str]:
    """Start snakemake, SIGKILL its train job after a random fraction of `lifetime`.

    Returns whether the kill landed, and what happened."""
    process = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--quiet", "all"],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    parent = psutil.Process(process.pid)
    deadline = time.monotonic() + 120
    train = None
    while train is None and process.poll() is None and time.monotonic() < deadline:
        train = train_process(parent)
        time.sleep(0.01)
    if train is None:
        process.wait()
        return False, "train job never seen"
    # Up to 90% of the reference job's life (which began with a cold compile cache,
    # like every run here), so that nearly every kill lands inside the job.
    delay = rng.uniform(0, 0.9 * lifetime)
    time.sleep(delay)
    try:
        train.kill()
        killed, outcome = True, f"killed {delay:.2f} s into the train job"
    except psutil.NoSuchProcess:
        killed, outcome = False, f"train job had finished before {delay:.2f} s"
    process.wait()
    return killed, outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="motorflow-stress-"))
    reference = make_workdir(root / "reference", stress_config())
    start = time.monotonic()
    snakemake(reference)
    benchmark = (reference / "results/benchmarks/train/quiet.tsv").read_text().splitlines()
    lifetime = float(benchmark[1].split("\t")[0])
    print(f"reference run: {time.monotonic() - start:.1f} s; train job {lifetime:.1f} s")
    identical = kills = 0
    for run in range(1, args.runs + 1):
        workdir = make_workdir(root / f"run{run}", stress_config())
        killed, outcome = kill_train_at_random(workdir, lifetime, rng)
        kills += killed
        snakemake(workdir)
        try:
            assert_same_results(reference, workdir, ["quiet"])
            identical += 1
            verdict = "identical"
        except AssertionError as error:
            verdict = f"DIFFERENT: {str(error)[:200]}"
        print(f"run {run}: {outcome}; resumed: {verdict}", flush=True)
    print(
        f"{identical}/{args.runs} identical ({kills} of the {args.runs} kills landed in training)"
    )
    return 0 if identical == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
