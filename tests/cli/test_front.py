"""`GET /healthz` and the front of a draining replica: what a load balancer and a client are told.

The health check's timing is checked on a clock the test moves; the paths and methods on a
real `mycelium serve` process, over raw HTTP so no client normalises a path on the way.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import anyio
import httpx2
import pytest
from starlette.types import Message, Receive, Scope, Send

from mycelium.cli._front import HEALTH_PATH, Front, Health

from .replicas import TOKEN, replica


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Store:
    """A probe that counts its checks, and fails or waits when told to."""

    def __init__(self) -> None:
        self.checks = 0
        self.failure: Exception | None = None
        self.hold: anyio.Event | None = None

    async def ping(self) -> None:
        self.checks += 1
        if self.hold is not None:
            await self.hold.wait()
        if self.failure is not None:
            raise self.failure


async def test_a_check_of_the_store_is_reused_for_a_second() -> None:
    clock, store = Clock(), Store()
    health = Health(store.ping, clock=clock)
    assert [await health.answers() for _ in range(3)] == [True, True, True]
    clock.now += 0.99
    assert await health.answers()
    assert store.checks == 1
    clock.now += 0.01
    store.failure = ConnectionError("gone")
    assert not await health.answers()
    assert store.checks == 2


async def test_probes_that_arrive_while_the_store_is_checked_wait_for_that_check() -> None:
    store = Store()
    store.hold = anyio.Event()
    health = Health(store.ping, clock=Clock())
    answers: list[bool] = []

    async def probe() -> None:
        answers.append(await health.answers())

    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(probe)
        await anyio.wait_all_tasks_blocked()
        store.hold.set()
    assert answers == [True] * 20
    assert store.checks == 1


async def test_a_store_that_does_not_answer_within_the_timeout_is_unavailable() -> None:
    store = Store()
    store.hold = anyio.Event()  # never set
    health = Health(store.ping, timeout_s=0.01, clock=Clock())
    assert not await health.answers()


async def test_a_failing_store_is_logged_once_by_its_error_type_never_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, store = Clock(), Store()
    store.failure = OSError("password=hunter2 host=db.internal")
    health = Health(store.ping, clock=clock)
    with caplog.at_level(logging.INFO, logger="mycelium.cli"):
        for _ in range(3):
            assert not await health.answers()
            clock.now += 1
        store.failure = None
        assert await health.answers()
    said = [record.getMessage() for record in caplog.records]
    assert said == ["the store stopped answering health checks: OSError", "the store answers health checks again"]


async def test_without_a_store_the_replica_is_healthy_until_it_drains() -> None:
    assert await Health(None).answers()
    front = Front(_never_called, Health(None))
    assert (await asgi(front, "GET", HEALTH_PATH))[:2] == (200, {"status": "ok"})
    front.drain()
    assert (await asgi(front, "GET", HEALTH_PATH))[:2] == (503, {"status": "unavailable"})


@pytest.mark.parametrize(
    ("method", "body", "continues"),
    [
        ("POST", {"jsonrpc": "2.0", "id": 0, "result": {"action": "accept"}}, True),  # a reply to the server
        ("POST", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}, True),
        ("POST", [{"jsonrpc": "2.0", "id": 0, "result": {}}, {"jsonrpc": "2.0", "method": "n"}], True),
        ("DELETE", None, True),  # ends a connection
        ("POST", {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}}, False),
        # The retry of a paused run: the server answers it (takes it over or hands it back), not the front.
        ("POST", {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"requestState": "s"}}, True),
        ("POST", {"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {"requestState": "s"}}, False),
        ("POST", {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": ["requestState"]}, False),
        ("POST", [{"jsonrpc": "2.0", "id": 0, "result": {}}, {"jsonrpc": "2.0", "id": 4, "method": "ping"}], False),
        ("POST", [], False),
        ("POST", "not json {", False),
        ("GET", None, False),  # a new event stream
        ("PUT", None, False),
    ],
)
async def test_a_draining_replica_lets_through_only_what_continues_work_in_flight(
    method: str, body: object, continues: bool
) -> None:
    reached: list[bytes] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append((await receive()).get("body", b""))
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    front = Front(app, Health(None))
    front.drain()
    sent = body if isinstance(body, str) else json.dumps(body)
    status, _, headers = await asgi(front, method, "/mcp", sent.encode() if body is not None else b"")
    if continues:
        assert status == 202
        assert reached == [sent.encode() if body is not None else b""]  # the app reads the body it was sent
    else:
        assert (status, headers.get(b"retry-after"), headers.get(b"connection")) == (503, b"1", b"close")
        assert reached == []


async def test_health_answers_get_only_and_says_nothing_but_its_status(tmp_path: Path) -> None:
    async with replica(tmp_path / "data") as served, httpx2.AsyncClient(timeout=30) as http:
        ok = await http.get(f"{served.base}/healthz")
        with_query = await http.get(f"{served.base}/healthz?verbose=1")
        others = {method: (await http.request(method, f"{served.base}/healthz")) for method in ("POST", "PUT", "HEAD")}
    assert (ok.status_code, ok.content) == (200, b'{"status":"ok"}')
    assert ok.headers["cache-control"] == "no-store"
    assert with_query.content == b'{"status":"ok"}'
    for method, answer in others.items():
        assert (answer.status_code, answer.headers.get("allow")) == (405, "GET"), method


@pytest.mark.parametrize(
    "path", ["/healthz/", "/healthz/x", "/healthzz", "/HEALTHZ", "//healthz", "/mcp/../healthz", "/healthz/../mcp"]
)
async def test_no_path_but_healthz_itself_is_answered_without_a_token(tmp_path: Path, path: str) -> None:
    async with replica(tmp_path / "data") as served:
        answers = {method: await raw_request(served.port, method, path) for method in ("GET", "POST")}
    for method, (status, body) in answers.items():
        assert status == 404, (method, path, status, body)  # neither the health check nor MCP without the token
        assert b'"result"' not in body, (method, path, body)


async def test_the_mcp_endpoint_still_needs_the_token_beside_healthz(tmp_path: Path) -> None:
    async with replica(tmp_path / "data") as served:
        status, _ = await raw_request(served.port, "POST", "/mcp")
        authorized, _ = await raw_request(served.port, "POST", "/mcp", token=TOKEN)
    assert status == 401
    assert authorized == 200


# -- helpers --------------------------------------------------------------------------------


async def _never_called(scope: Scope, receive: Receive, send: Send) -> None:
    raise AssertionError("the health check reached the app")


async def asgi(front: Front, method: str, path: str, body: bytes = b"") -> tuple[int, object, dict[bytes, bytes]]:
    """One request through ``front`` in this process: status, JSON body (or None) and headers."""
    scope: Scope = {"type": "http", "method": method, "path": path, "headers": [], "query_string": b""}
    pending = [{"type": "http.request", "body": body, "more_body": False}]
    answer: list[Message] = []

    async def receive() -> Message:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        answer.append(message)

    await front(scope, receive, send)
    start, *rest = answer
    content = b"".join(message.get("body", b"") for message in rest)
    return start["status"], json.loads(content) if content else None, dict(start["headers"])


INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
).encode()


async def raw_request(port: int, method: str, path: str, *, token: str | None = None) -> tuple[int, bytes]:
    """``method path`` sent byte for byte over a socket (a POST carries an initialize); the status and body."""
    body = INITIALIZE if method == "POST" else b""
    lines = [
        f"{method} {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
    with anyio.fail_after(10):
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(request)
            received = b""
            while True:
                try:
                    received += await stream.receive()
                except anyio.EndOfStream:
                    break
    head, _, content = received.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), content
