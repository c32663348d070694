"""The warm-worker server of one local Snakemake run (see ``_warm_workers``).

Run as ``python -m motorflow.pipeline._warm_server LISTEN_FD MAX_WORKERS
JOBS_PER_WORKER MEMORY_GROWTH`` by
:func:`~motorflow.pipeline._warm_workers.start_warm_workers`. One
thread: it accepts jobs on the listening socket, gives each to an idle worker of the
job's key (preferring one that ran the job's script before: it holds that stage's
compiled programs), starting one while fewer than MAX_WORKERS run, else replacing an
idle worker of another key, else queueing the job, and returns the worker's status to
the job. A worker starts as a fork of the server, which imports what the jobs use
once, as the first job arrives (``_warm_worker.preload``; no JAX backend starts here),
so no worker pays the imports; the fork closes every descriptor of the server's but
its own connection. A job whose process goes away has its worker killed; a worker that dies
fails its job. The server ends, killing its workers, when its standard input (a pipe
from Snakemake) ends; a worker also ends when the server does, however it ends.

It takes a job only from its own run: the message must carry the run's secret (from
the environment the server and the run's jobs share, ``SECRET_VARIABLE``), and it is
JSON (``_warm_protocol``), read as it arrives; anything else is dropped, and a job
refused runs in a process of its own.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import select
import selectors
import signal
import socket
import sys
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._warm_protocol import (
    SECRET_VARIABLE,
    SOCKET_VARIABLE,
    Incoming,
    ProtocolError,
    receive,
    send,
)

# What a job's message holds (``_job_client.hand_over``), each of its type.
JOB_FIELDS = {
    "secret": str,
    "script": str,
    "description": str,
    "log": list,
    "cwd": str,
    "environ": dict,
    "key": list,
}


def job_problem(job: Any, secret: str) -> str | None:
    """Why `job` is not a job of this run's (None: it is)."""
    if not isinstance(job, dict):
        return "not a job"
    if not hmac.compare_digest(str(job.get("secret", "")).encode(), secret.encode()):
        return "a job of another run (its secret is not this run's)"
    wrong = [name for name, kind in JOB_FIELDS.items() if not isinstance(job.get(name), kind)]
    if wrong:
        return f"a job without {', '.join(wrong)}"
    if not all(isinstance(n, int) for n in job["key"]) or not all(
        isinstance(v, str) for v in (*job["log"], *job["environ"], *job["environ"].values())
    ):
        return "a job with a malformed key, log or environment"
    return None


@dataclass
class Forked:
    """A worker process forked from the server (as much of ``subprocess.Popen`` as the
    server uses)."""

    pid: int
    returncode: int | None = None

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> int:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


@dataclass
class Worker:
    """A worker process, the server's end of its socket and the job it runs."""

    key: tuple[Any, ...]
    process: Forked
    sock: socket.socket
    job: socket.socket | None = None  # the connection of the job it runs
    ready: bool = False  # it has imported what the jobs use
    scripts: set[str] = field(default_factory=set)  # the scripts of the jobs it ran

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self.sock.close()


