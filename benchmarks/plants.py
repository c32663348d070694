"""Training throughput of the registered plants, side by side, on one device and on all cores.

The point mass, the torque-driven arm and the muscle arm train with the settings of
`config/arms.yaml` (dt 0.02, GRU 32, feedback delay 2, 50-step reaches in the arms'
workspace). Each device count runs in its own process (the count is fixed when JAX
starts); inside it the plants alternate repeat by repeat, and the device counts
alternate round by round, so machine load hits all alike. Reports the median seconds
per batch, trial-steps per second and each plant's cost relative to the point mass,
as a markdown table. Usage:

    python benchmarks/plants.py [--plants point_mass arm muscle_arm] [--devices 1 N]
        [--replicates 5] [--batch-size 32] [--rounds 1] [--repeats 5] [--batches-per-call 10]

`N` defaults to `os.cpu_count()`: one XLA CPU device per core, the replicates spread
over them as the train stage does (padded with copies where they do not divide).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()

# config/arms.yaml's models; the point mass keeps its defaults.
PLANT_SETTINGS = {
    "point_mass": {"kind": "point_mass"},
    "arm": {"kind": "arm", "method": "rk4", "n_substeps": 2},
    "muscle_arm": {"kind": "muscle_arm", "method": "euler", "n_substeps": 2},
}
TASK = {
    "n_steps": 50,
    "workspace": [[-0.15, 0.3], [0.15, 0.55]],
    "eval": {"center": [0.0, 0.42], "distances": [0.1]},
}
HIDDEN_SIZE = 32
FEEDBACK_DELAY = 2
DT = 0.02
MAX_WARM_UP_CALLS = 5


def setup(plant: str, n_replicates: int, batch_size: int, batches_per_call: int):
    """A trainer and its first state for `plant`, and two chunks' worth of trials."""
    import jax

    import motorflow as mf

    model = mf.ModelConfig.from_dict(
        {
            "dt": DT,
            "plant": PLANT_SETTINGS[plant],
            "network": {"cell": "gru", "hidden_size": HIDDEN_SIZE},
            "feedback": {"delay": FEEDBACK_DELAY},
        }
    )
    task_config = mf.TaskConfig.from_dict(TASK)
    mf.check_model_fits_task(model, task_config)
    task = mf.Task(task_config)
    n_batches = 2 * batches_per_call
    config = mf.TrainConfig.from_dict(
        {
            "n_replicates": n_replicates,
            "batch_size": batch_size,
            "n_batches": n_batches,
            "validation": {"every": batches_per_call},
            "log": {"every": batches_per_call},
            "checkpoint": {"every": batches_per_call},
        }
    )
    init_key, trials_key, train_key = jax.random.split(jax.random.key(0), 3)
    ensemble = mf.make_ensemble(
        model, n_replicates=n_replicates, n_task_inputs=task.n_inputs, key=init_key
    )
    trials = task.training_trials(
        key=trials_key, n_replicates=n_replicates, n_batches=n_batches, batch_size=batch_size
    )
    trainer = mf.Trainer(ensemble, task, config)
    return trainer, trainer.init(key=train_key), trials


def time_chunk(trainer, state, chunk, index) -> tuple[float, object]:
    """Seconds per batch of one compiled chunk, called as `mf.train` calls it."""
    import jax

    start = time.perf_counter()
    state, records = trainer.run_chunk(trainer.layout.place(state), chunk, index)
    jax.block_until_ready(records)
    return (time.perf_counter() - start) / len(index), state


def warm_up(trainer, state, chunk, index, max_calls: int = MAX_WARM_UP_CALLS):
    """Call the chunk until a call compiles nothing new.

    A weakly typed leaf of the initial state can come back strongly typed, so the
    second (or third) call may compile again; timing those would count compiles.
    """
    for _ in range(max_calls):
        # The programs of every trainer of these settings (`shared_program`).
        compiled = trainer.run_chunk.jitted._cache_size()
        _, state = time_chunk(trainer, state, chunk, index)
        if trainer.run_chunk.jitted._cache_size() == compiled:
            return state
    raise RuntimeError(f"the training chunk still compiled anew after {max_calls} calls")


