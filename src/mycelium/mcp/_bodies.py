"""Reading a request's body whole, before anything parses it: bounded in size and in time.

A client chooses how fast its body arrives. One that sends half of it and stops, or a byte
now and then, would hold its request (and whatever the request holds: a connection's slot,
a worker) for as long as it likes; a :class:`BodyReader` gives the whole body ``timeout_s``
from its first read, however it is cut up, and answers 408 after that, closing the HTTP
connection, since the rest of the body may still be on its way and nothing after it could be
told from it. A body past ``max_bytes`` gets 413 without a byte more being read. The time
bound is the app's to keep because only the app knows whether it reads a body at all; the
server in front (``mycelium serve``) bounds what an app leaves unread, with the head of the
next request.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import anyio
from starlette.types import Receive, Scope, Send

from ._clients import once_a_minute, shown_address
from ._http import send_error

__all__ = ["DEFAULT_BODY_TIMEOUT_MS", "BodyReader", "Unread"]

logger = logging.getLogger("mycelium.mcp")

DEFAULT_BODY_TIMEOUT_MS = 30_000
"""How long, by default, a request's body may take to arrive whole from the server's first read of
it: the largest body served (256 KiB) at under 9 KB/s."""


@dataclass(frozen=True)
class Unread:
    """Why a body was not read whole: 413 (too large), 408 (too slow) or 400 (the client left first)."""

    status: int
    message: str
    """What the client should do, for a JSON answer; a page words its own."""

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        """The answer's extra headers: after a 408 the connection carries nothing more."""
        return [(b"connection", b"close")] if self.status == 408 else []

    async def answer(self, send: Send) -> None:
        """Refuse the request with a JSON-RPC error saying what to do."""
        await send_error(send, self.status, self.message, extra=self.headers)


class BodyReader:
    """Reads a body within ``max_bytes`` and ``timeout_s``; a too slow one is logged, once a minute."""

    def __init__(self, *, max_bytes: int, timeout_s: float) -> None:
        self._max_bytes = max_bytes
        self._timeout_s = timeout_s
        self._warnings = once_a_minute()

    async def read(self, scope: Scope, receive: Receive) -> bytes | Unread:
        """The whole body of the request in ``scope``, or why it was not read."""
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self._timeout_s):
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return Unread(400, "the request ended before its body did")
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self._max_bytes:
                    return Unread(413, f"the request body is larger than {self._max_bytes} bytes")
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        self._warnings.warn(
            logger,
            "answered 408 to a request from %s: its body did not arrive whole within %g s (%d bytes came)",
            shown_address(scope.get("client")),
            self._timeout_s,
            size,
        )
        told = f"the request body did not arrive within {self._timeout_s:g} s; send the whole request at once"
        return Unread(408, told)
