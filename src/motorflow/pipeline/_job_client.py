"""The command every workflow job runs: it hands the job to a warm worker of its
Snakemake run, or runs the job in a process of its own (see ``_warm_workers``).

Run by each rule's command (``_job.job_command``) as::

    python -S _job_client.py SCRIPTS SCRIPT DIGEST DESCRIPTION [LOG...]

SCRIPTS is the workflow's scripts folder and SCRIPT the job's script in it; DIGEST is
the script's content digest, there only so that the command's text changes with the
script (Snakemake reruns a rule's jobs when their command's text changes: an edited
script reruns its jobs); DESCRIPTION is the job's ``job`` param
(``_job.describe_job``), inline or in a file (``_job_argument``). It imports only the
standard library (``-S``: not even ``site``), so a job's process costs 0.05-0.07 CPU-s
before it hands over, where Snakemake's ``script:`` preamble cost 0.2-0.25.

Where the run has a warm-worker server (its socket in ``MOTORFLOW_WARM_WORKERS``) and
the job asks for no GPU, the job goes to the server with this process's environment,
working directory and stdout and stderr; this process waits, passes on the signals it
gets (SIGINT, SIGTERM, SIGUSR1: a train job checkpoints on them) to the worker, and
exits with the job's status. Otherwise (a cluster's job, a GPU job,
``MOTORFLOW_WARM_WORKERS=0``, no worker could start) it becomes the job's own
process: it replaces itself with ``python -m motorflow.pipeline._job``, which runs the
script with the interpreter's full start-up.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from typing import Any

if __package__:
    from ._job_argument import read_job_argument
    from ._warm_protocol import SECRET_VARIABLE, SOCKET_VARIABLE, receive, send
else:  # run as a file (the jobs' commands): the modules it uses lie beside it
    from _job_argument import read_job_argument  # type: ignore[no-redef]
    from _warm_protocol import (  # type: ignore[no-redef]
        SECRET_VARIABLE,
        SOCKET_VARIABLE,
        receive,
        send,
    )

# What a job's process would do on these (a train job checkpoints on SIGTERM and
# SIGUSR1, motorflow._training._preemption), its worker does.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)


def worker_key(description: dict[str, Any]) -> tuple[int]:
    """The settings a worker's JAX fixed as it started that a job must match: its
    CPU device count (one per thread of the job, ``mfp.use_devices``, unless its run
    settings say otherwise: a train pack trains on one device)."""
    run = description.get("run") or {}
    return (int(run.get("cpu_devices", description["threads"])),)


def _resource(description: dict[str, Any], name: str) -> Any:
    resources = description["resources"]
    span = resources["names"].get(name)
    return None if span is None else resources["values"][span[0]]


def hand_over(job: dict[str, Any], key: tuple[int]) -> int | None:
    """Run `job` in a warm worker; its exit status, or None where there is no server
    or it cannot take the job (the job then runs in this process)."""
    address = os.environ.get(SOCKET_VARIABLE, "")
    if address in ("", "0"):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(address)
    except OSError:  # no server here (another machine, or it has stopped)
        sock.close()
        return None
    message = {
        **job,
        "secret": os.environ.get(SECRET_VARIABLE, ""),
        "cwd": os.getcwd(),
        "environ": dict(os.environ),
        "key": list(key),
    }
    send(sock, message, fds=(sys.stdout.fileno(), sys.stderr.fileno()))
    try:
        reply, _ = receive(sock)
        if "worker" in reply:  # the job runs: the signals this process gets are its
            _forward_signals(reply["worker"])
            reply, _ = receive(sock)
    except EOFError:
        reply = {"status": 1, "error": "the warm-worker server stopped during the job"}
    finally:
        sock.close()
    if reply.get("error"):
        print(f"motorflow: {reply['error']}", file=sys.stderr, flush=True)
    if reply.get("fallback"):
        return None
    return int(reply["status"])


def _forward_signals(worker: int) -> None:
    def forward(signum: int, frame: Any) -> None:
        try:
            os.kill(worker, signum)
        except ProcessLookupError:
            pass  # it ended: its status is on its way

    for signum in FORWARDED:
        signal.signal(signum, forward)


def main(argv: list[str]) -> int:
    # The description's argument, not its text, is passed on: it stays short.
    scripts, script, _digest, description, *log = argv
    path = os.path.join(os.path.abspath(scripts), script)
    parts = json.loads(read_job_argument(description))
    if not int(_resource(parts, "gpu") or 0):  # a GPU job claims its GPUs for its process
        job = {"script": path, "description": description, "log": log}
        status = hand_over(job, worker_key(parts))
        if status is not None:
            return status
    command = [sys.executable, "-m", "motorflow.pipeline._job", path, description, *log]
    os.execv(sys.executable, command)
    return 1  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
