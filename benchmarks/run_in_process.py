"""Train and evaluate every experiment of a config (sweeps expanded) without Snakemake,
several at once: the workflow's trials, train and evaluate stages, called in worker
processes.

For a machine that has motorflow's library but no Snakemake (a lent GPU, whose
processes share the one device: 16 CPU cores, a GPU that one small training leaves
mostly idle), or to check a sweep at another size. Each experiment's results land
where the workflow puts them (`<results>/<experiment>/history.zarr`, `metrics.zarr`),
so `benchmarks/lr_sweep.py --results <results>` reads them; the trained models,
checkpoints and evaluated states are not kept. Nothing here is incremental: an
experiment whose `metrics.zarr` exists is skipped, any other is trained afresh.
Usage (repository root):

    python benchmarks/run_in_process.py config/learning-rules-tuning.yaml \
        --results DIR [--n-batches 1200] [--workers 8] [--only 'lr-eprop*']
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path


def run_one(
    config_path: str, name: str, results: str, n_batches: int | None, cache: str | None
) -> tuple[str, float]:
    """Trial specs, training and evaluation of experiment `name`; its seconds."""
    # Processes share the GPU: each takes memory as it needs it, not 75% up front.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import motorflow.pipeline as mfp

    mfp.use_devices(cpu_devices=1)
    mfp.enable_compilation_cache(cache)
    config = mfp.load_config_file(config_path)
    if n_batches is not None:  # every training's (an experiment's override could differ)
        for training in config["trainings"].values():
            training["n_batches"] = n_batches
    experiment = mfp.resolve_experiment(config, name)
    folder = Path(results) / name
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        mfp.make_trials(
            experiment.dataset_spec(),
            train_path=scratch / "train.zarr",
            eval_path=scratch / "eval.zarr",
        )
        mfp.train_experiment(
            experiment,
            trials_path=scratch / "train.zarr",
            eval_path=scratch / "eval.zarr",
            model_path=scratch / "model",
            best_model_path=scratch / "model_best",
            history_path=folder / "history.zarr",
            checkpoint_dir=scratch / "checkpoints",
            progress=False,
        )
        mfp.evaluate_experiment(
            name,
            task=experiment.task,
            seed=experiment.seed,
            model_path=scratch / "model",
            eval_path=scratch / "eval.zarr",
            states_path=scratch / "states.zarr",
            metrics_path=folder / "metrics.zarr",
            table_path=folder / "metrics.csv",
            evaluation=mfp.parse_config(config).evaluation,
        )
    return name, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--results", required=True, type=Path)
    parser.add_argument("--n-batches", type=int, help="default: each training's n_batches")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--only", action="append", help="experiment name patterns (fnmatch)")
    parser.add_argument("--jax-cache", help="a persistent compilation cache the workers share")
    args = parser.parse_args()
    import motorflow.pipeline as mfp

    names = list(mfp.resolve_experiments(mfp.load_config_file(args.config)))
    if args.only:  # in the order of the patterns (the costliest first keeps workers busy)
        names = [n for p in args.only for n in names if fnmatch.fnmatch(n, p)]
        names = list(dict.fromkeys(names))
    todo = [n for n in names if not (args.results / n / "metrics.zarr").exists()]
    print(f"{len(todo)} of {len(names)} experiments to run, {args.workers} at once", flush=True)
    start = time.perf_counter()
    # Fresh (spawned) workers: JAX must not be initialised before the fork.
    with ProcessPoolExecutor(args.workers, mp_context=get_context("spawn")) as pool:
        futures = [
            pool.submit(run_one, args.config, n, str(args.results), args.n_batches, args.jax_cache)
            for n in todo
        ]
        for done, future in enumerate(as_completed(futures), 1):
            name, seconds = future.result()
            elapsed = time.perf_counter() - start
            print(f"[{done}/{len(todo)}] {name}: {seconds:.1f} s (at {elapsed:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
