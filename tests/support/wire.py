"""One client TCP connection spoken to byte by byte: for the tests of what a server does with its sockets.

An HTTP client library hides what these tests are about (which connection carried a request,
whether the server kept it open, what a client that stops halfway gets), so the bytes are
written by hand and the answers read with h11, a real HTTP/1.1 parser, as a client reads them.
Every wait is bounded by :data:`ANSWER_WITHIN_S`, a failsafe that fails the test instead of
hanging it; nothing here waits on time to synchronise.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import h11
from anyio.abc import SocketStream

ANSWER_WITHIN_S = 30.0
"""The failsafe on every read: far beyond any bound under test, so only a server that never acts trips it."""


@dataclass
class Response:
    """One answer as the client read it: status, headers (lowercase names) and the whole body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Wire:
    """A client's connection: write any bytes, read answers with h11, see whether the server closed it."""

    def __init__(self, stream: SocketStream) -> None:
        self._stream = stream
        self._parser = h11.Connection(h11.CLIENT)

    @property
    def host(self) -> str:
        """What the ``Host`` header names: the server's address and port, as a client sends it."""
        port: int = self._stream.extra(anyio.abc.SocketAttribute.remote_port)
        return f"127.0.0.1:{port}"

    @property
    def local_port(self) -> int:
        """This end's port: the server's logs and tables name the connection by it."""
        port: int = self._stream.extra(anyio.abc.SocketAttribute.local_port)
        return port

    async def write(self, data: bytes) -> None:
        """Send ``data`` as it is, complete or not: h11 is told only of whole requests (see :meth:`request`).

        An answer read after an answer already read whole is read as the next one: h11 never saw the
        request the bytes written began, so it is given a fresh cycle, with whatever it had read past the last.
        """
        if self._parser.their_state is h11.DONE:
            unread, _ = self._parser.trailing_data
            self._parser = h11.Connection(h11.CLIENT)
            if unread:  # h11 takes no bytes for the end of the stream
                self._parser.receive_data(unread)
        await self._stream.send(data)

    async def request(self, method: str, path: str, headers: Mapping[str, str], body: bytes = b"") -> Response:
        """Send one whole request on this connection and read its whole answer."""
        await self.start(method, path, headers, body)
        return await self.answer()

    async def start(self, method: str, path: str, headers: Mapping[str, str], body: bytes = b"") -> None:
        """Send one whole request without reading its answer (a stream, read later with :meth:`answer`)."""
        if self._parser.our_state is h11.DONE and self._parser.their_state is h11.DONE:
            self._parser.start_next_cycle()
        sent = [("host", self.host), ("content-length", str(len(body))), *headers.items()]
        data = self._parser.send(h11.Request(method=method, target=path, headers=sent)) or b""
        data += self._parser.send(h11.Data(data=body)) or b""
        data += self._parser.send(h11.EndOfMessage()) or b""
        await self._stream.send(data)

    async def head(self) -> Response:
        """Read the status line and headers of the answer (its body is left for :meth:`answer`)."""
        event = await self._next()
        while isinstance(event, h11.InformationalResponse):
            event = await self._next()
        if not isinstance(event, h11.Response):
            raise AssertionError(f"expected a response, got {event!r}")
        headers = {name.decode().lower(): value.decode() for name, value in event.headers}
        return Response(event.status_code, headers, b"")

    async def answer(self, head: Response | None = None) -> Response:
        """Read an answer to its end (after ``head``, when that was read already)."""
        response = head or await self.head()
        chunks: list[bytes] = []
        while not isinstance(event := await self._next(), h11.EndOfMessage):
            if isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
        response.body = b"".join(chunks)
        return response

    async def closed(self) -> bool:
        """Wait until the server closes the connection (True) or sends anything instead (False).

        A reset counts as closed: a server that closes with bytes it never read makes one.
        """
        with anyio.fail_after(ANSWER_WITHIN_S):
            try:
                return await self._stream.receive() == b""
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                return True

    async def _next(self) -> Any:
        with anyio.fail_after(ANSWER_WITHIN_S):
            while (event := self._parser.next_event()) is h11.NEED_DATA:
                try:
                    data = await self._stream.receive()
                except anyio.EndOfStream:
                    data = b""
                self._parser.receive_data(data)
            return event

    async def aclose(self) -> None:
        await self._stream.aclose()


@asynccontextmanager
async def wire(port: int, *, source: str = "127.0.0.1") -> AsyncIterator[Wire]:
    """A connection to ``127.0.0.1:port`` from the loopback address ``source`` (any of 127.0.0.0/8).

    Each ``source`` is another client address to the server, all on this machine.
    """
    stream = await anyio.connect_tcp("127.0.0.1", port, local_host=source)
    try:
        yield Wire(stream)
    finally:
        await stream.aclose()
