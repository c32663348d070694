"""Messages between a job, the warm-worker server and its workers (``_warm_*``).

A message is a pickled object on a Unix stream socket, after an 8-byte length; the
file descriptors it carries (a job's stdout and stderr) travel with that length as
``SCM_RIGHTS`` ancillary data. Import-cheap: each job imports it before anything else.
"""

from __future__ import annotations

import pickle
import socket
import struct
from typing import Any

# Where a job finds the server of the Snakemake run that started it: the server's
# socket, in the environment of that run (so of its jobs, which inherit it). Set to
# 0 before the run, it keeps every job in a process of its own.
SOCKET_VARIABLE = "MOTORFLOW_WARM_WORKERS"
_HEADER = struct.Struct("!Q")


def send(sock: socket.socket, message: Any, fds: tuple[int, ...] = ()) -> None:
    """Send `message` (picklable) on `sock`, with the open file descriptors `fds`."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    header = _HEADER.pack(len(data))
    if fds:
        socket.send_fds(sock, [header], list(fds))
    else:
        sock.sendall(header)
    sock.sendall(data)


def _exactly(sock: socket.socket, size: int, start: bytes = b"") -> bytes:
    data = bytearray(start)
    while len(data) < size:
        part = sock.recv(size - len(data))
        if not part:
            raise EOFError("the other end closed the connection mid-message")
        data += part
    return bytes(data)


def receive(sock: socket.socket, max_fds: int = 0) -> tuple[Any, list[int]]:
    """The next message on `sock` and the file descriptors it carried (at most
    `max_fds`, which the caller then owns). Raises EOFError when the peer is gone."""
    if max_fds:
        start, fds, _, _ = socket.recv_fds(sock, _HEADER.size, max_fds)
    else:
        start, fds = sock.recv(_HEADER.size), []
    if not start:
        raise EOFError("the other end closed the connection")
    (size,) = _HEADER.unpack(_exactly(sock, _HEADER.size, start))
    return pickle.loads(_exactly(sock, size)), fds
