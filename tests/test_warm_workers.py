"""Warm workers (motorflow.pipeline._warm_*, _job_client): a job handed over by its
command's job client runs as in a process of its own, its status, output, environment
and directory kept, and no worker outlives its job's process or its Snakemake run. The
workflow's own differential test (warm == a process per job, bitwise) is in
tests/test_workflow.py."""

from __future__ import annotations

import os
import pickle
import select
import shlex
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import motorflow.pipeline as mfp
from motorflow.pipeline._warm_protocol import SECRET_VARIABLE, SOCKET_VARIABLE, receive, send

REPO = Path(__file__).resolve().parents[1]

# A job script as the workflow's are: it reads Snakemake's job object, `snakemake`.
SCRIPT = """\
import os, sys, time, warnings

if os.environ.get("JOB_SLEEP"):
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))  # as a train job checkpoints
with open(snakemake.output[0], "w") as stream:
    stream.write(f"{os.getpid()} {os.getcwd()} {os.environ.get('JOB_VAR')} {snakemake.rule}")
print("to stdout")
print("to stderr", file=sys.stderr)
if os.environ.get("JOB_SILENCE"):  # a job's own warning filters are its own
    warnings.simplefilter("ignore")
warnings.warn("shown in every job that shows warnings", UserWarning)
if os.environ.get("JOB_SLEEP"):
    time.sleep(float(os.environ["JOB_SLEEP"]))
while os.environ.get("JOB_UNTIL") and not os.path.exists(os.environ["JOB_UNTIL"]):
    time.sleep(0.05)  # busy until the test lets it end
if os.environ.get("JOB_HOLD_MIB"):  # memory the job leaves behind in its process
    sys.held = getattr(sys, "held", []) + [b"x" * (int(os.environ["JOB_HOLD_MIB"]) << 20)]
if os.environ.get("JOB_MAPPINGS"):  # memory mappings it leaves behind (shared: unmerged)
    import mmap
    sys.held = [mmap.mmap(-1, 4096) for _ in range(int(os.environ["JOB_MAPPINGS"]))]
if os.environ.get("JOB_RAISE"):
    raise RuntimeError("the job failed here")
raise SystemExit(int(os.environ.get("JOB_STATUS", "0")))
"""


@pytest.fixture
def warm():
    workers = mfp.start_warm_workers(1)
    assert workers is not None
    yield workers
    workers.stop()


def run_job(
    tmp_path: Path,
    name: str,
    *,
    wait: bool = True,
    script_name="job.py",
    gpus=0,
    padding=0,
    **env: str,
):
    """Start the job's process (as Snakemake would) running the script `script_name`;
    with `wait`, its result. A description longer than a command's argument may be
    (`padding` characters more) is written below the folder the test runs in."""
    script = tmp_path / script_name
    script.write_text(SCRIPT)
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    # The command a rule runs (mfp.job_command), as Snakemake fills it in.
    description = mfp.describe_job(
        rule="fake",
        input={},
        output={"record": str(tmp_path / name)},
        params={"padding": "x" * padding} if padding else {},
        wildcards={},
        threads=1,
        resources={"gpu": gpus},
    )
    argument = mfp.job_argument(description)
    command = [*shlex.split(mfp.job_client(tmp_path)), script_name, "0", argument]
    client = subprocess.Popen(
        command,
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "JOB_VAR": name, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if not wait:
        return client
    stdout, stderr = client.communicate(timeout=300)
    return subprocess.CompletedProcess(client.pid, client.returncode, stdout, stderr)


def job_record(tmp_path: Path, name: str) -> tuple[int, str, str]:
    pid, cwd, var, rule = (tmp_path / name).read_text().split(" ")
    assert rule == "fake"  # the job object the command describes
    return int(pid), cwd, var


def gone(pid: int, within: float = 20.0) -> bool:
    """Whether process `pid` has ended (looked at until `within` seconds have passed)."""
    deadline = time.monotonic() + within
    while True:
        try:
            os.kill(pid, 0)
            # A killed child of the server is reaped by it; until then it is a zombie.
            if Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] == "Z":
                return True
        except OSError:  # no such process (ProcessLookupError), or gone while read
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def test_a_handed_over_job_keeps_its_status_output_environment_and_directory(warm, tmp_path):
    first = run_job(tmp_path, "first", JOB_STATUS="3", JOB_SILENCE="1")
    second = run_job(tmp_path, "second")
    assert (first.returncode, second.returncode) == (3, 0), first.stderr + second.stderr
    for result in (first, second):
        assert result.stdout == "to stdout\n"
        assert "to stderr" in result.stderr
    # The first job's warning filter ended with it.
    assert "shown in every job" not in first.stderr
    assert "shown in every job" in second.stderr
    (pid_1, cwd_1, var_1), (pid_2, _, var_2) = (
        job_record(tmp_path, name) for name in ("first", "second")
    )
    # Both ran in the same warm worker, not in the job's own process.
    assert pid_1 == pid_2 and pid_1 not in (first.args, second.args)
    assert (cwd_1, var_1, var_2) == (str(tmp_path / "work"), "first", "second")


