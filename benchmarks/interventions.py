"""What interventions on the network's units cost in training: seconds per batch of one
trainer's chunk with no perturbation, with a curl field (a perturbation of the body:
the intervention family absent from the program), and with a stimulation or a clamp of
a tenth of the units over a window (the family present), interleaved repeat by repeat
in one process so machine load hits all alike; medians over the repeats. Usage:

    python benchmarks/interventions.py [--size small] [--repeats 7] [--batches 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import jax

import motorflow as mf

sys.path.insert(0, str(Path(__file__).parent))
from train_throughput import SIZES, setup, time_motorflow

CASES = {
    "none": [],
    "curl (body)": [{"kind": "curl", "strength": [0, 10], "probability": 0.5}],
    "stimulation (units)": [
        {"kind": "stimulation", "fraction": 0.1, "amplitude": [0, 1], "start": [0, 0.5]}
    ],
    "clamp (units)": [{"kind": "clamp", "fraction": 0.1, "start": [0, 0.5], "duration": 0.2}],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batches", type=int, default=20, help="batches per timed chunk")
    args = parser.parse_args()
    size = SIZES[args.size]
    model, _, config, ensemble, _, key = setup(size, args.batches)
    runs = {}
    for name, perturbations in CASES.items():
        task = mf.Task(
            mf.TaskConfig.from_dict({"n_steps": size["n_steps"], "perturbations": perturbations})
        )
        trials = task.training_trials(
            key=jax.random.key(1),
            n_replicates=size["n_replicates"],
            n_batches=2 * args.batches,
            batch_size=size["batch_size"],
        )
        trainer = mf.Trainer(ensemble, task, config)
        state = trainer.init(key=key)
        _, state = time_motorflow(trainer, state, trials, args.batches)  # compiles
        runs[name] = [trainer, state, trials, []]
    for _ in range(args.repeats):
        for run in runs.values():
            seconds, run[1] = time_motorflow(run[0], run[1], run[2], args.batches)
            run[3].append(seconds)
    base = statistics.median(runs["none"][3])
    print(f"{args.size}: {size}, {args.batches} batches a chunk, {args.repeats} repeats")
    print(f"{'perturbations':<22}{'s/batch':>10}{'vs none':>9}")
    for name, (*_, times) in runs.items():
        median = statistics.median(times)
        print(f"{name:<22}{median:>10.4f}{median / base:>9.2f}")


if __name__ == "__main__":
    main()
