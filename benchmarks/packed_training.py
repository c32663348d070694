"""Packed training against one experiment after another: N experiments of a seed sweep
trained by ``motorflow.train_pack`` (one compiled call per chunk for all of them) and by
``motorflow.train`` in turn, in the same warm process (both programs compiled before
the timing). Prints the backend, N, the median wall seconds of each way over a few
repeats and their ratio. Usage:

    python benchmarks/packed_training.py [--experiments 8] [--repeats 3] [--batches 40]
        [--replicates 4] [--hidden 32] [--steps 60] [--batch-size 32] [--vectorize yes|no]

On a GPU the pack vmaps its experiments (``--vectorize`` default: off the CPU only); on
the CPU it maps them one after another (``lax.map``), so there the gain is only the
Python and dispatch overhead of the separate calls.
"""

import argparse
import statistics
import time

import jax
import numpy as np

import motorflow as mf


def member(seed: int, args: argparse.Namespace) -> dict:
    """train()'s arguments for one experiment of the sweep: the seed is all that differs."""
    model = mf.ModelConfig.from_dict(
        {
            "network": {"hidden_size": args.hidden, "hidden_noise_std": 0.01},
            "feedback": {"noise_std": 0.05},
        }
    )
    task = mf.Task(mf.TaskConfig.from_dict({"n_steps": args.steps}))
    config = mf.TrainConfig.from_dict(
        {
            "n_replicates": args.replicates,
            "n_batches": args.batches,
            "batch_size": args.batch_size,
            # Validated, logged and checkpointed only at the end: the chunks are the work.
            "validation": {"at": [args.batches]},
            "log": {"at": [args.batches]},
            "checkpoint": {"at": [args.batches]},
        }
    )
    init_key, trials_key, train_key = jax.random.split(jax.random.key(seed), 3)
    ensemble = mf.make_ensemble(
        model, n_replicates=args.replicates, n_task_inputs=task.n_inputs, key=init_key
    )
    trials = task.training_trials(
        key=trials_key,
        n_replicates=args.replicates,
        n_batches=args.batches,
        batch_size=args.batch_size,
    )
    return {
        "ensemble": ensemble,
        "trials": trials,
        "task": task,
        "config": config,
        "key": train_key,
        "progress": False,
    }


def one_after_another(members: list[dict], vectorize: bool | None) -> list[mf.TrainResult]:
    results = [mf.train(**arguments) for arguments in members]
    jax.block_until_ready([result.state for result in results])
    return results


def packed(members: list[dict], vectorize: bool | None) -> list[mf.TrainResult]:
    results = mf.train_pack(members, vectorize_members=vectorize)
    jax.block_until_ready([result.state for result in results])
    return results


def seconds(way, members: list[dict], vectorize: bool | None, repeats: int) -> tuple:
    """The median wall seconds of `way` over `repeats` timed runs (after an untimed one
    that compiles), and its results."""
    results = way(members, vectorize)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        way(members, vectorize)
        times.append(time.perf_counter() - start)
    return statistics.median(times), results


def largest_difference(a: list[mf.TrainResult], b: list[mf.TrainResult]) -> float:
    """The largest relative difference between the runs' final parameters."""
    worst = 0.0
    leaves_a = jax.tree.leaves([r.state.params for r in a])
    leaves_b = jax.tree.leaves([r.state.params for r in b])
    for x, y in zip(leaves_a, leaves_b):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        worst = max(worst, float(np.max(np.abs(x - y) / np.maximum(np.abs(y), 1e-12))))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--replicates", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--vectorize", choices=("yes", "no"), default=None)
    args = parser.parse_args()
    vectorize = None if args.vectorize is None else args.vectorize == "yes"
    members = [member(seed, args) for seed in range(args.experiments)]
    alone, alone_results = seconds(one_after_another, members, vectorize, args.repeats)
    pack, pack_results = seconds(packed, members, vectorize, args.repeats)
    mapped = jax.default_backend() != "cpu" if vectorize is None else vectorize
    print(f"backend: {jax.default_backend()} ({jax.devices()[0].device_kind})")
    print(
        f"experiments: {args.experiments} x {args.replicates} replicates, {args.batches} "
        f"batches of {args.batch_size} trials, {args.steps} steps, hidden {args.hidden}; "
        f"members {'vmapped' if mapped else 'one after another (lax.map)'}"
    )
    print(f"one after another: {alone:.3f} s (median of {args.repeats})")
    print(f"packed:            {pack:.3f} s (median of {args.repeats})")
    print(f"ratio (one after another / packed): {alone / pack:.2f}")
    difference = largest_difference(pack_results, alone_results)
    print(
        "packed against one after another, final parameters: "
        + ("bitwise equal" if difference == 0 else f"largest relative difference {difference:.2g}")
    )


if __name__ == "__main__":
    main()
