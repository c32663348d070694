"""Seconds per batch of FORCE (online RLS on the readout, `update_every: 1`) in a
reservoir (Sussillo & Abbott 2009: gain 1.5, p = 0.1, 10 sub-steps per step, the
output fed back) as the reservoir grows, beside RLS on today's 32-unit leaky network.

One replicate, 64 trials of 60 steps, the trainer's compiled chunk of `--batches`
batches, the median of `--repeats` repeats after one compiling call. Usage:

    python benchmarks/force.py [--sizes 100 300 1000] [--repeats 3] [--batches 2]
"""

from __future__ import annotations

import argparse
import statistics

import jax
from training_controls import setup, timed

RESERVOIR = {
    "feedback": {"delay": 2},
    "network": {
        "cell": {
            "kind": "reservoir",
            "tau": 0.05,
            "gain": 1.5,
            "connectivity": 0.1,
            "output_feedback": True,
        },
        "substeps": 10,
    },
}
LEAKY = {"feedback": {"delay": 2}, "network": {"cell": {"kind": "leaky", "tau": 0.1}}}
FORCE = {
    "trainable": ["network.readout"],
    "learning": {"kind": "rls", "update_every": 1, "target": "corrective", "movement_time": 1.0},
}


def seconds_per_batch(model: dict, hidden: int, batches: int, repeats: int) -> float:
    trainer, state, chunk, index = setup((1, 64, 60, hidden, batches), model=model, **FORCE)
    _, state = timed(trainer.run_chunk, state, chunk, index)  # compile
    times = []
    for _ in range(repeats):
        seconds, state = timed(trainer.run_chunk, state, chunk, index)
        times.append(seconds)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batches", type=int, default=2)
    args = parser.parse_args()
    print(f"jax {jax.__version__}, backend {jax.default_backend()}")
    print("| network | s/batch |\n|---|---|")
    leaky = seconds_per_batch(LEAKY, 32, args.batches, args.repeats)
    print(f"| leaky, 32 units, 1 step per step | {leaky:.4f} |", flush=True)
    for hidden in args.sizes:
        found = seconds_per_batch(RESERVOIR, hidden, args.batches, args.repeats)
        print(
            f"| reservoir, {hidden} units, 10 sub-steps, output fed back | {found:.4f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
