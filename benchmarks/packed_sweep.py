"""A seed x setting sweep's trainings through the workflow, one experiment per job against
train packs (``resources.train.pack``): issue 47 point 3's measurement.

Each way runs in a fresh copy of the workflow with the real Snakemake: the trial specs
first (untimed), then the train stage of every experiment (timed: wall seconds, and the
GPU's utilisation sampled by ``nvidia-smi`` every 200 ms while it runs, where there is
one). The sweep lists the setting's levels first and the seeds last: `--setting noise`
(the feedback noise std 0.01, 0.02, ...: none zero, which would draw no noise and so be
a program of its own), `learning-rate` (0.001, 0.002, ...) or `effort-weight` (the
effort term's weight 1, 2, ...). Each is an array of the compiled program, so a pack of
any of the sweep's experiments is one compiled program. The
compilation cache is warmed by a one-experiment run before the timings. Every job asks
for one GPU when there is one (``--resources gpu=1``: one job on the card at a time, each
job its own process); on the CPU the jobs run in warm workers. Usage:

    python benchmarks/packed_sweep.py [--setting noise] [--seeds 10] [--levels 10]
        [--packs 1 10 100] [--batches 200] [--batch-size 32] [--hidden 32] [--cores 16]

Prints a line per pack size: jobs, wall seconds, ratio to pack 1, mean and median GPU
utilisation (%); and checks that every experiment's trained model is the same in every
way (bitwise; on a GPU within the stated rounding). Run nothing beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


# Per --setting: the grid key and its i-th level.
SETTINGS = {
    "noise": ("model.feedback.noise_std", lambda i: round(0.01 * (i + 1), 4)),
    "learning-rate": ("training.optimizer.learning_rate", lambda i: round(0.001 * (i + 1), 4)),
    "effort-weight": ("training.loss.effort.weight", lambda i: float(i + 1)),
}


def sweep_config(args: argparse.Namespace, pack: int, cache: Path) -> dict:
    key, level = SETTINGS[args.setting]
    gpus = 1 if shutil.which("nvidia-smi") else 0
    return {
        "tasks": {"reach": {"n_steps": 60, "eval": {"n_directions": 4, "distances": [0.1]}}},
        "models": {"small": {"network": {"hidden_size": args.hidden}, "feedback": {"delay": 2}}},
        "trainings": {
            "quick": {
                "n_replicates": 4,
                "n_batches": args.batches,
                "batch_size": args.batch_size,
                "validation": {"at": [args.batches]},
                "log": {"at": [args.batches]},
                "checkpoint": {"at": [args.batches]},
            }
        },
        "experiments": {"base": {"task": "reach", "model": "small", "training": "quick"}},
        "sweeps": {
            "grid": {
                "experiment": "base",
                # Seeds last: consecutive experiments are one level's seeds.
                "grid": {
                    key: [level(i) for i in range(args.levels)],
                    "seed": list(range(args.seeds)),
                },
            }
        },
        "resources": {"train": {"threads": 1, "gpus": gpus, "pack": pack}},
        "results": "results",
        "jax_cache_dir": str(cache),
    }


def workdir(parent: Path, name: str, config: dict) -> Path:
    folder = parent / name
    folder.mkdir()
    shutil.copy(ROOT / "Snakefile", folder)
    for part in ("workflow", "profiles"):
        shutil.copytree(ROOT / part, folder / part)
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def trained(names: list[str]) -> list[str]:
    return [f"results/{name}/model" for name in names]


def snakemake(folder: Path, cores: int, *targets: str) -> float:
    """Wall seconds of one run making `targets`."""
    gpu = ["--resources", "gpu=1"] if shutil.which("nvidia-smi") else []
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", *targets, "--cores", str(cores), *gpu,
         "--quiet", "all", "--configfile", "config.yaml"],
        cwd=folder, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"snakemake failed in {folder}:\n{done.stderr[-4000:]}")
    return time.perf_counter() - start


class Utilisation:
    """The GPU's utilisation (%), sampled by nvidia-smi while the block runs."""

    def __enter__(self) -> Utilisation:
        self.samples: list[float] = []
        self.process = None
        if shutil.which("nvidia-smi"):
            self.process = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                 "-lms", "200"],
                stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            self.reader = threading.Thread(target=self._read, daemon=True)
            self.reader.start()
        return self

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.strip().isdigit():
                self.samples.append(float(line))

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait()
            self.reader.join(timeout=5)

    def summary(self) -> str:
        if not self.samples:
            return "n/a (no nvidia-smi)"
        mean, median = statistics.fmean(self.samples), statistics.median(self.samples)
        return f"mean {mean:.0f}%, median {median:.0f}%"


def models(folder: Path, names: list[str]) -> dict:
    import equinox as eqx
    import jax
    import numpy as np

    import motorflow as mf

    found = {}
    for name in names:
        ensemble, _ = mf.load_ensemble(folder / "results" / name / "model")
        found[name] = [np.asarray(x) for x in jax.tree.leaves(eqx.filter(ensemble, eqx.is_array))]
    return found


def device() -> str:
    if not shutil.which("nvidia-smi"):
        return "CPU"
    query = ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]
    return subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--setting", choices=list(SETTINGS), default="noise")
    parser.add_argument("--levels", "--noises", dest="levels", type=int, default=10)
    parser.add_argument("--packs", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--cores", type=int, default=16)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    # This process only reads the models: on the CPU, holding none of the GPU's memory.
    os.environ["JAX_PLATFORMS"] = "cpu"
    import motorflow.pipeline as mfp

    with tempfile.TemporaryDirectory() as parent:
        parent = Path(parent)
        cache = parent / "jax_cache"
        names = list(mfp.check_config(sweep_config(args, 1, cache)).experiments)
        names = [name for name in names if name != "base"]
        # The compilation cache warmed by one experiment's training.
        warm = workdir(parent, "warm", sweep_config(args, 1, cache))
        snakemake(warm, args.cores, *trained(names[:1]))
        results, reference = [], None
        for pack in args.packs:
            folder = workdir(parent, f"pack-{pack}", sweep_config(args, pack, cache))
            snakemake(folder, args.cores, "--until", "trials")
            with Utilisation() as gpu:
                wall = snakemake(folder, args.cores, *trained(names))
            timed = folder / "results" / "benchmarks"
            jobs = sum(len(list((timed / rule).glob("*.tsv"))) for rule in ("train", "train_pack"))
            results.append((pack, jobs, wall, gpu.summary()))
            found = models(folder, names)
            if reference is None:
                reference = found
            else:
                worst = max(
                    float(abs(a - b).max() / max(abs(b).max(), 1e-30))
                    for name in names
                    for a, b in zip(found[name], reference[name])
                )
                results[-1] += (worst,)
            print(json.dumps({"pack": pack, "jobs": jobs, "wall_s": round(wall, 1)}), flush=True)
        base = results[0][2]
        print(f"device {device()}, {len(names)} experiments "
              f"({args.levels} levels of {args.setting} x {args.seeds} seeds), {args.batches} batches of "
              f"{args.batch_size}, hidden {args.hidden}")  # fmt: skip
        for pack, jobs, wall, gpu, *worst in results:
            difference = f", largest relative difference to pack 1 {worst[0]:.2e}" if worst else ""
            print(f"pack {pack:4d}: {jobs:4d} train jobs, {wall:7.1f} s, x{base / wall:5.2f} "
                  f"faster than pack 1; GPU utilisation {gpu}{difference}")  # fmt: skip


if __name__ == "__main__":
    main()
