"""The train stage end to end at several replicate counts: what a Snakemake train job costs.

For each replicate count, a fresh process (so nothing is compiled or cached in memory
beforehand; no persistent compilation cache) writes the experiment's trial specs and
then trains it through :func:`motorflow.pipeline.train_experiment`, exactly what the
workflow's train job calls: compilation, every batch, validation, checkpoints, the
saved model and history. Reports the seconds of each part (imports excluded), the
seconds per batch over the whole stage and trial-steps per second. Usage:

    python benchmarks/train_stage.py [--config config/config.yaml] [--experiment quiet]
        [--replicates 5 20] [--batches N]

`--batches` overrides the training's `n_batches` (default: the config's). Runs on
whatever backend JAX finds (the GPU when one is visible, else one CPU device).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _stage(config_path: str, experiment: str, n_replicates: int, n_batches: int | None) -> dict:
    """Trial specs and training of one experiment at `n_replicates`, timed (in-process)."""
    import jax

    import motorflow.pipeline as mfp

    mfp.use_devices(cpu_devices=1)
    config = mfp.load_config_file(config_path)
    training = config["experiments"][experiment]["training"]
    config["trainings"][training]["n_replicates"] = n_replicates
    if n_batches is not None:
        config["trainings"][training]["n_batches"] = n_batches
    resolved = mfp.resolve_experiment(config, experiment)
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp)
        trials = results / "trials"
        start = time.perf_counter()
        mfp.make_trials(
            resolved.dataset_spec(),
            train_path=trials / "train.zarr",
            eval_path=trials / "eval.zarr",
        )
        trials_s = time.perf_counter() - start
        start = time.perf_counter()
        mfp.train_experiment(
            resolved,
            trials_path=trials / "train.zarr",
            eval_path=trials / "eval.zarr",
            model_path=results / "model",
            best_model_path=results / "model_best",
            history_path=results / "history.zarr",
            checkpoint_dir=results / "checkpoints",
            progress=False,
        )
        train_s = time.perf_counter() - start
    train = resolved.train
    task = resolved.task
    return {
        "backend": jax.default_backend(),
        "device": str(jax.devices()[0].device_kind),
        "replicates": n_replicates,
        "batches": train.n_batches,
        "batch_size": train.batch_size,
        "n_steps": task.n_steps,
        "trials_s": trials_s,
        "train_s": train_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "config" / "config.yaml"))
    parser.add_argument("--experiment", default="quiet")
    parser.add_argument("--replicates", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--batches", type=int, default=None)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(_stage(args.config, args.experiment, args.child, args.batches)))
        return
    print(
        f"{'reps':>4} {'backend':>7} {'batches':>7} {'trials s':>8} {'train s':>8} "
        f"{'s/batch':>8} {'trial-steps/s':>13}  device"
    )
    for n_replicates in args.replicates:
        command = [sys.executable, __file__, "--config", args.config]
        command += ["--experiment", args.experiment, "--child", str(n_replicates)]
        if args.batches is not None:
            command += ["--batches", str(args.batches)]
        output = subprocess.run(command, check=True, capture_output=True, text=True)
        r = json.loads(output.stdout.strip().splitlines()[-1])
        per_batch = r["train_s"] / r["batches"]
        trial_steps = r["replicates"] * r["batch_size"] * r["n_steps"] / per_batch
        print(
            f"{r['replicates']:4d} {r['backend']:>7} {r['batches']:7d} {r['trials_s']:8.2f} "
            f"{r['train_s']:8.2f} {per_batch:8.4f} {trial_steps:13.0f}  {r['device']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
