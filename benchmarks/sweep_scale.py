"""A sweep end to end at 100 and 1,000 experiments: what its size costs (issue 47).

Runs benchmarks/configs/sweep-100.yaml and sweep-1000.yaml (the same tiny experiment,
whose training takes milliseconds, over seeds x feedback-noise levels) with the real
Snakemake, each in a fresh copy of the workflow, one after the other: first its dry
run, then the run itself, into a JAX compilation cache that a one-experiment run
warmed. Reports per size: the dry run's wall time, the run's wall time and CPU-seconds
(user + sys of the whole process tree) in all and per experiment, Snakemake's own
share, and what the run left: files and bytes under results/, the summary table's and
the comparison and sweep figures' sizes. CPU-seconds as well as wall time, since the
machine may be shared. Usage:

    python benchmarks/sweep_scale.py [--cores 2] [--sizes 100 1000] [--pack 1 20]

The configs pack 20 experiments per job at every stage; `--pack` replaces that. A run
of 1,000 with packs of 20 takes about 50 minutes on 2 cores, with a job per experiment
and stage (`--pack 1`) about three and a half hours (benchmarks/README.md). Run nothing
beside it, and give it --folder so that a stopped run can be finished.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from sweep_startup import _SNAKEMAKE, _cpu_children

ROOT = Path(__file__).resolve().parents[1]


# The stages whose jobs take packs of experiments (resources.<stage>.pack).
PACKED_STAGES = ("train", "evaluate", "analysis", "figures")


def _workdir(
    parent: Path, size: int, cache: Path, pack: int | None = None
) -> tuple[Path, Path]:
    """A copy of the workflow with the sweep's config (its compilation cache `cache`;
    `pack` experiments per job of each per-experiment stage, None: the config's)."""
    workdir = parent / f"sweep-{size}"
    workdir.mkdir()
    shutil.copy(ROOT / "Snakefile", workdir)
    for folder in ("workflow", "profiles"):
        shutil.copytree(ROOT / folder, workdir / folder)
    config = yaml.safe_load((ROOT / "benchmarks" / "configs" / f"sweep-{size}.yaml").read_text())
    config.update(jax_cache_dir=str(cache), results="results")
    if pack is not None:
        config["resources"] = {stage: {"pack": pack} for stage in PACKED_STAGES}
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return workdir, path


def _snakemake(workdir: Path, config: Path, cores: int, *args: str) -> tuple[float, float, float]:
    """Wall seconds, CPU-seconds of the process tree and Snakemake's own of one run
    (`args`: its targets and options)."""
    own = workdir / "snakemake-cpu.txt"
    before, start = _cpu_children(), time.perf_counter()
    done = subprocess.run(
        # The targets first: --quiet and --configfile take every word after them.
        [sys.executable, "-c", _SNAKEMAKE, str(own), *args, "--cores", str(cores),
         "--quiet", "all", "--configfile", str(config)],
        check=False, cwd=workdir, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"Snakemake failed (exit {done.returncode}):\n{done.stderr[-5000:]}")
    return wall, _cpu_children() - before, float(own.read_text())


def _size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def measure(
    parent: Path,
    size: int,
    cores: int,
    cache: Path,
    options: tuple[str, ...] = (),
    pack: int | None = None,
) -> dict[str, object]:
    """The dry run's and the run's costs of the sweep of `size` (`options`: more of
    Snakemake's, e.g. its scheduler; `pack`: experiments per job of each stage)."""
    workdir, config = _workdir(parent, size, cache, pack)
    n_experiments = size + 1  # the grid and its base
    dry_wall, dry_cpu, _ = _snakemake(workdir, config, cores, "all", "--dry-run", *options)
    print(f"{size}: dry run {dry_wall:.1f} s", flush=True)
    load_before = os.getloadavg()[0]
    wall, cpu, own = _snakemake(workdir, config, cores, "all", *options)
    results = workdir / "results"
    n_files, n_bytes = _size(results)
    figures = results / "figures"
    return {
        "experiments": n_experiments,
        "options": " ".join(options),
        "pack": pack,
        "dry_run_wall_s": round(dry_wall, 1),
        "dry_run_cpu_s": round(dry_cpu, 1),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "cpu_s_per_experiment": round(cpu / n_experiments, 2),
        "snakemake_own_cpu_s": round(own, 1),
        "results_files": n_files,
        "results_mib": round(n_bytes / 2**20, 1),
        "summary_csv_kib": round((results / "summary.csv").stat().st_size / 1024, 1),
        "comparison_png_kib": round((figures / "comparison.png").stat().st_size / 1024, 1),
        "sweep_png_kib": round((figures / "sweep-noise.png").stat().st_size / 1024, 1),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument(
        "--scheduler", choices=["ilp", "greedy"], nargs="+", default=[None],
        help="Snakemake's job scheduler; several: each size is run once with each, in turn "
        "(default: the profile's)",
    )  # fmt: skip
    parser.add_argument(
        "--pack", type=int, nargs="+", default=[None],
        help="experiments per job of each per-experiment stage (resources.<stage>.pack; "
        "default: the config's, 20); several: each size is run once with each, in turn",
    )  # fmt: skip
    parser.add_argument(
        "--folder", type=Path, default=None,
        help="an empty folder to run in, kept afterwards (a failed or stopped run can then "
        "be finished with snakemake in its sweep-<size> folder); default: a temporary one",
    )  # fmt: skip
    args = parser.parse_args()
    if args.folder is not None:
        args.folder.mkdir(parents=True, exist_ok=True)
        if any(args.folder.iterdir()):
            sys.exit(f"--folder {args.folder} is not empty: give an empty or new folder")
        _run(args.folder, args)
        return
    with tempfile.TemporaryDirectory(prefix="motorflow-sweep-scale-") as folder:
        _run(Path(folder), args)


def _run(parent: Path, args: argparse.Namespace) -> None:
    """Warm the cache, then measure each size in `parent`."""
    cache = parent / "jax_cache"
    # Warm the compilation cache with the sweep's one experiment shape.
    warm, config = _workdir(parent, 100, cache)
    _snakemake(warm, config, args.cores, "results/base/metrics.zarr")
    shutil.rmtree(warm)
    for size in args.sizes:
        for scheduler in args.scheduler:
            for pack in args.pack:
                options = () if scheduler is None else ("--scheduler", scheduler)
                run = parent / f"{scheduler or 'profile'}-pack{pack or 'config'}"
                run.mkdir(exist_ok=True)
                result = measure(run, size, args.cores, cache, options, pack)
                print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
