"""Warm workers: a local Snakemake run's jobs run in Python processes that stay up.

Each job of the workflow is a Python script that Snakemake starts as a process of its
own, and a process pays its start-up before any work: the interpreter, JAX and the
library's imports, JAX's backend, tracing the model's programs and reading the
compiled ones from the cache; 2-5 CPU-seconds, against milliseconds of work for a
small experiment of a sweep (benchmarks/README.md, "A sweep's fixed cost").

So a local run (``snakemake --cores N``, not a cluster's) starts a server beside
Snakemake (:func:`start_warm_workers`, from the workflow's ``onstart``) that keeps a
few worker processes with everything imported (imported once, in the server, which
forks each worker). Each job's command is the job client
(``_job_client``, standard library only): it sends the job (its script, rule,
description and log, ``_job``), its environment, working directory and its stdout
and stderr to the server, which runs it in an idle worker; the job's process waits
and exits with the script's status. Its output reaches the console as before. The
signals the job's process gets (SIGINT, SIGTERM, SIGUSR1) are passed on to its
worker, so a train job checkpoints and stops on them as before; a job whose process
dies (killed, or Snakemake ends) has its worker killed too, and the server and its
workers end with the Snakemake process that started them. Where no worker can start,
the jobs run in processes of their own.

A job runs in a worker exactly as in a process of its own: the worker takes on its
environment and working directory and resets what a job may change (warning filters,
matplotlib's settings); workers of different JAX device settings (threads per job)
are apart; a job that asks for GPUs keeps a process of its own (it claims its GPUs
for the life of the process). ``MOTORFLOW_WARM_WORKERS=0`` keeps every job in a
process of its own. Snakemake's ``benchmark`` files then measure the waiting process:
the wall time is the job's, its CPU time and memory are not.

The Snakefile imports it: it must stay import-cheap (no JAX).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ._warm_protocol import SECRET_VARIABLE, SOCKET_VARIABLE

# A worker is replaced by a fresh one (its memory then returns) after this many jobs,
# or sooner once its resident memory has grown by WORKER_MEMORY_GROWTH bytes since it
# started (a tiny job leaves 1-3 MiB behind, a new shape's compiled programs more;
# a 200-experiment sweep's 1,000 jobs would restart workers of 50 jobs about 16 times,
# at 2-4 CPU-s a start), or holds half the memory mappings the kernel allows.
JOBS_PER_WORKER = 500
WORKER_MEMORY_GROWTH = 2**30


@dataclass
class WarmWorkers:
    """The server of one Snakemake run (from :func:`start_warm_workers`)."""

    process: subprocess.Popen[bytes]
    folder: Path

    def stop(self) -> None:
        """End the server and its workers (they also end when Snakemake does)."""
        os.environ.pop(SOCKET_VARIABLE, None)
        os.environ.pop(SECRET_VARIABLE, None)
        if self.process.stdin is not None:
            self.process.stdin.close()  # the server ends at the end of its input
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def start_warm_workers(
    cores: int, *, jobs_per_worker: int = JOBS_PER_WORKER, memory_growth: int = WORKER_MEMORY_GROWTH
) -> WarmWorkers | None:
    """Start the server of this Snakemake process's jobs; None where
    ``MOTORFLOW_WARM_WORKERS=0`` asks for none.

    At most `cores` jobs run at once (Snakemake's limit), so as many workers are
    busy; two more may wait idle, so that the jobs of another thread count (a train
    job's two against an evaluation's one) find a worker of theirs warm. The
    listening socket is made here, so jobs can connect from the first one on. A
    worker is replaced after `jobs_per_worker` jobs, or once its resident memory has
    grown by `memory_growth` bytes since it started.
    """
    if os.environ.get(SOCKET_VARIABLE) == "0":
        return None
    folder = Path(tempfile.mkdtemp(prefix="motorflow-workers-"))  # private (0700)
    address = folder / "socket"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(address))
    listener.listen(64)
    secret = secrets.token_hex(16)  # this run's: its jobs inherit it, others lack it
    process = subprocess.Popen(
        [sys.executable, "-m", "motorflow.pipeline._warm_server", str(listener.fileno()),
         str(max(1, cores) + 2), str(jobs_per_worker), str(memory_growth)],
        stdin=subprocess.PIPE,
        pass_fds=[listener.fileno()],
        env={**os.environ, SECRET_VARIABLE: secret},
        # Apart from the terminal's process group: Ctrl-C reaches Snakemake and the
        # jobs' processes, whose ending ends the workers' jobs (no double interrupt).
        start_new_session=True,
    )  # fmt: skip
    listener.close()
    os.environ[SOCKET_VARIABLE] = str(address)
    os.environ[SECRET_VARIABLE] = secret
    return WarmWorkers(process, folder)