def test_a_description_too_long_for_a_command_reaches_the_worker_in_its_file(
    warm, tmp_path, monkeypatch
):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")  # Snakemake's folder: the file is found from it
    done = run_job(tmp_path, "long", padding=200_000)
    assert done.returncode == 0, done.stderr
    assert [path.suffix for path in (tmp_path / "work" / ".snakemake").rglob("*.*")] == [".json"]
    pid, cwd, _ = job_record(tmp_path, "long")
    assert pid != done.args and cwd == str(tmp_path / "work")  # a worker ran it there


def test_a_failing_job_reports_its_traceback_and_status_one(warm, tmp_path):
    result = run_job(tmp_path, "failing", JOB_RAISE="1")
    assert result.returncode == 1
    assert "RuntimeError: the job failed here" in result.stderr
    assert "Traceback" in result.stderr


def test_without_a_server_or_when_switched_off_the_job_runs_in_its_own_process(tmp_path):
    assert SOCKET_VARIABLE not in os.environ  # no server here
    for name, env in (("alone", {}), ("off", {SOCKET_VARIABLE: "0"})):
        result = run_job(tmp_path, name, **env)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "to stdout\n"
        assert job_record(tmp_path, name)[0] == result.args  # the job's own process


def test_a_job_that_asks_for_a_gpu_keeps_a_process_of_its_own(warm, tmp_path):
    # It claims its GPUs for its process's life (mfp.use_devices): no worker may hold them.
    result = run_job(tmp_path, "gpu", gpus=1)
    assert result.returncode == 0, result.stderr
    assert job_record(tmp_path, "gpu")[0] == result.args
    other = run_job(tmp_path, "cpu")
    assert other.returncode == 0, other.stderr
    assert job_record(tmp_path, "cpu")[0] != other.args  # a worker took the CPU job


def sleeping_job(
    tmp_path: Path,
    name: str,
    seconds: float = 120,
    script_name: str = "job.py",
    **env: str,
) -> tuple[subprocess.Popen, int]:
    """A job's process whose job sleeps in its worker, and the worker's pid."""
    client = run_job(
        tmp_path, name, wait=False, script_name=script_name, JOB_SLEEP=str(seconds), **env
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / name).exists() or not (tmp_path / name).read_text():
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.1)
    return client, job_record(tmp_path, name)[0]


def open_descriptors(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def socket_inodes(pid: int) -> set[str]:
    """The sockets process `pid` holds open (each end of a connection is a socket)."""
    found = (os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir())
    return {link for link in found if link.startswith("socket:")}


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="Linux's /proc only")
def test_a_forked_worker_holds_none_of_the_servers_sockets(warm, tmp_path):
    """Workers are forked from the server (it imported what the jobs use once), and a
    fork inherits every descriptor: a worker that kept the server's listening socket,
    or a busy worker's connections, would keep them open after the server closed them
    (a job's end unseen). The second worker starts while the first runs a job."""
    first, first_worker = sleeping_job(tmp_path, "first")
    second, second_worker = sleeping_job(tmp_path, "second")
    assert first_worker != second_worker
    server = socket_inodes(warm.process.pid)
    for worker in (first_worker, second_worker):
        held = socket_inodes(worker)
        assert len(held) == 1 and not held & server  # its own end of its connection
    for client in (first, second):
        client.kill()
        client.wait()


