"""Red-team findings against the MCP server: each test names the rule an attacker broke.

Every request here is built as a hostile client would build it, over real loopback HTTP.
A test in this file fails for as long as the break it records is open.
"""

from __future__ import annotations

import functools
import gc
import json
from typing import Any

import anyio
import httpx2
import pytest

from mycelium.mcp import Admitted, Member, Principal, Refused, SqliteConnections

from . import raw_http as raw
from .conftest import ALICE, Host, served

TICK_S = 0.002
MAX_LOOP_GAP_S = 0.25
"""The stall the project's other loop-lag tests allow (tests/security)."""


def granted() -> Host:
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    return host


class LoopGaps:
    """Measures how long the event loop was kept from waking a short sleep."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._stopped = anyio.Event()

    async def run(self) -> None:
        # As `mycelium serve` does once it is up: what was loaded before is kept out of later full
        # collections. Without it, a collection walking the whole test session's heap (over a
        # thousand tests' worth) would be measured as the server's stall.
        gc.collect()
        gc.freeze()
        try:
            while not self._stopped.is_set():
                before = anyio.current_time()
                with anyio.move_on_after(TICK_S):
                    await self._stopped.wait()
                self.worst = max(self.worst, anyio.current_time() - before - TICK_S)
        finally:
            gc.unfreeze()

    def stop(self) -> None:
        self._stopped.set()


# -- a guest must not stall the server's event loop -------------------------------------------

# 64 KiB of bare statements ending in an assignment: Monty runs it in a few milliseconds in its
# worker, but the host then parses the whole program again with `ast.parse` on the event loop (to
# say why a program ending in a statement returned null), which takes 100-400 ms per run.
STALLING_PROGRAM = "a = 0\n" + "a;" * 32_700 + "\na = 1\n"


async def test_a_hostile_program_does_not_stall_the_event_loop_for_other_clients() -> None:
    async with served(granted()) as s, httpx2.AsyncClient(timeout=60) as http:
        session = await raw.open_session(http, s.url)
        sent = raw.headers(session=session)
        gaps = LoopGaps()
        answers: list[raw.Answer] = []

        async def run(request_id: int) -> None:
            body = raw.call_execute(STALLING_PROGRAM, request_id)
            answers.append(await raw.send(http, "POST", s.url, sent=sent, body=body))

        async with anyio.create_task_group() as outer:
            outer.start_soon(gaps.run)
            async with anyio.create_task_group() as group:
                for request_id in range(16):
                    group.start_soon(functools.partial(run, 100 + request_id))
            gaps.stop()
        assert [answer.status for answer in answers] == [200] * 16
        assert gaps.worst < MAX_LOOP_GAP_S, f"the server's event loop stalled for {gaps.worst * 1000:.0f} ms"


# 3 MB of small JSON objects: the SDK spends about half a second of event-loop time parsing
# and validating it, and the server accepts bodies up to 4 MiB, although its one tool takes at
# most ``max_code_bytes`` (64 KiB) of program.
BULKY_PING = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {f"k{i}": [i] for i in range(150_000)}}}
)


async def test_large_request_bodies_from_one_client_do_not_stall_the_event_loop_for_others() -> None:
    async with served(granted()) as s, httpx2.AsyncClient(timeout=60) as http:
        session = await raw.open_session(http, s.url)
        sent = raw.headers(session=session)
        bodies = [BULKY_PING.replace('"id": 1,', f'"id": {100 + n},', 1).encode() for n in range(8)]
        start = anyio.Event()
        gaps = LoopGaps()
        statuses: list[int] = []

        async def send(body: bytes) -> None:
            await start.wait()
            statuses.append((await http.post(s.url, headers=sent, content=body)).status_code)

        async with anyio.create_task_group() as outer:
            async with anyio.create_task_group() as group:
                for body in bodies:
                    group.start_soon(send, body)
                outer.start_soon(gaps.run)
                start.set()
            gaps.stop()
        assert len(statuses) == 8
        assert all(status < 500 for status in statuses), statuses
        assert gaps.worst < MAX_LOOP_GAP_S, f"the server's event loop stalled for {gaps.worst * 1000:.0f} ms"


# -- never a 500 ------------------------------------------------------------------------------


async def test_a_get_stream_with_a_last_event_id_is_never_a_500(caplog: pytest.LogCaptureFixture) -> None:
    async with served(granted()) as s, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, s.url)
        with raw.capture_every_log(caplog):
            # No event store: the SDK's transport returns without answering, and uvicorn says 500.
            answer = await raw.send(http, "GET", s.url, sent=raw.headers(session=session, last_event_id="0-forged"))
        assert answer.status < 500, (answer.status, answer.text)
        assert "ASGI callable returned without starting response" not in raw.log_text(caplog.records)
        body = raw.call_execute("return 40 + 2")
        assert (await raw.send(http, "POST", s.url, sent=raw.headers(session=session), body=body)).status == 200


# -- a session is bound to its principal ------------------------------------------------------

# Both are valid principals of one host; ``principal_key`` writes both as ``member:acme:alice:owner``.
VICTIM = Member("acme:alice", "owner")
IMPOSTOR = Member("acme", "alice:owner")
COLLIDING_TOKENS: dict[str, Principal] = {"token-victim": VICTIM, "token-impostor": IMPOSTOR}


def colliding_host() -> Host:
    host = Host()
    host.grant(VICTIM, notes="write", reports="read")
    host.grant(IMPOSTOR, notes="read")

    def authenticate(request: Any) -> Admitted | Refused:
        _, _, token = request.headers.get("authorization", "").partition(" ")
        principal = COLLIDING_TOKENS.get(token)
        return Refused(401) if principal is None else Admitted(principal)

    host.authenticate = authenticate  # type: ignore[method-assign]
    return host


async def test_another_principal_presenting_a_session_id_gets_404_even_when_their_ids_share_a_key() -> None:
    async with served(colliding_host()) as s, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, s.url, "token-victim")
        list_tools = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}
        answer = await raw.send(
            http, "POST", s.url, sent=raw.headers("token-impostor", session=session), body=list_tools
        )
        assert answer.status == 404, "the impostor used the victim's connection"


async def test_a_restarted_server_resumes_a_connection_for_its_own_principal_only_even_when_ids_share_a_key(
    tmp_path: Any,
) -> None:
    database = tmp_path / "connections.sqlite"
    host = colliding_host()
    async with httpx2.AsyncClient(timeout=30) as http:
        async with served(host, connections=SqliteConnections(database)) as s:
            session = await raw.open_session(http, s.url, "token-victim")
        async with served(host, connections=SqliteConnections(database)) as s:
            list_tools = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}
            sent = raw.headers("token-impostor", session=session)
            answer = await raw.send(http, "POST", s.url, sent=sent, body=list_tools)
            assert answer.status == 404, "the impostor resumed the victim's connection"
