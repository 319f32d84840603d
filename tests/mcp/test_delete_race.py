"""A DELETE racing the other requests of its connection: each ends cleanly, and its HTTP connection stays open.

The interleavings are driven, not hoped for: an ASGI app of the test's, in front of the
server, holds the request it is told to at one point of its exchange (before the server
reads it, at its answer's status line, at its answer's last bytes) until the DELETE has
been answered. Every raced request travels on a connection of its own (:mod:`tests.support.wire`),
which must then carry one more request: a server that fails inside a request closes the
connection, and says "Exception in ASGI application" in its log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

import anyio
import httpx2
import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mycelium.mcp._http import Answered
from tests.support.wire import Response, Wire, wire

from . import raw_http as raw
from .conftest import ALICE, Host, Served, served

HOLD = "x-test-hold"
"""The header naming where the test's app holds a request: ``receive``, ``start`` or ``end``."""
ROUNDS = 3
"""How many times each interleaving runs, each on a connection of its own."""
RACED = ["tools-call", "notification", "reply", "get-stream"]


@dataclass
class Holds:
    """The test's app in front of the server: holds the request marked with :data:`HOLD` where it says."""

    reached: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)

    def arm(self) -> None:
        """Hold the next marked request; the previous hold is over."""
        self.reached, self.release = anyio.Event(), anyio.Event()

    async def _hold(self) -> None:
        self.reached.set()
        await self.release.wait()

    def __call__(self, app: ASGIApp) -> ASGIApp:
        async def holding(scope: Scope, receive: Receive, send: Send) -> None:
            point = dict(scope.get("headers", [])).get(HOLD.encode(), b"").decode()
            if scope["type"] != "http" or not point:
                await app(scope, receive, send)
                return
            first = True

            async def held_receive() -> Message:
                nonlocal first
                if point == "receive" and first:
                    first = False
                    await self._hold()
                return await receive()

            async def held_send(message: Message) -> None:
                last = message["type"] == "http.response.body" and not message.get("more_body", False)
                if (point == "start" and message["type"] == "http.response.start") or (point == "end" and last):
                    await self._hold()
                await send(message)

            await app(scope, held_receive, held_send)

        return holding


def request_of(kind: str, session: str, point: str) -> tuple[str, dict[str, str], bytes]:
    """The HTTP method, headers and body of one raced request of ``kind``, held at ``point``."""
    method, _, body = raw.request_of(kind, session, code="return 1")
    sent = raw.headers(session=session, **{HOLD.replace("-", "_"): point})
    return method, sent, b"" if body is None else json.dumps(body).encode()


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with raw.capture_every_log(caplog):
        yield caplog


def failures(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the server logged at ERROR or above: a request that ended cleanly logs nothing there."""
    return [raw.log_text([record]) for record in caplog.records if record.levelno >= logging.ERROR]


async def still_open(connection: Wire, session: str) -> Response:
    """The answer to one more request on ``connection``: only a connection the server kept open gets one."""
    ping = json.dumps({"jsonrpc": "2.0", "id": 50, "method": "ping"}).encode()
    return await connection.request("POST", "/mcp", raw.headers(session=session), ping)


async def race_delete(
    s: Served, http: httpx2.AsyncClient, holds: Holds, connection: Wire, kind: str, point: str
) -> Response:
    """Hold a request of ``kind`` at ``point``, DELETE its connection, let it go; its whole answer."""
    session = await raw.open_session(http, s.url)
    holds.arm()
    method, sent, body = request_of(kind, session, point)
    await connection.start(method, "/mcp", sent, body)
    with anyio.fail_after(raw.ANSWER_WITHIN_S):
        await holds.reached.wait()
    deleted = await raw.send(http, "DELETE", s.url, sent=raw.headers(session=session))
    assert deleted.status == 200, (deleted.status, deleted.text)
    holds.release.set()
    answer = await connection.answer()
    reused = await still_open(connection, session)
    assert reused.status == 404, (kind, point, reused.status, reused.body)
    return answer


INTERLEAVINGS = [(kind, point) for kind in RACED for point in ("receive", "start", "end")]


# Held at its answer's end, a GET stream would wait for the DELETE that ends it: not an interleaving.
@pytest.mark.parametrize(("kind", "point"), [each for each in INTERLEAVINGS if each != ("get-stream", "end")])
async def test_a_delete_racing_a_request_of_its_connection_ends_it_cleanly_and_keeps_its_http_connection(
    kind: str, point: str, log: pytest.LogCaptureFixture
) -> None:
    holds = Holds()
    host = Host()
    async with served(host, wrap=holds) as s, httpx2.AsyncClient(timeout=raw.ANSWER_WITHIN_S) as http:
        port = int(s.url.rsplit(":", 1)[1].removesuffix("/mcp"))
        for _ in range(ROUNDS):
            async with wire(port) as connection:
                answer = await race_delete(s, http, holds, connection, kind, point)
            assert answer.status < 500, (kind, point, answer.status, answer.body)
    assert failures(log) == []
    assert "Exception in ASGI application" not in raw.log_text(log.records)


async def test_a_delete_while_a_call_runs_and_the_event_stream_is_open_ends_both_and_keeps_their_http_connections(
    log: pytest.LogCaptureFixture,
) -> None:
    host = Host()
    host.grant(ALICE, notes="write")
    async with served(host) as s, httpx2.AsyncClient(timeout=raw.ANSWER_WITHIN_S) as http:
        port = int(s.url.rsplit(":", 1)[1].removesuffix("/mcp"))
        for _ in range(ROUNDS):
            started, release = host.hold_creates()
            session = await raw.open_session(http, s.url)
            async with wire(port) as calling, wire(port) as streaming:
                call_body = json.dumps(raw.call_execute('return await notes.create(text="raced")')).encode()
                await calling.start("POST", "/mcp", raw.headers(session=session), call_body)
                await streaming.start("GET", "/mcp", raw.headers(session=session))
                stream = await streaming.head()
                with anyio.fail_after(raw.ANSWER_WITHIN_S):
                    await started.wait()
                deleted = await raw.send(http, "DELETE", s.url, sent=raw.headers(session=session))
                release.set()
                call = await calling.answer()
                await streaming.answer(stream)
                for connection in (calling, streaming):
                    assert (await still_open(connection, session)).status == 404
            assert deleted.status == 200
            assert stream.status == 200
            # The call was cancelled by the DELETE: its stream ends without an answer in it.
            assert call.status == 200
            assert all("result" not in message for message in raw.messages(call.body.decode()))
    assert failures(log) == []
    assert "Exception in ASGI application" not in raw.log_text(log.records)


async def test_a_second_answer_begun_while_the_first_is_being_sent_never_reaches_the_client() -> None:
    # No interleaving of the SDK's own makes this today: the rule is checked on the guard itself, so a
    # later SDK that answers twice mid-stream cannot write its error into the first answer's stream.
    sent: list[Message] = []

    async def client(message: Message) -> None:
        sent.append(message)

    answered = Answered(client)
    first = [
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]},
        {"type": "http.response.body", "body": b"event: message\ndata: {}\n\n", "more_body": True},
    ]
    for message in first:
        await answered(message)
    await answered({"type": "http.response.start", "status": 500, "headers": []})
    await answered({"type": "http.response.body", "body": b'{"error": "Error handling POST request"}'})
    await answered.finish()
    assert sent == [*first, {"type": "http.response.body", "body": b"", "more_body": False}]
