"""The fixed cost of a sweep's jobs: CPU-seconds per experiment, warm compile cache.

Runs benchmarks/configs/sweep-startup.yaml (21 tiny experiments whose training takes
milliseconds) with the real Snakemake in a temporary directory: once to warm the JAX
compilation cache, then again into a fresh results folder with that cache. Reports
the CPU-seconds (user + sys) of the whole Snakemake process tree per experiment, and
per job kind from the rules' benchmark files (Snakemake's ``cpu_time``); what no
benchmark file covers (figures, summary, trials, Snakemake itself) is ``other``.
CPU-seconds, not wall time, since the machine may be shared; the load average is
recorded too. Usage:

    python benchmarks/sweep_startup.py [--cores 2]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "benchmarks" / "configs" / "sweep-startup.yaml"
STEM = CONFIG.stem


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(workdir: Path, cores: int) -> float:
    """CPU-seconds of one full Snakemake run in `workdir`."""
    snakemake = Path(sys.executable).with_name("snakemake")
    before = _cpu_children()
    subprocess.run(
        [str(snakemake), "--cores", str(cores), "--quiet", "all",
         "--configfile", str(workdir / "config.yaml")],
        cwd=workdir, check=True, capture_output=True,
    )  # fmt: skip
    return _cpu_children() - before


def _per_kind(results: Path) -> dict[str, list[float]]:
    kinds: dict[str, list[float]] = {}
    for tsv in sorted((results / "benchmarks").glob("*/*.tsv")):
        with open(tsv) as stream:
            row = next(csv.DictReader(stream, delimiter="\t"))
        kinds.setdefault(tsv.parent.name, []).append(float(row["cpu_time"]))
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for part in ("workflow", "config", "profiles"):
            shutil.copytree(ROOT / part, workdir / part)
        shutil.copy(ROOT / "Snakefile", workdir / "Snakefile")
        shutil.copy(CONFIG, workdir / "config.yaml")
        _run(workdir, args.cores)  # warms .jax_cache
        shutil.rmtree(workdir / "results")
        load_before = os.getloadavg()[0]
        cpu = _run(workdir, args.cores)
        load_after = os.getloadavg()[0]
        results = workdir / "results" / "config"
        kinds = _per_kind(results)
        n_experiments = max(len(times) for times in kinds.values())
        accounted = sum(sum(times) for times in kinds.values())
        report = {
            "experiments": n_experiments,
            "cpu_s_total": round(cpu, 1),
            "cpu_s_per_experiment": round(cpu / n_experiments, 2),
            "median_cpu_s_per_job": {
                kind: round(statistics.median(times), 2) for kind, times in kinds.items()
            },
            "other_cpu_s_per_experiment": round((cpu - accounted) / n_experiments, 2),
            "load_average_1min": [round(load_before, 2), round(load_after, 2)],
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
