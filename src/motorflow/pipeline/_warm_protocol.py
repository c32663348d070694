"""Messages between a job, the warm-worker server and its workers (``_warm_*``).

A message is JSON text on a Unix stream socket, after an 8-byte length; the file
descriptors it carries (a job's stdout and stderr) travel with that length as
``SCM_RIGHTS`` ancillary data. JSON, not pickle: what a process connecting to the
server sends is data, never code to run. The server reads a job's message piece by
piece as it comes (:class:`Incoming`), so a client that sends nothing, half a
message or garbage never holds it up. Import-cheap: each job imports it before
anything else.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any

# Where a job finds the server of the Snakemake run that started it: the server's
# socket, in the environment of that run (so of its jobs, which inherit it). Set to
# 0 before the run, it keeps every job in a process of its own.
SOCKET_VARIABLE = "MOTORFLOW_WARM_WORKERS"
# The run's secret, beside it in the environment of the run's jobs (and of the
# server): the server takes a job only with it, so only from its own run.
SECRET_VARIABLE = "MOTORFLOW_WARM_SECRET"
_HEADER = struct.Struct("!Q")
# A job's message is its description's argument, log, folder and environment: a few
# KiB (a long description travels in a file, ``_job_argument``).
MAX_MESSAGE = 16 * 2**20


class ProtocolError(ValueError):
    """What came on a socket is not a message."""


def send(sock: socket.socket, message: Any, fds: tuple[int, ...] = ()) -> None:
    """Send `message` (JSON-able) on `sock`, with the open file descriptors `fds`."""
    data = json.dumps(message, separators=(",", ":")).encode()
    header = _HEADER.pack(len(data))
    if fds:
        socket.send_fds(sock, [header], list(fds))
    else:
        sock.sendall(header)
    sock.sendall(data)


def _decode(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError as error:  # UnicodeDecodeError is one
        raise ProtocolError(f"not a message: {error}") from None


def _exactly(sock: socket.socket, size: int, start: bytes = b"") -> bytes:
    data = bytearray(start)
    while len(data) < size:
        part = sock.recv(size - len(data))
        if not part:
            raise EOFError("the other end closed the connection mid-message")
        data += part
    return bytes(data)


def receive(sock: socket.socket, max_fds: int = 0) -> tuple[Any, list[int]]:
    """The next message on `sock` (blocking) and the file descriptors it carried (at
    most `max_fds`, which the caller then owns). Raises EOFError when the peer is
    gone, ProtocolError on what is not a message."""
    if max_fds:
        start, fds, _, _ = socket.recv_fds(sock, _HEADER.size, max_fds)
    else:
        start, fds = sock.recv(_HEADER.size), []
    if not start:
        raise EOFError("the other end closed the connection")
    try:
        (size,) = _HEADER.unpack(_exactly(sock, _HEADER.size, start))
        if size > MAX_MESSAGE:
            raise ProtocolError(f"a message of {size} bytes (at most {MAX_MESSAGE})")
        return _decode(_exactly(sock, size)), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


class Incoming:
    """One message arriving on a non-blocking socket: :meth:`read` whenever the socket
    is readable, until it returns the message (the descriptors in :attr:`fds`)."""

    def __init__(self, sock: socket.socket, max_fds: int):
        self.sock, self.max_fds = sock, max_fds
        self.data = bytearray()
        self.fds: list[int] = []

    def read(self) -> Any | None:
        """The message once whole, else None. Raises EOFError where the peer closed
        first, ProtocolError on what is not a message (closing what it carried)."""
        try:
            part, fds, _, _ = socket.recv_fds(self.sock, 65536, self.max_fds)
        except BlockingIOError:
            return None
        self.fds += fds
        if not part:
            self.close_fds()
            raise EOFError("the other end closed the connection mid-message")
        self.data += part
        if len(self.data) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(self.data)
        if size > MAX_MESSAGE or len(self.data) > _HEADER.size + size:
            self.close_fds()
            raise ProtocolError(f"a message of {size} bytes, or more than one at once")
        if len(self.data) < _HEADER.size + size:
            return None
        try:
            return _decode(bytes(self.data[_HEADER.size :]))
        except ProtocolError:
            self.close_fds()
            raise

    def close_fds(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []
