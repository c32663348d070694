"""The fixed cost of a sweep's jobs: CPU-seconds per experiment, warm compile cache.

Runs benchmarks/configs/sweep-startup.yaml (21 tiny experiments whose training takes
milliseconds, plus their base) with the real Snakemake in a temporary directory: once
to warm the JAX compilation cache, then into fresh results folders with that cache,
twice in each mode, alternating: each job in a process of its own
(``MOTORFLOW_WARM_WORKERS=0``) and the default, jobs in warm workers. Reports per mode
the median over its runs of the CPU-seconds (user + sys) of the whole Snakemake
process tree per experiment, Snakemake's own share, and the median CPU-seconds per job
kind: from the rules' benchmark files (``cpu_time``) for processes of their own, from
the line each job's log ends with in a warm worker (the benchmark files then measure
the waiting process). CPU-seconds, not wall time, since the machine may be shared;
wall time, the load average and the machine's speed before each run (the CPU-seconds
of a fresh process importing JAX, Equinox and xarray and compiling one call) are
recorded too. Usage:

    python benchmarks/sweep_startup.py [--cores 2] [--repeats 2]
        [--baseline-src OTHER_CHECKOUT/src] [--modes warm_workers baseline]

`--baseline-src` adds a mode ``baseline``: warm workers running the motorflow at that
`src` folder and the workflow of its checkout (another commit's, e.g. ``git worktree
add ../before <commit>``), in a folder of its own, warmed up and measured alongside, so that a change is measured against its commit's
parent on the same machine at the same time. `--modes` picks the modes to run
(default: ``process_per_job warm_workers``, and ``baseline`` when given).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "benchmarks" / "configs" / "sweep-startup.yaml"
STEM = CONFIG.stem


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# Snakemake's own process notes its CPU-seconds as it exits (its jobs' are apart).
_SNAKEMAKE = """
import atexit, resource, sys
from snakemake.cli import main

path = sys.argv.pop(1)

def note():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(path, "w") as stream:
        stream.write(str(usage.ru_utime + usage.ru_stime))

