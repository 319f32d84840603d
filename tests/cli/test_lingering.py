"""A lingering close against a client that reads nothing: the connection still ends at the bounds.

A real asyncio server on loopback answers with more than the kernel's buffers hold, then closes
through :class:`Lingering`; the client shrinks its receive window and never reads, so the answer
can never drain. The tests wait for the server to lose the connection, with a failsafe.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import pytest

from mycelium.cli import _lingering
from mycelium.cli._lingering import Lingering

ANSWER = b"x" * (32 * 1024 * 1024)
"""More than any loopback socket's buffers hold, so most of it stays in the transport's own."""
FAILSAFE_S = 10


class Answering(asyncio.Protocol):
    """Writes :data:`ANSWER` as soon as a client connects, then closes through a lingering transport."""

    def __init__(self, lost: asyncio.Future[None], then: Callable[[Lingering], None]) -> None:
        self._lost = lost
        self._then = then
        self.lingering: Lingering | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.lingering = Lingering(transport, asyncio.get_running_loop())
        self.lingering.write(ANSWER)
        self._then(self.lingering)

    def data_received(self, data: bytes) -> None:
        assert self.lingering is not None
        self.lingering.drop(data)

    def connection_lost(self, exc: Exception | None) -> None:
        assert self.lingering is not None
        self.lingering.closed()
        if not self._lost.done():
            self._lost.set_result(None)


@asynccontextmanager
async def a_client_that_reads_nothing(
    then: Callable[[Lingering], None],
) -> AsyncIterator[tuple[socket.socket, asyncio.Future[None]]]:
    """A server answering as :class:`Answering` does, and a connected client that never reads."""
    loop = asyncio.get_running_loop()
    lost: asyncio.Future[None] = loop.create_future()
    server = await loop.create_server(lambda: Answering(lost, then), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window stays small
    client.setblocking(False)
    try:
        await loop.sock_connect(client, ("127.0.0.1", port))
        yield client, lost
    finally:
        client.close()
        server.close()
        await server.wait_closed()


async def test_a_client_that_never_reads_its_answer_loses_the_connection_at_the_linger_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_lingering, "LINGER_SECONDS", 0.2)
    async with a_client_that_reads_nothing(Lingering.close) as (_client, lost):
        with anyio.fail_after(FAILSAFE_S):
            await lost


async def test_a_client_that_floods_a_closing_connection_and_reads_nothing_loses_it_at_the_byte_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_lingering, "LINGER_SECONDS", 3600.0)  # only the byte bound can end it
    async with a_client_that_reads_nothing(Lingering.close) as (client, lost):
        loop = asyncio.get_running_loop()
        with anyio.fail_after(FAILSAFE_S):
            with contextlib.suppress(ConnectionError):  # the server may drop it before the last byte is sent
                await loop.sock_sendall(client, b"y" * (_lingering.LINGER_BYTES + 1))
            await lost