def worker(args) -> None:
    """Time every plant on this process's devices; print one JSON line."""
    import motorflow.pipeline as mfp

    mfp.use_devices(cpu_devices=args.devices[0])
    import jax
    import jax.numpy as jnp

    runs = {}
    for plant in args.plants:
        trainer, state, trials = setup(
            plant, args.replicates, args.batch_size, args.batches_per_call
        )
        chunk = jax.tree.map(
            lambda x: np.swapaxes(np.asarray(x)[:, : args.batches_per_call], 0, 1), trials
        )
        index = jnp.arange(args.batches_per_call)
        runs[plant] = [trainer, warm_up(trainer, state, chunk, index), chunk, index]
    times = {plant: [] for plant in args.plants}
    for _ in range(args.repeats):
        for plant, run in runs.items():
            trainer, state, chunk, index = run
            seconds, run[1] = time_chunk(trainer, state, chunk, index)
            times[plant].append(seconds)
    padded = next(iter(runs.values()))[0].layout.n_padded
    print(json.dumps({"devices": len(jax.devices()), "padded": padded, "times": times}))


def run_worker(n_devices: int, args) -> dict:
    command = [
        sys.executable, str(HERE), "--worker", "--devices", str(n_devices),
        "--plants", *args.plants, "--replicates", str(args.replicates),
        "--batch-size", str(args.batch_size), "--repeats", str(args.repeats),
        "--batches-per-call", str(args.batches_per_call),
    ]  # fmt: skip
    output = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def table(results: dict, args) -> str:
    """Markdown: per device count, each plant's s/batch, trial-steps/s and cost."""
    trial_steps = args.replicates * args.batch_size * TASK["n_steps"]
    reference = "point_mass" if "point_mass" in args.plants else args.plants[0]
    header, rule = ["plant"], ["---"]
    for n_devices, result in results.items():
        label = f"{n_devices} device{'s' if n_devices > 1 else ''}"
        if result["padded"] != args.replicates:
            label += f" (padded to {result['padded']})"
        header += [f"{label} s/batch", "trial-steps/s", f"cost vs {reference}"]
        rule += ["---"] * 3
    counts = list(results)
    if len(counts) > 1:
        header.append(f"speed-up {counts[-1]} vs {counts[0]}")
        rule.append("---")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
    for plant in args.plants:
        cells = [plant]
        for result in results.values():
            seconds = result["s_per_batch"][plant]
            cost = seconds / result["s_per_batch"][reference]
            cells += [f"{seconds:.4f}", f"{trial_steps / seconds:,.0f}", f"**{cost:.2f}**"]
        if len(counts) > 1:
            first, last = (results[n]["s_per_batch"][plant] for n in (counts[0], counts[-1]))
            cells.append(f"{first / last:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--plants", nargs="+", default=list(PLANT_SETTINGS), choices=list(PLANT_SETTINGS)
    )
    parser.add_argument(
        "--devices",
        type=int,
        nargs="+",
        default=sorted({1, os.cpu_count() or 1}),
        help="XLA CPU device counts to compare (default: 1 and one per core)",
    )
    parser.add_argument("--replicates", type=int, default=5, help="replicates trained at once")
    parser.add_argument("--batch-size", type=int, default=32, help="trials per batch")
    parser.add_argument("--rounds", type=int, default=1, help="processes per device count")
    parser.add_argument("--repeats", type=int, default=5, help="timed chunks per plant and process")
    parser.add_argument("--batches-per-call", "--batches", type=int, default=10)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    print(
        f"{args.replicates} replicates x {args.batch_size} trials x {TASK['n_steps']} steps, "
        f"GRU {HIDDEN_SIZE}, delay {FEEDBACK_DELAY}, dt {DT}; median s/batch over "
        f"{args.rounds} round(s) x {args.repeats} repeats of {args.batches_per_call} batches",
        flush=True,
    )
    times = {n: {plant: [] for plant in args.plants} for n in args.devices}
    padded = {}
    for _ in range(args.rounds):
        for n_devices in args.devices:
            result = run_worker(n_devices, args)
            padded[n_devices] = result["padded"]
            for plant, seconds in result["times"].items():
                times[n_devices][plant] += seconds
    results = {
        n: {
            "padded": padded[n],
            "s_per_batch": {plant: statistics.median(t) for plant, t in times[n].items()},
        }
        for n in args.devices
    }
    print(table(results, args))


if __name__ == "__main__":
    main()
