"""Closing a client's connection so that what the server wrote last reaches it: a lingering close.

A TCP socket closed while bytes the client sent sit unread in it (a request the server never
read, the rest of a body it refused, bytes that come after the close) makes the kernel answer
with a reset, and a reset makes the client's kernel throw away what it had not yet read: the
408 or 429 that said why. So a connection ends here as HTTP/1.1 asks of a server (RFC 9112,
section 9.6): the answer is written, then only the sending half is shut (the client reads the
answer, then the end), and what the client still sends is read and dropped until it closes its
side, for at most :data:`LINGER_SECONDS` and :data:`LINGER_BYTES`; only then is the socket closed.
At either bound, an answer the client has still not taken is dropped with the connection: a client
that reads nothing cannot hold a socket, or the answer's bytes, past them. A connection with no
answer to deliver and nothing unread can :meth:`Lingering.end` at once instead: no reset can cost
it anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import socket
import struct
import termios
from typing import Any

__all__ = ["LINGER_BYTES", "LINGER_SECONDS", "Lingering", "reset", "unread_bytes"]

LINGER_SECONDS = 2.0
"""How long a closing connection waits for the client to close its side, reading what it sends."""
LINGER_BYTES = 64 * 1024
"""How much a closing connection reads and drops before it closes anyway."""


class Lingering:
    """An asyncio transport whose :meth:`close` lingers; everything else is the transport's own.

    uvicorn and its request cycles close connections through the transport they were given,
    so every close of theirs lingers too (an answer with ``connection: close``, the end of a
    server's shutdown). The protocol must hand each byte that comes while lingering to
    :meth:`drop` instead of parsing it.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._deadline: asyncio.TimerHandle | None = None
        self._dropped = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    @property
    def lingering(self) -> bool:
        """Whether the connection is closing: its sending half is shut, and what comes is dropped."""
        return self._deadline is not None

    def is_closing(self) -> bool:
        """Whether the connection closes or lingers: nothing more goes out on it either way."""
        return self.lingering or self._transport.is_closing()

    def close(self) -> None:
        """Send what was written, then the end; close once the client closes its side, or at the bounds."""
        if self.is_closing():
            return
        if not self._transport.can_write_eof():
            self._transport.close()
            return
        self._deadline = self._loop.call_later(LINGER_SECONDS, self.end)
        # Flow control may have paused reading: unread bytes are what turns the close into a reset.
        self._transport.resume_reading()
        self._transport.write_eof()

    def drop(self, data: bytes) -> None:
        """Drop ``data``, which came while lingering; close once more came than the bound."""
        self._dropped += len(data)
        if self._dropped > LINGER_BYTES:
            self.end()

    def end(self) -> None:
        """Close now, without lingering: what was written drains first unless the client has left it unread."""
        # A plain close waits for the answer to drain, which a client that never reads never lets it do.
        if self._transport.get_write_buffer_size():
            reset(self._transport)
        else:
            self._transport.close()

    def closed(self) -> None:
        """The connection is gone: stop the lingering's deadline."""
        if self._deadline is not None:
            self._deadline.cancel()


def reset(transport: asyncio.Transport) -> None:
    """Drop the connection with a reset, and with it what the kernel still holds to send.

    ``abort`` alone drops only the transport's buffer: the socket's close still leaves the kernel
    delivering its send queue (megabytes on loopback) to a client that may never read it, for minutes.
    """
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


def unread_bytes(transport: asyncio.BaseTransport) -> int:
    """How many bytes the client sent that sit in the socket, not yet read (0 where that is unknown).

    The event loop reads a socket in its own time: a client's bytes can have arrived before the
    server has heard them, and they still mean a request is in transit.
    """
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0
    try:
        count: int = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
    except OSError:
        return 0
    return count