def test_a_job_whose_process_dies_has_its_worker_killed_and_the_next_job_runs(warm, tmp_path):
    client, worker = sleeping_job(tmp_path, "killed")
    client.send_signal(signal.SIGKILL)
    client.wait()
    assert gone(worker)
    after = run_job(tmp_path, "after")
    assert after.returncode == 0, after.stderr
    assert job_record(tmp_path, "after")[0] != worker


def test_the_server_and_its_workers_end_with_the_process_that_started_them(tmp_path):
    starter = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""\
            import sys, time
            import motorflow.pipeline as mfp
            warm = mfp.start_warm_workers(1)
            print(warm.process.pid, warm.folder, flush=True)
            time.sleep(600)
        """)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )  # fmt: skip
    server, folder = starter.stdout.readline().split()
    starter.kill()
    starter.wait()
    assert gone(int(server))
    assert not Path(folder).exists()  # nor its socket left behind


def test_a_signal_to_the_jobs_process_reaches_the_job(warm, tmp_path):
    client, _ = sleeping_job(tmp_path, "signalled")
    client.send_signal(signal.SIGTERM)
    assert client.wait(timeout=60) == 7  # the job's own handler's status


def test_where_no_worker_can_start_each_job_runs_in_its_own_process(tmp_path, monkeypatch):
    monkeypatch.setenv("MOTORFLOW_KILL_AT", "warm_worker_start")  # the server's workers'
    workers = mfp.start_warm_workers(1)
    try:
        for name in ("first", "second"):
            result = run_job(tmp_path, name, MOTORFLOW_KILL_AT="")
            assert result.returncode == 0, result.stderr
            assert job_record(tmp_path, name)[0] == result.args
            assert "a warm worker could not start" in result.stderr
    finally:
        workers.stop()


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="Linux's /proc only")
def test_a_job_whose_process_dies_while_it_waits_for_a_worker_never_runs(warm, tmp_path):
    # One core: at most 3 workers, each busy until released (not for a fixed time: a
    # loaded machine may take longer than that to start the next workers); a fourth
    # job waits in the server's queue.
    release = tmp_path / "release"
    busy = [
        sleeping_job(tmp_path, f"busy{index}", seconds=0, JOB_UNTIL=str(release))
        for index in range(3)
    ]
    held = open_descriptors(warm.process.pid)
    waiting = run_job(tmp_path, "waiting", wait=False)
    # The server has taken its job: the connection and the job's stdout and stderr.
    deadline = time.monotonic() + 60
    while open_descriptors(warm.process.pid) < held + 3:
        assert time.monotonic() < deadline and waiting.poll() is None
        time.sleep(0.01)
    waiting.kill()
    waiting.wait()
    release.touch()
    for client, _ in busy:
        assert client.wait(timeout=60) == 0
    # The server dispatches its queue in order: once a later job has run, the dead
    # one's turn has passed. No worker was given it (and killed for it).
    after = run_job(tmp_path, "after")
    assert after.returncode == 0, after.stderr
    assert job_record(tmp_path, "after")[0] in {worker for _, worker in busy}
    assert not any(gone(worker, within=0) for _, worker in busy)
    assert not (tmp_path / "waiting").exists()


def test_a_job_goes_to_an_idle_worker_that_ran_its_script_before(warm, tmp_path):
    # A worker keeps the compiled programs of the stages it ran: the next train job
    # goes to a worker that trained before, not merely to the first idle one.
    release = tmp_path / "release"  # both busy at once, however slow a worker's start
    client_a, worker_a = sleeping_job(
        tmp_path, "a", seconds=0, script_name="a.py", JOB_UNTIL=str(release)
    )
    client_b, worker_b = sleeping_job(
        tmp_path, "b", seconds=0, script_name="b.py", JOB_UNTIL=str(release)
    )
    release.touch()
    assert client_a.wait(timeout=60) == 0 and client_b.wait(timeout=60) == 0
    assert worker_a != worker_b  # both idle now
    for name, worker in (("b", worker_b), ("a", worker_a)):
        result = run_job(tmp_path, f"{name}-again", script_name=f"{name}.py")
        assert result.returncode == 0, result.stderr
        assert job_record(tmp_path, f"{name}-again")[0] == worker


def kernel_mapping_limit() -> int:
    try:
        return int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return 0


@pytest.mark.skipif(
    not 0 < kernel_mapping_limit() <= 300_000, reason="Linux's /proc, a usual mapping limit"
)
def test_a_worker_retires_before_it_holds_the_memory_mappings_the_kernel_allows(tmp_path):
    # Each compiled XLA program holds mappings, and a process past the kernel's limit
    # crashes: a worker holding half of it retires after its job (its jobs_left and
    # memory allowance aside: the mappings are a page each, never touched).
    workers = mfp.start_warm_workers(1)
    try:
        pids = []
        for name, mappings in (("few", 0), ("few-again", 0), ("many", kernel_mapping_limit() // 2)):
            result = run_job(tmp_path, name, JOB_MAPPINGS=str(mappings))
            assert result.returncode == 0, result.stderr
            pids.append(job_record(tmp_path, name)[0])
        after = run_job(tmp_path, "after")
        assert after.returncode == 0, after.stderr
    finally:
        workers.stop()
    assert pids[0] == pids[1] == pids[2]
    assert job_record(tmp_path, "after")[0] != pids[2]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux's /proc only")
def test_a_worker_whose_memory_grew_past_its_allowance_is_replaced(tmp_path):
    # A worker lives many jobs (a sweep's next experiments reuse its imports and
    # programs) but not past a memory allowance: what its jobs left behind returns.
    workers = mfp.start_warm_workers(1, memory_growth=100 << 20)
    try:
        pids = []
        for name, hold in (
            ("small", "10"),
            ("small-again", "10"),
            ("large", "150"),
            ("after", "0"),
        ):
            result = run_job(tmp_path, name, JOB_HOLD_MIB=hold)
            assert result.returncode == 0, result.stderr
            pids.append(job_record(tmp_path, name)[0])
    finally:
        workers.stop()
    assert pids[0] == pids[1] == pids[2]  # 20 MiB held: within the allowance
    assert pids[3] != pids[2]  # 170 MiB held: the worker was replaced after that job


def test_a_busy_worker_ends_with_its_server_however_the_server_ends(warm, tmp_path):
    client, worker = sleeping_job(tmp_path, "orphaned")
    warm.process.kill()  # no clean-up of its own: its workers must see it go
    warm.process.wait()
    assert gone(worker)  # not training on after its run, beside the next run's trainer
    client.kill()
    client.wait()


class Unpickled:
    """What a pickle-reading server would run as it read this message."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_the_server_takes_only_its_runs_jobs_as_data_and_waits_on_no_client(warm, tmp_path):
    def connected() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(os.environ[SOCKET_VARIABLE])
        return sock

    def job(**changes) -> dict:
        fields = {"script": "x.py", "description": "{}", "log": [], "cwd": str(tmp_path)}
        return {**fields, "environ": {}, "key": [1], "secret": secret, **changes}

    secret = os.environ[SECRET_VARIABLE]
    marker = tmp_path / "unpickled"
    pickled = pickle.dumps(Unpickled(marker))
    silent, half, garbage, unpickling = (connected() for _ in range(4))
    half.sendall(struct.pack("!Q", 100) + b'{"script": "x')
    garbage.sendall(b"GET / HTTP/1.1\r\n\r\n")
    unpickling.sendall(struct.pack("!Q", len(pickled)) + pickled)
    refused = {}
    for name, message in {
        "another run's": job(secret="0" * 32),
        "keyless": {k: v for k, v in job().items() if k != "key"},
        "malformed": job(key=["two"]),
    }.items():
        sock = connected()
        send(sock, message, fds=(sys.stdout.fileno(), sys.stderr.fileno()))
        refused[name], _ = receive(sock)
        sock.close()
    assert all(reply["fallback"] for reply in refused.values())  # each runs by itself
    assert "another run" in refused["another run's"]["error"]
    assert "without key" in refused["keyless"]["error"]
    done = run_job(tmp_path, "after")
    assert done.returncode == 0, done.stderr
    assert job_record(tmp_path, "after")[0] != done.args  # the server still hands out jobs
    assert not marker.exists()  # what came was read as data, never run
    # It never waited on the client that sent nothing nor on the one that sent half a
    # message: it has not given up on them (they are still open at its end).
    assert select.select([silent, half], [], [], 0)[0] == []
    for sock in (silent, half, garbage, unpickling):
        sock.close()
