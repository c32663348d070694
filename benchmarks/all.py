"""Every speed benchmark, one after another, with their default settings.

Training throughput against the bare-JAX floor, 1 against 2 XLA CPU devices, the
three plants' training cost side by side, and the per-stage overhead; each prints its
own table. Usage (repository root):

    python benchmarks/all.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = (
    "train_throughput.py",
    "multi_device.py",
    "plants.py",
    "training_controls.py",
    "stage_overhead.py",
)


def main() -> int:
    failed = []
    for script in BENCHMARKS:
        print(f"\n== {script} ==", flush=True)
        if subprocess.run([sys.executable, str(HERE / script)], check=False).returncode:
            failed.append(script)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
