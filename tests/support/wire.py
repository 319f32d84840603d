"""One client TCP connection spoken to byte by byte: for the tests of what a server does with its sockets.

An HTTP client library hides what these tests are about (which connection carried a request,
whether the server kept it open, what a client that stops halfway gets), so the bytes are
written by hand and the answers read with h11, a real HTTP/1.1 parser, as a client reads them.
Every wait is bounded by :data:`ANSWER_WITHIN_S`, a failsafe that fails the test instead of
hanging it; nothing here waits on time to synchronise.
"""

from __future__ import annotations

import json
import socket
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

    async def ended_in_order(self) -> bool:
        """Wait until the server ends the connection: True for an orderly end, False for a reset or more bytes.

        A server that closes with bytes unread makes a reset, and a reset can throw away the answer
        before the client reads it: what a client relies on is the orderly end.
        """
        with anyio.fail_after(ANSWER_WITHIN_S):
            try:
                return await self._stream.receive() == b""
            except anyio.EndOfStream:
                return True
            except (anyio.BrokenResourceError, ConnectionResetError):
                return False

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


def burst(port: int, count: int, data: bytes) -> list[socket.socket]:
    """``count`` connections to ``127.0.0.1:port``, each sending ``data`` before the next is opened.

    Plain blocking sockets, as fast as a client can open them: a server that closes some before
    it has read them has bytes unread in them, which is how a close becomes a reset.
    """
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=ANSWER_WITHIN_S))
            sockets[-1].sendall(data)
    except BaseException:
        for opened in sockets:
            opened.close()
        raise
    return sockets


def answer_then_end(sock: socket.socket) -> tuple[Response, bool]:
    """Read ``sock`` to its end: the one answer on it, and whether the end was orderly (not a reset)."""
    parser = h11.Connection(h11.CLIENT)
    chunks: list[bytes] = []
    orderly = True
    while True:
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            orderly = False
            data = b""
        chunks.append(data)
        if not data:
            break
    parser.receive_data(b"".join(chunks))
    parser.receive_data(b"")
    response: Response | None = None
    while not isinstance(event := parser.next_event(), (h11.EndOfMessage, h11.ConnectionClosed)):
        if event is h11.NEED_DATA:
            raise AssertionError(f"the connection ended before a whole answer ({b''.join(chunks)!r})")
        if isinstance(event, h11.Response):
            headers = {name.decode().lower(): value.decode() for name, value in event.headers}
            response = Response(event.status_code, headers, b"")
        elif isinstance(event, h11.Data) and response is not None:
            response.body += bytes(event.data)
    if response is None:
        raise AssertionError("the connection ended with no answer")
    return response, orderly


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
