"""Choose a stage process's devices before JAX starts: CPU device count, GPU ids.

Snakemake limits how many GPU jobs run at once (``--resources gpu=N``) but does
not say which GPU each may use, so a job that asks for GPUs claims free ones
itself: an exclusive lock file per GPU id, held until the process ends (the
operating system drops it even when the process is killed). Under SLURM the
scheduler has already picked the job's GPUs, and nothing is claimed.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO

import jax

logger = logging.getLogger("motorflow")

# Lock files of the GPUs this process holds; open for the life of the process.
_held: list[IO[str]] = []


def visible_gpus() -> list[str]:
    """The GPU ids this process may use: ``CUDA_VISIBLE_DEVICES`` when it is set,
    else the indices ``nvidia-smi`` lists, else none."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [gpu.strip() for gpu in listed.split(",") if gpu.strip() not in ("", "-1")]
    try:
        query = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in query.stdout.splitlines() if line.strip()]


def default_lock_dir() -> Path:
    """Where GPU claims live: ``MOTORFLOW_GPU_LOCK_DIR``, else one folder per user in
    the machine's temporary directory (GPUs belong to a machine, not to a workflow)."""
    configured = os.environ.get("MOTORFLOW_GPU_LOCK_DIR")
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"motorflow-gpu-locks-{os.getuid()}"


def claim_gpus(
    n_gpus: int, *, pool: list[str], lock_dir: str | Path, poll_seconds: float = 2.0
) -> list[str]:
    """Lock `n_gpus` ids of `pool` for this process, waiting while fewer are free.

    **Arguments:**

    - `n_gpus`: how many GPUs the job asked for.
    - `pool`: the GPU ids to choose from (as in ``CUDA_VISIBLE_DEVICES``).
    - `lock_dir`: the folder of lock files shared by every job on this machine.
    - `poll_seconds`: how often to look again while all GPUs are taken.

    Returns the claimed ids; they stay claimed until the process ends.
    """
    if n_gpus > len(pool):
        raise ValueError(
            f"the job asks for {n_gpus} GPU(s) but only {len(pool)} are visible "
            f"({', '.join(pool) or 'none'}): lower resources.<stage>.gpus in the config "
            "or make more GPUs visible (CUDA_VISIBLE_DEVICES)"
        )
    lock_dir = Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    announced = False
    while True:
        claimed: list[tuple[str, IO[str]]] = []
        for gpu in pool:
            # Not a `with`: a claimed GPU's lock file stays open as long as the process.
            lock_file = lock_dir / f"gpu-{re.sub(r'[^A-Za-z0-9_.-]', '_', gpu)}.lock"
            handle = open(lock_file, "a")  # noqa: SIM115
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            claimed.append((gpu, handle))
            if len(claimed) == n_gpus:
                _held.extend(handle for _, handle in claimed)
                return [gpu for gpu, _ in claimed]
        for _, handle in claimed:
            handle.close()  # closing drops the lock
        if not announced:
            announced = True
            logger.info(
                "Waiting for %d free GPU(s) of %s (the others are claimed in %s)",
                n_gpus,
                ", ".join(pool),
                lock_dir,
            )
        time.sleep(poll_seconds)


def use_devices(*, cpu_devices: int = 1, gpus: int = 0, lock_dir: str | Path | None = None) -> None:
    """Set up this process's devices; call it before JAX's first array operation.

    **Arguments:**

    - `cpu_devices`: XLA CPU devices to start (one per core the job was given); the
      trainer spreads replicates over them when JAX runs on the CPU.
    - `gpus`: GPUs the job asked for. Outside SLURM, that many free GPU ids are
      claimed (waiting while all are taken) and made the only ones JAX sees.
    - `lock_dir`: where GPU claims live; by default :func:`default_lock_dir`.

    JAX never preallocates most of a GPU's memory here, so several jobs can share
    one (``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless already set).
    """
    if cpu_devices < 1 or gpus < 0:
        raise ValueError(f"need cpu_devices >= 1 and gpus >= 0, got {cpu_devices} and {gpus}")
    # Raises if JAX has started its backends already: then these settings would be ignored.
    jax.config.update("jax_num_cpu_devices", cpu_devices)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if gpus and "SLURM_JOB_ID" in os.environ:
        logger.info("GPUs chosen by SLURM: %s", os.environ.get("CUDA_VISIBLE_DEVICES", "none"))
    elif gpus:
        pool = visible_gpus()
        if pool:
            claimed = claim_gpus(gpus, pool=pool, lock_dir=lock_dir or default_lock_dir())
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(claimed)
            logger.info("Claimed GPU(s) %s of %s", ",".join(claimed), ",".join(pool))
        else:
            logger.warning("The job asks for %d GPU(s) but none is visible", gpus)
    logger.info("JAX devices: %s", jax.devices())
