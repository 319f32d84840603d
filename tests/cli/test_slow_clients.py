"""`mycelium serve` against clients that stall: each is dropped at its bound, and everyone else is still served.

Every test runs a real `mycelium serve` process and speaks to it over raw sockets
(:mod:`tests.support.wire`), with the bounds made small through the options an operator would
use. A test waits for the server to close a socket (a read that returns nothing), never for
time to pass; the reads have a generous failsafe, and the only check on time is that a socket
was dropped within its bound plus :data:`SLACK_S`.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import time
from contextlib import AsyncExitStack
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp import raw_http as raw
from tests.support.apps.replicated_notes import DB_ENV
from tests.support.paths import APPS
from tests.support.wire import ANSWER_WITHIN_S, Response, Wire, answer_then_end, burst, wire

from .replicas import TOKEN, Replica, replica

BOUND_S = 0.5
"""The header and body timeouts of these tests."""
SLACK_S = 5.0
"""What a loaded machine may add to a bound before the server acts on it."""
STALLED = 20
"""How many stalled sockets a test opens, as the attack that found the problem did."""
OTHER_CLIENT = "127.0.0.2"
"""Another client address, on this machine: every address of 127.0.0.0/8 is loopback."""
ADVICE = "send the whole request at once"


def short_bounds(*extra: str) -> list[str]:
    return ["--header-timeout", str(BOUND_S), "--body-timeout", str(BOUND_S), *extra]


def encoded(connection: Wire, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    """A whole request's bytes (``Host`` and ``Content-Length`` added), to write whole or in part."""
    lines = [f"{method} {path} HTTP/1.1", f"host: {connection.host}", f"content-length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def call_body() -> bytes:
    return json.dumps(raw.modern_call("return 1")).encode()


async def healthy(connection: Wire) -> bool:
    """Whether ``connection`` carries a request and its answer: ``/healthz``, which needs no token."""
    answer = await connection.request("GET", "/healthz", {})
    return (answer.status, answer.json()) == (200, {"status": "ok"})


async def dropped_within(connection: Wire, began: float, bound: float) -> bool:
    """Whether the server closed ``connection`` (after its answer, if one was read) within ``bound`` plus slack."""
    return await connection.closed() and time.monotonic() - began <= bound + SLACK_S


def refused_with_advice(answer: Response, status: int) -> str:
    """The message of a JSON-RPC refusal of ``status`` that closes its connection."""
    assert answer.status == status, (answer.status, answer.body)
    assert answer.headers["connection"] == "close"
    message: str = answer.json()["error"]["message"]
    return message


def read_to_the_end(sock: socket.socket) -> bytes:
    """Everything ``sock`` receives until the server ends the connection, by a close or a reset."""
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def what_one_more_connection_gets(port: int) -> bytes:
    """What a new connection asking for ``/healthz`` reads to its end (nothing, if it is reset at any point)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_WITHIN_S) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            return read_to_the_end(sock)
    except (ConnectionResetError, BrokenPipeError):
        return b""


def warnings_naming(served: Replica, text: str) -> list[str]:
    return [line for line in served.log if text in line]


async def test_sockets_that_send_half_their_headers_or_nothing_are_dropped_at_the_header_timeout(
    tmp_path: Path,
) -> None:
    async with replica(tmp_path / "data", options=short_bounds()) as served, AsyncExitStack() as stack:
        began = time.monotonic()
        stalled = [await stack.enter_async_context(wire(served.port)) for _ in range(STALLED)]
        half_heads = stalled[: STALLED // 2]
        for connection in half_heads:
            whole = encoded(connection, "POST", "/mcp", raw.modern_headers(TOKEN), call_body())
            await connection.write(whole[: whole.index(b"\r\n\r\n") // 2])
        answers = [await connection.answer() for connection in half_heads]
        assert all([await dropped_within(connection, began, BOUND_S) for connection in stalled])
        async with wire(served.port) as fresh:
            assert await healthy(fresh)
        assert await served.stop() == 0  # its whole log read
    for answer in answers:  # a client with a request in transit is told; an idle one is just closed
        message = refused_with_advice(answer, 408)
        assert message == f"the request did not arrive whole within 0.5 s; {ADVICE}"
    logged = warnings_naming(served, "(--header-timeout)")
    [line] = logged  # once a minute, however many clients stall
    assert "answered 408 to 127.0.0.1:" in line


async def test_a_body_that_stops_halfway_gets_408_saying_what_to_do_and_its_connection_closes(tmp_path: Path) -> None:
    async with replica(tmp_path / "data", options=short_bounds()) as served, AsyncExitStack() as stack:
        began = time.monotonic()
        stalled = [await stack.enter_async_context(wire(served.port)) for _ in range(STALLED // 2)]
        for connection in stalled:
            whole = encoded(connection, "POST", "/mcp", raw.modern_headers(TOKEN), call_body())
            await connection.write(whole[: len(whole) - len(call_body()) // 2])
        answers = [await connection.answer() for connection in stalled]
        assert all([await dropped_within(connection, began, BOUND_S) for connection in stalled])
        async with wire(served.port) as fresh:
            assert await healthy(fresh)
        assert await served.stop() == 0
    for answer in answers:
        message = refused_with_advice(answer, 408)
        assert message == f"the request body did not arrive within 0.5 s; {ADVICE}"
    [line] = warnings_naming(served, "its body did not arrive whole within 0.5 s")
    assert "answered 408 to a request from 127.0.0.1:" in line


async def test_the_approvals_pages_form_that_stops_halfway_gets_408_and_its_connection_closes(tmp_path: Path) -> None:
    env = {"MYCELIUM_APPROVER_TOKEN": "approver-" + "t" * 32, DB_ENV: str(tmp_path / "writes.db")}
    app = (str(APPS / "replicated_notes.py"),)
    async with replica(tmp_path / "data", app=app, options=short_bounds(), env=env) as served:
        async with wire(served.port) as connection:
            form = b"token=" + b"t" * 40
            headers = {"content-type": "application/x-www-form-urlencoded"}
            whole = encoded(connection, "POST", "/approvals/login", headers, form)
            began = time.monotonic()
            await connection.write(whole[: len(whole) - len(form) // 2])
            answer = await connection.answer()
            assert await dropped_within(connection, began, BOUND_S)
    assert (answer.status, answer.headers["connection"]) == (408, "close")
    assert "The form took too long to arrive: send it again." in answer.body.decode()


async def test_a_body_left_unread_after_a_refusal_must_still_arrive_within_the_header_timeout(tmp_path: Path) -> None:
    async with replica(tmp_path / "data", options=short_bounds()) as served, wire(served.port) as connection:
        whole = encoded(connection, "POST", "/mcp", raw.modern_headers("not-the-token"), call_body())
        await connection.write(whole[: len(whole) - 10])
        refused = await connection.answer()  # refused on its headers: the server never reads the body
        began = time.monotonic()
        # A byte now and then of a body nobody reads: each one used to keep the connection open.
        await connection.write(whole[len(whole) - 10 : len(whole) - 5])
        late = await connection.answer()
        assert await dropped_within(connection, began, BOUND_S)
    assert refused.status == 401
    assert refused_with_advice(late, 408).endswith(ADVICE)


async def test_an_event_stream_outlives_the_header_and_body_timeouts_and_ends_whole_at_delete(tmp_path: Path) -> None:
    async with (
        replica(tmp_path / "data", options=short_bounds()) as served,
        httpx2.AsyncClient(timeout=raw.ANSWER_WITHIN_S) as http,
        wire(served.port) as streaming,
    ):
        session = await raw.open_session(http, served.url, TOKEN)
        await streaming.start("GET", "/mcp", raw.headers(TOKEN, session=session))
        stream = await streaming.head()
        # Opened after the stream's head arrived, so it is dropped after any bound that could cut the stream.
        async with wire(served.port) as stalled:
            await stalled.write(b"GET /healthz HTTP/1.1\r\n")
            assert (await stalled.answer()).status == 408
        deleted = await raw.send(http, "DELETE", served.url, sent=raw.headers(TOKEN, session=session))
        ended = await streaming.answer(stream)  # to its last chunk: a stream cut short fails to parse
        assert await healthy(streaming)
    assert (stream.status, deleted.status, ended.status) == (200, 200, 200)


async def test_one_address_keeps_at_most_its_cap_of_idle_connections_and_another_address_is_still_served(
    tmp_path: Path,
) -> None:
    cap = 4
    options = ["--max-idle-per-address", str(cap), "--header-timeout", "600"]
    async with (
        replica(tmp_path / "data", options=options) as served,
        # The test's own HTTP client comes from the other address: every connection of this one is the test's.
        httpx2.AsyncClient(
            timeout=raw.ANSWER_WITHIN_S, transport=httpx2.AsyncHTTPTransport(local_address=OTHER_CLIENT)
        ) as http,
        AsyncExitStack() as stack,
        wire(served.port, source=OTHER_CLIENT) as other,
    ):
        idle = [await stack.enter_async_context(wire(served.port)) for _ in range(cap)]
        await idle[0].write(b"GET /healthz HTTP/1.1\r\nhost: ")  # the longest waiting has a request in transit
        # Answered only once the server has read every byte sent before it, the half head included.
        assert await healthy(other)
        newest = await stack.enter_async_context(wire(served.port))
        over_cap = await idle[0].answer()
        assert await idle[0].closed()
        await served.says(f"127.0.0.1 keeps more than {cap} connections waiting for a request")
        # The others were held, the newest too: each still carries a request.
        assert all([await healthy(connection) for connection in [*idle[1:], newest]])
        # A connection carrying an event stream is busy, not idle: the address may open one more.
        session = await raw.open_session(http, served.url, TOKEN)
        await idle[1].start("GET", "/mcp", raw.headers(TOKEN, session=session))
        assert (await idle[1].head()).status == 200
        admitted = await stack.enter_async_context(wire(served.port))
        assert all([await healthy(connection) for connection in [*idle[2:], newest, admitted]])
        assert await served.stop() == 0
    assert over_cap.status == 429
    assert over_cap.headers["retry-after"] == "1"
    assert "close the idle ones or send on them, then retry" in refused_with_advice(over_cap, 429)
    [line] = warnings_naming(served, "(--max-idle-per-address)")  # the close at the stop is counted, not said
    assert "WARNING" in line


async def test_each_of_a_burst_of_stalled_sockets_over_the_cap_reads_its_whole_429_then_an_orderly_end(
    tmp_path: Path,
) -> None:
    cap, count = 4, 30
    options = ["--max-idle-per-address", str(cap), "--header-timeout", "600"]
    async with replica(tmp_path / "data", options=options) as served:
        stalled = burst(served.port, count, b"POST /mcp HTTP/1.1\r\nhost: ")
        try:
            over_cap = [answer_then_end(sock) for sock in stalled[: count - cap]]
        finally:
            for sock in stalled:
                sock.close()
    assert [orderly for _, orderly in over_cap] == [True] * (count - cap)  # a reset can throw the answer away
    for answer, _ in over_cap:
        assert "close the idle ones or send on them, then retry" in refused_with_advice(answer, 429)


async def test_a_client_still_sending_after_its_408_reads_the_whole_answer_then_an_orderly_end(tmp_path: Path) -> None:
    async with replica(tmp_path / "data", options=short_bounds()) as served, wire(served.port) as connection:
        whole = encoded(connection, "POST", "/mcp", raw.modern_headers(TOKEN), call_body())
        head_ends = whole.index(b"\r\n\r\n")
        late_head, late_body = stalled = burst(served.port, 1, whole[: head_ends // 2]) + burst(
            served.port, 1, whole[: len(whole) - len(call_body()) // 2]
        )
        try:
            for sock, rest in [(late_head, whole[head_ends // 2 :]), (late_body, whole[-(len(call_body()) // 2) :])]:
                select.select([sock], [], [], ANSWER_WITHIN_S)  # the 408 has come, unread
                # A client that sends its whole request before it reads (most do) is still sending when told.
                sock.sendall(rest)
            answers = [answer_then_end(sock) for sock in stalled]
        finally:
            for sock in stalled:
                sock.close()
    assert [orderly for _, orderly in answers] == [True, True]
    assert [refused_with_advice(answer, 408).endswith(ADVICE) for answer, _ in answers] == [True, True]


async def test_an_ordinary_client_with_keep_alive_is_served_under_small_bounds(tmp_path: Path) -> None:
    async with replica(tmp_path / "data", options=short_bounds()) as served, wire(served.port) as connection:
        for request_id in range(5):  # one connection, one request after another
            body = json.dumps(raw.modern_call("return 1", request_id=request_id)).encode()
            answer = await connection.request("POST", "/mcp", raw.modern_headers(TOKEN), body)
            assert answer.status == 200, (answer.status, answer.body)
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            for mode in ("legacy", "2026-07-28"):
                async with Client(streamable_http_client(served.url, http_client=http), mode=mode) as client:
                    [tool] = (await client.list_tools()).tools
                    result = await client.call_tool(tool.name, {"code": "return 6 * 7"})
                    assert result.is_error is False, result


async def test_a_client_that_pipelines_requests_and_reads_none_of_the_answers_is_dropped_at_the_send_timeout(
    tmp_path: Path,
) -> None:
    async with replica(tmp_path / "data", options=short_bounds("--send-timeout", str(BOUND_S))) as served:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window stays small
        try:
            sock.connect(("127.0.0.1", served.port))
            sock.setblocking(False)
            # Far more answers than the sockets' buffers and the transport's high-water mark hold.
            request = b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
            pipelined = request * 20_000
            with contextlib.suppress(BlockingIOError):  # as much as the server's receive buffer takes
                while pipelined:
                    pipelined = pipelined[sock.send(pipelined) :]
            sent = 20_000 - len(pipelined) // len(request)
            await served.says("took nothing of what was sent to it")
            sock.setblocking(True)
            sock.settimeout(ANSWER_WITHIN_S)  # a connection still held would fail the read here
            answered = read_to_the_end(sock).count(b"HTTP/1.1 200 ")
        finally:
            sock.close()
        async with wire(served.port) as connection:
            assert await healthy(connection)
    assert answered < sent  # the answers still waiting in the server went with the connection


async def test_the_whole_server_keeps_at_most_its_cap_of_idle_connections_whatever_their_addresses(
    tmp_path: Path,
) -> None:
    total = 3
    options = ["--max-idle-connections", str(total), "--header-timeout", "600"]
    async with replica(tmp_path / "data", options=options) as served, AsyncExitStack() as stack:
        # Each from an address of its own, so no address passes its own cap of 64.
        idle = [await stack.enter_async_context(wire(served.port, source=f"127.0.0.{n}")) for n in range(2, 2 + total)]
        await idle[0].write(b"GET /healthz HTTP/1.1\r\nhost: ")  # the longest waiting has a request in transit
        assert await healthy(idle[-1])  # every byte sent before it was read, the half head included
        newest = await stack.enter_async_context(wire(served.port, source="127.0.0.9"))
        over_cap = await idle[0].answer()
        assert await idle[0].closed()
        await served.says(f"the server keeps more than {total} connections waiting for a request")
        assert all([await healthy(connection) for connection in [*idle[1:], newest]])
    assert "send on this one, then retry" in refused_with_advice(over_cap, 429)


def open_sockets(served: Replica) -> int:
    """How many sockets the server process holds open (its listening one included)."""
    folder = Path(f"/proc/{served.process.pid}/fd")
    held = 0
    for entry in folder.iterdir():
        with contextlib.suppress(OSError):  # an entry closed while listed
            held += entry.readlink().name.startswith("socket:")
    return held


async def test_idle_connections_evicted_over_the_cap_release_their_sockets_at_once(tmp_path: Path) -> None:
    # A lingering close of each evicted connection kept its socket open up to 2 s outside the cap: a storm
    # of 500 connections a second from one machine used up a 1,024-file limit and stopped the server accepting.
    total = 3
    options = ["--max-idle-connections", str(total), "--header-timeout", "600"]
    async with replica(tmp_path / "data", options=options) as served, AsyncExitStack() as stack:
        async with wire(served.port) as fresh:
            assert await healthy(fresh)
        before = open_sockets(served)
        storm = [await stack.enter_async_context(wire(served.port)) for _ in range(STALLED)]
        async with wire(served.port) as fresh:
            assert await healthy(fresh)  # accepted after every socket of the storm: they all were
            held = open_sockets(served) - before
        assert all([await connection.closed() for connection in storm[:-total]])
    assert held <= total + 1, held  # the idle ones the cap keeps, and the fresh one


async def test_a_connection_past_the_servers_cap_is_reset_as_it_is_accepted_and_the_others_are_served(
    tmp_path: Path,
) -> None:
    cap = 3
    async with replica(tmp_path / "data", options=["--max-connections", str(cap)]) as served, AsyncExitStack() as stack:
        held = [await stack.enter_async_context(wire(served.port)) for _ in range(cap)]
        assert all([await healthy(connection) for connection in held])  # each one counted by now
        assert what_one_more_connection_gets(served.port) == b""  # its socket was given back at once
        await served.says(f"the server holds {cap} connections, the most it may (--max-connections)")
        assert all([await healthy(connection) for connection in held])