@dataclass
class Server:
    """The jobs waiting, the workers and what connects them (see the module)."""

    listener: socket.socket
    secret: str
    max_workers: int
    jobs_per_worker: int
    memory_growth: int
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    workers: list[Worker] = field(default_factory=list)
    queue: deque[tuple[socket.socket, dict[str, Any], list[int]]] = field(default_factory=deque)
    # Why workers cannot start here, once one could not: each job then runs itself.
    broken: str | None = None
    running: bool = False
    preloaded: bool = False

    def run(self) -> None:
        self.selector.register(self.listener, selectors.EVENT_READ, self._accept)
        self.selector.register(sys.stdin.buffer, selectors.EVENT_READ, self._input)
        self.running = True
        while self.running:
            for selected, _ in self.selector.select():
                selected.data(selected.fileobj)
        for worker in list(self.workers):
            self._retire(worker, "the Snakemake run ended")
        # Its socket and folder go too where Snakemake had no time to remove them.
        address = Path(self.listener.getsockname())
        self.listener.close()
        address.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            address.parent.rmdir()

    def _input(self, stream: Any) -> None:
        if not os.read(stream.fileno(), 4096):  # Snakemake closed it, or ended
            self.running = False

    def _accept(self, listener: socket.socket) -> None:
        conn, _ = listener.accept()
        # Read as it comes, beside everything else: a client that sends nothing, half
        # a message or garbage holds nothing up (and is dropped).
        conn.setblocking(False)
        incoming = Incoming(conn, max_fds=2)
        self.selector.register(
            conn, selectors.EVENT_READ, lambda c, i=incoming: self._receive_job(i)
        )

    def _receive_job(self, incoming: Incoming) -> None:
        conn = incoming.sock
        try:
            job = incoming.read()
        except (OSError, EOFError, ProtocolError):
            self.selector.unregister(conn)
            conn.close()
            return
        if job is None:
            return  # more to come
        self.selector.unregister(conn)
        conn.setblocking(True)
        fds, problem = incoming.fds, job_problem(job, self.secret)
        if problem is None and len(fds) != 2:
            problem = "a job without its stdout and stderr"
        if self.broken is not None or problem is not None:
            for fd in fds:
                os.close(fd)
            # A job refused runs in a process of its own (as where no worker can start).
            error = self.broken or f"the warm-worker server refused {problem}"
            self._answer(conn, {"fallback": True, "error": error})
            return
        self.queue.append((conn, job, fds))
        self._dispatch()

    def _dispatch(self) -> None:
        while self.queue:
            conn, job, fds = self.queue[0]
            if select.select([conn], [], [], 0)[0]:  # its process went away while it waited
                self.queue.popleft()
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            worker = self._worker_for(tuple(job["key"]), job["script"])
            if worker is None:
                return
            self.queue.popleft()
            try:
                send(worker.sock, job, fds=tuple(fds))
            except OSError:  # it died between jobs: the job tries the next one
                self.queue.appendleft((conn, job, fds))
                self._retire(worker, None)
                continue
            for fd in fds:
                os.close(fd)
            worker.job = conn
            worker.scripts.add(job["script"])
            self.selector.register(conn, selectors.EVENT_READ, lambda c, w=worker: self._gone(w))
            # The job's process passes the signals it gets on to the worker.
            try:
                send(conn, {"worker": worker.process.pid})
            except OSError:
                self._gone(worker)

    def _worker_for(self, key: tuple[Any, ...], script: str) -> Worker | None:
        idle = [worker for worker in self.workers if worker.job is None]
        # Best a worker that ran this script before: it holds the stage's compiled
        # programs, which the next experiment of equal settings and shapes (a seed
        # sweep's) uses without tracing them again.
        idle.sort(key=lambda worker: script not in worker.scripts)
        for worker in idle:
            if worker.key == key:
                return worker
        if len(self.workers) >= self.max_workers:
            if not idle:
                return None  # every worker is busy: the job waits for one
            self._retire(idle[0], None)
        return self._start(key)

    def _start(self, key: tuple[Any, ...]) -> Worker:
        if not self.preloaded:
            # Once: every worker is forked from here, with what the jobs import imported
            # (3.6 CPU-s a worker otherwise). No JAX backend starts in this process
            # (its one thread would not survive a fork): the worker fixes its device
            # count (the key) first thing.
            from ._warm_worker import preload

            self.preloaded = True
            preload()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            ours.close()
            self._become_worker(theirs, key)
        theirs.close()
        worker = Worker(key, Forked(pid), ours)
        self.workers.append(worker)
        self.selector.register(ours, selectors.EVENT_READ, lambda s, w=worker: self._done(w))
        return worker

    def _become_worker(self, sock: socket.socket, key: tuple[Any, ...]) -> None:
        """In the forked child: drop what is the server's, then serve as a worker
        until it ends; never returns."""
        from ._warm_worker import serve

        code = 1
        try:
            for selected in list(self.selector.get_map().values()):
                if selected.fileobj is not sys.stdin.buffer:
                    selected.fileobj.close()
            for conn, _, fds in self.queue:
                conn.close()
                for fd in fds:
                    os.close(fd)
            self.selector.close()
            self.listener.close()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)  # the server's input is the run's pipe
            os.close(devnull)
            os.environ.pop(SOCKET_VARIABLE, None)
            serve(sock, self.jobs_per_worker, self.memory_growth, *(int(k) for k in key))
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
        except BaseException:  # noqa: BLE001 - its status and traceback are the report
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def _done(self, worker: Worker) -> None:
        """The worker is ready, replied (its job's status) or died."""
        try:
            reply, _ = receive(worker.sock)
        except (OSError, EOFError):
            code = worker.process.wait()
            if worker.ready:
                self._reply(worker, {"status": 1, "error": f"the warm worker died (exit {code})"})
            else:  # it could not start: no job ran in it, and none will in another
                self.broken = (
                    f"a warm worker could not start (exit {code}; its error is above): "
                    "the jobs run in processes of their own"
                )
                self._reply(worker, {"fallback": True, "error": self.broken})
                for conn, _, fds in self.queue:
                    for fd in fds:
                        os.close(fd)
                    self._answer(conn, {"fallback": True, "error": self.broken})
                self.queue.clear()
            self._retire(worker, None)
            self._dispatch()
            return
        if reply.get("ready"):
            worker.ready = True
            return
        self._reply(worker, reply)
        if reply.get("retiring"):
            self._retire(worker, None)
        self._dispatch()

    def _reply(self, worker: Worker, reply: dict[str, Any]) -> None:
        conn, worker.job = worker.job, None
        if conn is None:
            return
        self.selector.unregister(conn)
        reply = {key: reply[key] for key in ("status", "error", "fallback") if key in reply}
        self._answer(conn, reply)

    @staticmethod
    def _answer(conn: socket.socket, reply: dict[str, Any]) -> None:
        try:
            send(conn, reply)
        except OSError:
            pass  # the job's process is gone already
        conn.close()

    def _gone(self, worker: Worker) -> None:
        """The job's process went away mid-job: its work ends with it."""
        conn, worker.job = worker.job, None
        if conn is not None:
            self.selector.unregister(conn)
            conn.close()
        self._retire(worker, None)
        self._dispatch()

    def _retire(self, worker: Worker, reason: str | None) -> None:
        if worker.job is not None:
            self._reply(worker, {"status": 1, "error": reason or "the warm worker stopped"})
        self.selector.unregister(worker.sock)
        worker.kill()
        self.workers.remove(worker)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run's end comes through stdin
    listen_fd, max_workers, jobs_per_worker, memory_growth = (int(arg) for arg in sys.argv[1:5])
    listener = socket.socket(fileno=listen_fd)
    secret = os.environ.pop(SECRET_VARIABLE)  # not in its workers' environment
    Server(listener, secret, max_workers, jobs_per_worker, memory_growth).run()


if __name__ == "__main__":
    main()
