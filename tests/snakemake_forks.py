"""The tests' `snakemake` commands, each a fork of a process that imported Snakemake and
motorflow once (tests/workflow_helpers.snakemake).

A `python -m snakemake` costs about 6 CPU-s on this kind of machine before it reads a
file of the workflow: importing Snakemake (1.7 s), JAX and motorflow's config (3.2 s).
The suite starts a few hundred of them. This module, run as a script by an xdist worker,
imports both once; for each command it reads a request (a JSON line on its standard
input: the command's arguments, working directory, environment and output files),
forks, and the child runs Snakemake's command line (`snakemake/__main__.py`, as
`python -m snakemake` does) in that directory under exactly that environment, then
exits with its status; the parent answers the child's exit code (negative: the signal
that ended it, as `subprocess` says). Each command runs in a process of its own, as a
fresh one would: the child starts from the state this process had before any command,
and motorflow reads its environment variables when called, never at import.

The process has started no thread of its own and initialised no JAX backend (nothing
here computes), so forking it is safe. It ends when its standard input does, that is
with the worker that started it.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
import traceback


def _run(request: dict) -> int:
    """Snakemake's command line, in this (forked) process, as `request` asks."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    # As `python -m snakemake ARGS` has them (runpy puts the module's path first in argv).
    sys.orig_argv = [sys.executable, "-m", "snakemake", *request["args"]]
    sys.argv = ["snakemake", *request["args"]]
    try:
        runpy.run_module("snakemake", run_name="__main__", alter_sys=True)
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1
    return 0


def _child(request: dict) -> None:
    code = 1
    try:
        code = _run(request)
    except BaseException:  # noqa: BLE001 - reported as a crashed command, as Python does
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()  # what a normal exit runs (logging's flush among them)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)


def serve() -> None:
    import snakemake.cli  # noqa: F401 - imported once, before any fork
    import snakemake.workflow  # noqa: F401

    import motorflow  # noqa: F401
    import motorflow.pipeline._workflow_run  # noqa: F401 - what the Snakefile reads first

    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        _, status = os.waitpid(pid, 0)
        print(json.dumps(os.waitstatus_to_exitcode(status)), flush=True)


if __name__ == "__main__":
    serve()
