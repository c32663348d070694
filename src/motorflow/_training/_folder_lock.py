"""One writer per checkpoint directory: an exclusive lock a killed process never leaves.

The lock is ``flock`` on a file in the directory: the kernel releases it when the
process holding it ends, however it ends (a killed trainer, a preempted cluster job),
so a later run is never refused by a stale lock. The holder writes its process and
host into the file, for the message that refuses a second writer.
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path

LOCK_NAME = "motorflow-checkpoints.lock"


class CheckpointsInUseError(RuntimeError):
    """Another training is writing the checkpoint directory."""

    def __init__(self, directory: Path, holder: str):
        self.directory, self.holder = directory, holder
        super().__init__(
            f"The checkpoint directory {directory} is being written by another training "
            f"({holder or 'a process that has not said which'}). Two trainings never write "
            "one directory at once: wait for that one to end, or stop it (a stopped or "
            "killed training leaves no lock behind), then run this one again."
        )


class FolderLock:
    """Held from construction until :meth:`release` (or the process's end)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        path = self.directory / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 512, 0).decode(errors="replace").strip()
            os.close(fd)
            raise CheckpointsInUseError(self.directory, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file releases its lock
            self._fd = None
