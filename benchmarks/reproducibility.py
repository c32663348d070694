"""Does training reproduce bitwise, and how far do its results move when the initial
parameters move by one ulp?

Trains one experiment of a config in this process (the workflow's trial specs,
seeds and keys; optionally at a reduced size), optionally with every initial
parameter moved by `--ulps` units in the last place (``numpy.nextafter``), evaluates
it on the experiment's center-out reaches as the workflow's evaluate stage does, and
prints a digest of the trained parameters (SHA-256 over their bytes) and the
endpoint error and final speed per replicate. Run it twice, or under another
``XLA_FLAGS`` (``--xla_cpu_max_isa=AVX2``) or thread count, and compare the digests.
Usage (repository root):

    python benchmarks/reproducibility.py --experiment eprop [--n-batches 100]
        [--batch-size 16] [--n-replicates 2] [--ulps 1] [--cpu-devices 2]
"""

from __future__ import annotations

import argparse
import hashlib
import os

import equinox as eqx
import jax
import numpy as np

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow._evaluate import evaluate
from motorflow._metrics import reach_metrics
from motorflow._training._driver import train


def nudged(ensemble, ulps: int):
    """`ensemble` with every floating array moved `ulps` ulps toward +inf."""

    def move(x):
        if not eqx.is_inexact_array(x):
            return x
        moved = np.asarray(x)
        for _ in range(ulps):
            moved = np.nextafter(moved, np.inf, dtype=moved.dtype)
        return jax.numpy.asarray(moved)

    return jax.tree.map(move, ensemble)


def digest(tree) -> str:
    hashed = hashlib.sha256()
    for leaf in jax.tree.leaves(eqx.filter(tree, eqx.is_array)):
        hashed.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return hashed.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/learning-rules.yaml")
    parser.add_argument("--experiment", default="eprop")
    parser.add_argument("--n-batches", type=int)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--n-replicates", type=int)
    parser.add_argument("--ulps", type=int, default=0)
    parser.add_argument(
        "--cpu-devices",
        type=int,
        default=1,
        help="XLA CPU devices, as a train job given this many threads starts",
    )
    args = parser.parse_args()
    mfp.use_devices(cpu_devices=args.cpu_devices)
    config = mfp.load_config_file(args.config)
    experiment = mfp.resolve_experiment(config, args.experiment)
    sizes = {
        "n_batches": args.n_batches,
        "batch_size": args.batch_size,
        "n_replicates": args.n_replicates,
    }
    training = experiment.train.model_copy(update={k: v for k, v in sizes.items() if v is not None})
    task = mf.Task(experiment.task)
    keys = mfp.experiment_keys(experiment.seed)
    trials = task.training_trials(
        key=keys["trials"],
        n_replicates=1 if training.shared_trials else training.n_replicates,
        n_batches=training.n_batches,
        batch_size=training.batch_size,
    )
    validation = task.validation_set(key=keys["validation"])
    ensemble = mf.make_ensemble(
        experiment.model,
        n_replicates=training.n_replicates,
        n_task_inputs=task.n_inputs,
        key=keys["init"],
    )
    ensemble = nudged(ensemble, args.ulps)
    result = train(
        ensemble, trials, task, training, key=keys["train"], validation=validation, progress=False
    )
    reaches = task.validation_set(key=keys["validation"])
    reaches = eqx.tree_at(lambda c: c.trials, reaches, reaches.trials.perturbed_by((), ()))
    states = evaluate(
        result.ensemble,
        task,
        experiment.model,
        key=keys["evaluate"],
        trials=reaches,
        conditions=mfp.parse_config(config).evaluation.conditions,
        conditions_key=keys["conditions"],
    )
    metrics = reach_metrics(states).isel(condition=0)
    endpoint = metrics.endpoint_error.mean("trial").values * 1000
    speed = metrics.final_speed.mean("trial").values
    print(
        f"{args.experiment} size {training.n_replicates}x{training.n_batches}x"
        f"{training.batch_size} ulps {args.ulps} cpu devices {args.cpu_devices} XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}"
    )
    print(f"params digest {digest(eqx.filter(result.ensemble, eqx.is_inexact_array))}")
    print("endpoint error (mm) per replicate: " + " ".join(f"{v:.2f}" for v in endpoint))
    print("final speed (m/s) per replicate:  " + " ".join(f"{v:.4f}" for v in speed))
    print(f"mean endpoint error {endpoint.mean():.2f} mm, final speed {speed.mean():.4f} m/s")


if __name__ == "__main__":
    main()
