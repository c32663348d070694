"""A warm worker: runs the workflow's job scripts one after another (see ``_warm_workers``).

Forked by the server (:func:`serve`), for jobs of one thread count (its key,
``_job_client.worker_key``): JAX's CPU device count is set to that first, before any
JAX backend starts (none has in the server it was forked from). It has what the jobs
use imported (:func:`preload`), then for each job it receives takes on the job's
environment, working directory, stdout and stderr, runs the script as its own
process would (``_job.run_job``: ``__name__ == "__main__"``, the job's ``_job.Job``
as the ``snakemake`` of its globals), puts its own back and replies the exit status.
What a job may change in the process and a later job would see is reset: its import
path, warning filters (and with them
which warnings were already shown), matplotlib's settings and open figures, the
count of kill points passed (``motorflow._faults``). After
JOBS jobs it exits, so that a long sweep never grows one process's memory, and so it
does sooner where its resident memory has grown by GROWTH bytes since it was ready,
or where it holds half the memory mappings that the kernel allows a process (each
compiled XLA program holds some; past the limit the process crashes).

Snakemake's ``benchmark`` files measure the job's waiting process, not the worker, so
the worker adds a line to the job's log: the CPU-seconds and wall seconds the job took
in it and its peak memory while it ran (the worker's resident set, its peak reset as
the job starts); ``benchmarks/sweep_startup.py`` and the preflight estimate's test
read it.

A worker ends with its server, however the server ends (killed too): a busy one is
killed with its job within a fifth of a second (:func:`end_with_server`).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import resource
import signal
import socket
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

from .. import _faults
from ._job import run_job
from ._runtime import LOG_FORMAT
from ._warm_protocol import SECRET_VARIABLE, SOCKET_VARIABLE, receive, send

# The line each job's log ends with (its numbers read by benchmarks and tests).
COST_LINE = "warm worker {pid}: {cpu:.3f} CPU-s, {wall:.3f} s, peak memory {peak:.0f} MiB"


def preload() -> None:
    """Import what the jobs import (each name of ``motorflow.pipeline``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot

    import motorflow as mf
    import motorflow.pipeline as mfp

    for package in (mf, mfp):
        for name in package.__all__:
            getattr(package, name)


def near_mapping_limit(limit: int | None = None) -> bool:
    """Whether this process holds more than half of `limit` memory mappings (default:
    the kernel's limit per process, Linux's ``vm.max_map_count``); False where it
    cannot tell."""
    try:
        if limit is None:
            with open("/proc/sys/vm/max_map_count") as stream:
                limit = int(stream.read())
        with open("/proc/self/maps", "rb") as stream:
            return sum(1 for _ in stream) > limit // 2
    except (OSError, ValueError):
        return False


def _status_bytes(field: str) -> float | None:
    """A memory figure of this process from Linux's ``/proc/self/status`` (``VmRSS``,
    ``VmHWM``), in bytes; None elsewhere."""
    try:
        with open("/proc/self/status") as stream:
            for line in stream:
                if line.startswith(f"{field}:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def resident_memory() -> float:
    """This process's resident memory now (bytes); 0 where it cannot tell."""
    return _status_bytes("VmRSS") or 0.0


def reset_peak_memory() -> None:
    """Start this process's peak resident memory afresh (Linux: ``clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as stream:
            stream.write("5")
    except OSError:
        pass  # elsewhere the peak is the worker's since it started


def peak_memory() -> float:
    """This process's peak resident memory (bytes) since :func:`reset_peak_memory`."""
    peak = _status_bytes("VmHWM")
    if peak is None:
        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    return peak


def note_in_log(job: dict[str, Any], line: str) -> None:
    """Add `line` to the job's log (its first), as its stage's log lines are written."""
    if not job["log"]:
        return
    record = logging.makeLogRecord({"levelname": "INFO", "msg": line})
    path = os.path.join(job["cwd"], job["log"][0])  # the log as given, or from cwd
    try:
        with open(path, "a") as stream:
            stream.write(logging.Formatter(LOG_FORMAT).format(record) + "\n")
    except OSError:
        pass  # the job removed its log's folder: nothing to add to


@contextlib.contextmanager
def job_process(job: dict[str, Any], stdout: int, stderr: int) -> Iterator[None]:
    """This process as the job's own would be, for the duration of the job."""
    import matplotlib
    import matplotlib.pyplot as plt

    _faults.reset()
    environ, cwd, path = dict(os.environ), os.getcwd(), list(sys.path)
    saved = os.dup(1), os.dup(2)
    os.environ.clear()
    os.environ.update(job["environ"])
    os.environ.pop(SOCKET_VARIABLE, None)  # what it starts is not a job of the run
    os.environ.pop(SECRET_VARIABLE, None)
    os.chdir(job["cwd"])
    os.dup2(stdout, 1)
    os.dup2(stderr, 2)
    try:
        with warnings.catch_warnings(), matplotlib.rc_context():
            yield
    finally:
        plt.close("all")
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, original in zip((1, 2), saved, strict=True):
            os.dup2(original, fd)
            os.close(original)
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(cwd)
        sys.path[:] = path


def end_with_server(server: int, every: float = 0.2) -> None:
    """Kill this process (and the job it runs) once its server, the process `server`,
    has ended, however it ended: a busy worker never goes on training after its run
    (nor beside the next run's trainer)."""

    def watch() -> None:
        while os.getppid() == server:
            time.sleep(every)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="end-with-server", daemon=True).start()


def serve(sock: socket.socket, jobs_left: int, growth: int, threads: int) -> None:
    """Run the jobs the server sends on `sock` (see the module), in a process forked
    from the server, which has imported what the jobs use."""
    # Ctrl-C's SIGINT, which its server ignores, reaches a job as in its own process
    # (passed on by the job's process).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    end_with_server(os.getppid())
    _faults.kill_point("warm_worker_start")
    import jax

    jax.config.update("jax_num_cpu_devices", threads)  # as its jobs' mfp.use_devices
    preload()
    # What the imports made stays for the worker's life: frozen out of the garbage
    # collector's sight, its full collections (a few in each job) no longer walk those
    # ~250,000 objects (half a figure job's time in the collector).
    gc.collect()
    gc.freeze()
    ready_memory = resident_memory()
    send(sock, {"ready": True})
    retiring = False
    while not retiring:
        try:
            job, fds = receive(sock, max_fds=2)
        except EOFError:
            return  # the server retired it
        jobs_left -= 1
        reset_peak_memory()
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            with job_process(job, *fds):
                status = run_job(job["script"], job["description"], job["log"])
        finally:
            for fd in fds:
                os.close(fd)
        cost = COST_LINE.format(
            pid=os.getpid(),
            cpu=time.process_time() - cpu,
            wall=time.perf_counter() - wall,
            peak=peak_memory() / 2**20,
        )
        note_in_log(job, cost)
        grown = resident_memory() - ready_memory > growth
        retiring = jobs_left == 0 or grown or near_mapping_limit()
        send(sock, {"status": status, "retiring": retiring})
