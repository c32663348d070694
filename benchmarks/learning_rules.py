"""Seconds per batch of each learning rule relative to full BPTT, side by side.

Each rule trains the same batches from the same state with the trainer's compiled
chunk (`Trainer.run_chunk`), interleaved repeat by repeat; medians. The default
size is the default config's (config/config.yaml: 5 replicates, 64 trials of 60
steps, GRU 32). Usage:

    python benchmarks/learning_rules.py [--repeats 5] [--windows 5 20]
"""

from __future__ import annotations

import argparse
import statistics

import jax
from training_controls import setup, timed

# replicates, trials per batch, steps, hidden units, batches per compiled call
DEFAULT_SIZE = (5, 64, 60, 32, 20)


def trainer_for(learning: dict):
    return setup(DEFAULT_SIZE, model={"feedback": {"delay": 2}}, learning=learning)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--windows", type=int, nargs="+", default=[5, 20])
    args = parser.parse_args()
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, devices: {jax.devices()}")
    rules = {"bptt": {"kind": "bptt"}} | {
        f"truncated_bptt (window {w})": {"kind": "truncated_bptt", "window": w}
        for w in args.windows
    }
    runs = {name: trainer_for(learning) for name, learning in rules.items()}
    states = {name: run[1] for name, run in runs.items()}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for repeat in range(args.repeats + 1):  # the first round compiles
        for name, (trainer, _, chunk, index) in runs.items():
            seconds, states[name] = timed(trainer.run_chunk, states[name], chunk, index)
            if repeat:
                times[name].append(seconds)
    bptt = statistics.median(times["bptt"])
    print(f"{'rule':28} {'s/batch':>9} {'ratio to bptt':>14}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:28} {median:9.5f} {median / bptt:14.2f}")


if __name__ == "__main__":
    main()
