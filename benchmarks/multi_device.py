"""Training throughput on 1 versus N XLA CPU devices (one per core), replicates spread.

Each measurement runs in its own process (the device count is fixed when JAX
starts); the two device counts alternate round by round so machine load hits
both alike. Usage:

    python benchmarks/multi_device.py [--devices 2] [--replicates 4 5] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()


def worker(n_replicates: int, repeats: int, batches_per_call: int, size: str) -> None:
    import jax

    sys.path.insert(0, str(HERE.parent))
    from train_throughput import SIZES, setup, time_motorflow

    import motorflow as mf

    spec = dict(SIZES[size], n_replicates=n_replicates)
    _, task, config, ensemble, trials, key = setup(spec, batches_per_call)
    trainer = mf.Trainer(ensemble, task, config)
    state = trainer.init(key=key)
    _, state = time_motorflow(trainer, state, trials, batches_per_call)  # compile
    times = []
    for _ in range(repeats):
        seconds, state = time_motorflow(trainer, state, trials, batches_per_call)
        times.append(seconds)
    print(
        json.dumps(
            {
                "devices": len(jax.devices()),
                "padded": trainer.layout.n_padded,
                "s_per_batch": statistics.median(times),
            }
        )
    )


def run_worker(n_devices: int, n_replicates: int, args) -> dict:
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={n_devices}"}
    command = [
        sys.executable, str(HERE), "--worker", "--replicates", str(n_replicates),
        "--repeats", str(args.repeats), "--batches-per-call", str(args.batches_per_call),
        "--size", args.size,
    ]  # fmt: skip
    output = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--replicates", type=int, nargs="+", default=[4, 5])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batches-per-call", type=int, default=10)
    parser.add_argument("--size", default="tutorial")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.replicates[0], args.repeats, args.batches_per_call, args.size)
        return
    print(f"size {args.size}; median s/batch over {args.rounds} rounds")
    print(
        f"{'replicates':>10} {'1 device':>9} {f'{args.devices} devices':>10} {'padded to':>9} {'speed-up':>8}"
    )
    for n_replicates in args.replicates:
        one, many, padded = [], [], None
        for _ in range(args.rounds):
            one.append(run_worker(1, n_replicates, args)["s_per_batch"])
            result = run_worker(args.devices, n_replicates, args)
            many.append(result["s_per_batch"])
            padded = result["padded"]
        single, multi = statistics.median(one), statistics.median(many)
        print(
            f"{n_replicates:10d} {single:9.4f} {multi:10.4f} {padded:9d} {single / multi:8.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