atexit.register(note)
main()
"""


def _run(workdir: Path, cores: int) -> tuple[float, float]:
    """CPU-seconds of one full Snakemake run in `workdir`: all, and Snakemake's own."""
    own = workdir / "snakemake-cpu.txt"
    before = _cpu_children()
    done = subprocess.run(
        [sys.executable, "-c", _SNAKEMAKE, str(own), "--cores", str(cores), "--quiet",
         "all", "--configfile", str(workdir / "config.yaml")],
        check=False, cwd=workdir, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode:
        sys.exit(f"Snakemake failed (exit {done.returncode}):\n{done.stderr[-5000:]}")
    return _cpu_children() - before, float(own.read_text())


def _per_kind(results: Path, warm: bool) -> dict[str, list[float]]:
    """CPU-seconds of each job, by rule (warm: by log folder, `figures` for all figures)."""
    kinds: dict[str, list[float]] = {}
    if warm:
        for log in sorted((results / "logs").glob("**/*.log")):
            if found := _COST.findall(log.read_text()):
                kind = log.stem if log.parent.name == "logs" else log.parent.name  # summary
                kinds.setdefault(kind, []).append(float(found[-1]))
        return kinds
    for tsv in sorted((results / "benchmarks").glob("*/*.tsv")):
        with open(tsv) as stream:
            row = next(csv.DictReader(stream, delimiter="\t"))
        kinds.setdefault(tsv.parent.name, []).append(float(row["cpu_time"]))
    return kinds


_COST = re.compile(r"warm worker \d+: ([0-9.]+) CPU-s")


# A fixed job-like start-up: the imports and one compiled call in a fresh process.
_REFERENCE = "import jax, equinox, xarray; jax.jit(lambda x: x + 1)(1.0).block_until_ready()"


def _machine_speed() -> float:
    """CPU-seconds of a fresh process importing JAX, Equinox and xarray and running one
    compiled call (median of 3): how fast the machine runs a job's start-up now, so
    that runs of different machines or hours can be compared. A shared machine's speed
    for such work varies by 2-3x over a day while a pure-Python loop's does not
    (benchmarks/README.md)."""

    def once() -> float:
        before = _cpu_children()
        subprocess.run([sys.executable, "-c", _REFERENCE], check=True, capture_output=True)
        return _cpu_children() - before

    return statistics.median(once() for _ in range(3))


_PYTHONPATH = os.environ.get("PYTHONPATH", "")


def _set_mode(mode: str, baseline_src: str | None) -> None:
    """This process's environment (which Snakemake and its jobs inherit) for `mode`."""
    if mode == "process_per_job":
        os.environ["MOTORFLOW_WARM_WORKERS"] = "0"
    else:
        os.environ.pop("MOTORFLOW_WARM_WORKERS", None)
    paths = [str(Path(baseline_src).resolve())] if mode == "baseline" else []
    paths += [_PYTHONPATH] if _PYTHONPATH else []  # what the benchmark was started with
    if paths:
        os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    else:
        os.environ.pop("PYTHONPATH", None)


def _measure(workdir: Path, cores: int, warm: bool) -> dict[str, object]:
    if (workdir / "results").exists():
        shutil.rmtree(workdir / "results")
    speed = _machine_speed()
    load_before, start = os.getloadavg()[0], time.perf_counter()
    cpu, snakemake_cpu = _run(workdir, cores)
    wall, load_after = time.perf_counter() - start, os.getloadavg()[0]
    kinds = _per_kind(workdir / "results" / "config", warm)
    n_experiments = len(kinds["train"])
    jobs = sum(sum(costs) for costs in kinds.values())
    return {
        "cpu_s_per_experiment": cpu / n_experiments,
        "snakemake_own_cpu_s_per_experiment": snakemake_cpu / n_experiments,
        # What the jobs themselves cost; the rest of the run's CPU-seconds beside
        # Snakemake's own is the jobs' waiting processes and, with warm workers, the
        # workers' starts and their work between jobs.
        "jobs_cpu_s_per_experiment": jobs / n_experiments,
        "wall_s": wall,
        "median_cpu_s_per_job": {k: statistics.median(v) for k, v in sorted(kinds.items())},
        "load_average_1min": [load_before, load_after],
        "reference_cpu_s": speed,
        "experiments": n_experiments,
    }


def _median_of(runs: list[dict[str, object]]) -> dict[str, object]:
    def median(values):
        return round(statistics.median(values), 2)

    kinds = runs[0]["median_cpu_s_per_job"]
    return {
        "runs": len(runs),
        "experiments": runs[0]["experiments"],
        "cpu_s_per_experiment": median([r["cpu_s_per_experiment"] for r in runs]),
        "snakemake_own_cpu_s_per_experiment": median(
            [r["snakemake_own_cpu_s_per_experiment"] for r in runs]
        ),
        "jobs_cpu_s_per_experiment": median([r["jobs_cpu_s_per_experiment"] for r in runs]),
        "wall_s": median([r["wall_s"] for r in runs]),
        "median_cpu_s_per_job": {
            k: median([r["median_cpu_s_per_job"][k] for r in runs]) for k in kinds
        },
        "load_average_1min": [[round(x, 2) for x in r["load_average_1min"]] for r in runs],
        "reference_cpu_s": [round(r["reference_cpu_s"], 2) for r in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--baseline-src", help="src folder of the motorflow to compare with")
    parser.add_argument(
        "--modes", nargs="+", choices=("process_per_job", "warm_workers", "baseline")
    )
    args = parser.parse_args()
    modes = args.modes or ["process_per_job", "warm_workers"] + (
        ["baseline"] if args.baseline_src else []
    )
    if "baseline" in modes and not args.baseline_src:
        parser.error("the baseline mode needs --baseline-src")
    runs: dict[str, list[dict[str, object]]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory() as tmp:
        # The baseline runs its own checkout's workflow (the folder above its src).
        workdirs = {"ours": Path(tmp) / "ours"}
        if args.baseline_src:
            workdirs["baseline"] = Path(tmp) / "baseline"
        for code, workdir in workdirs.items():
            root = Path(args.baseline_src).resolve().parent if code == "baseline" else ROOT
            for part in ("workflow", "config", "profiles"):
                shutil.copytree(root / part, workdir / part)
            shutil.copy(root / "Snakefile", workdir / "Snakefile")
            shutil.copy(CONFIG, workdir / "config.yaml")
        # Warms each workdir's .jax_cache with its code's programs.
        for mode in dict.fromkeys("baseline" if m == "baseline" else "ours" for m in modes):
            _set_mode("baseline" if mode == "baseline" else "warm_workers", args.baseline_src)
            _run(workdirs[mode], args.cores)
        for _ in range(args.repeats):
            for mode in modes:
                _set_mode(mode, args.baseline_src)
                workdir = workdirs["baseline" if mode == "baseline" else "ours"]
                runs[mode].append(_measure(workdir, args.cores, mode != "process_per_job"))
    print(json.dumps({mode: _median_of(each) for mode, each in runs.items()}, indent=2))


if __name__ == "__main__":
    main()
