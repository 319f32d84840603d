"""The connection table: a bound with least-recently-used eviction, durable resume, and nothing left behind."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx2

from mycelium.mcp import SqliteConnections

from . import raw_http as raw
from .conftest import ALICE, BOB, Host, served, text_of


def granted() -> Host:
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    host.grant(BOB, notes="write", reports="read")
    return host


async def alive(http: httpx2.AsyncClient, url: str, session_id: str, token: str = "token-alice") -> bool:
    return (await raw.request(http, url, token, session_id, "tools/list")).status == 200


async def test_opening_one_more_than_the_bound_evicts_the_least_recently_used_connection() -> None:
    async with (
        served(granted(), max_connections=3, max_connections_per_principal=3) as s,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        first, second, third = [await raw.open_session(http, s.url, "token-alice") for _ in range(3)]
        assert await alive(http, s.url, first)  # first is now the most recently used; second the least
        fourth = await raw.open_session(http, s.url, "token-alice")
        assert [await alive(http, s.url, sid) for sid in (first, second, third, fourth)] == [True, False, True, True]


async def test_a_connection_running_an_execute_is_never_evicted() -> None:
    host = granted()
    started, release = host.hold_creates()
    async with (
        served(host, max_connections=2, max_connections_per_principal=2) as s,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        busy = await raw.open_session(http, s.url, "token-alice")
        outcome: list[object] = []

        async def run_long() -> None:
            outcome.append(await raw.execute(http, s.url, "token-alice", busy, "return await notes.create(text='x')"))

        async with anyio.create_task_group() as group:
            group.start_soon(run_long)
            await started.wait()
            idle = await raw.open_session(http, s.url, "token-alice")
            newer = await raw.open_session(http, s.url, "token-alice")  # evicts idle, not busy
            assert not await alive(http, s.url, idle)
            assert await alive(http, s.url, newer)
            release.set()
        [(status, value)] = outcome
        assert status == 200
        assert value == {"id": 3, "text": "x"}


async def test_when_every_connection_is_busy_a_new_one_is_refused_with_503() -> None:
    host = granted()
    started, release = host.hold_creates()
    async with served(host, max_connections=1) as s, httpx2.AsyncClient(timeout=30) as http:
        busy = await raw.open_session(http, s.url, "token-alice")
        async with anyio.create_task_group() as group:
            group.start_soon(raw.execute, http, s.url, "token-alice", busy, "return await notes.create(text='x')")
            await started.wait()
            refused = await raw.send(http, "POST", s.url, sent=raw.headers(version=None), body=raw.initialize(1))
            release.set()
        assert refused.status == 503
        assert await alive(http, s.url, busy)


async def test_a_restarted_server_resumes_a_recorded_connection_for_its_own_principal_only(tmp_path: Path) -> None:
    database = tmp_path / "connections.sqlite"
    host = granted()
    async with httpx2.AsyncClient(timeout=30) as http:
        async with served(host, connections=SqliteConnections(database)) as s:
            session_id = await raw.open_session(http, s.url, "token-alice", raw.FORM_ELICITATION)
            url = s.url
        async with served(host, connections=SqliteConnections(database)) as s:
            assert (await raw.request(http, s.url, "token-bob", session_id, "tools/list")).status == 404
            status, found = await raw.execute(http, s.url, "token-alice", session_id, "return await notes.search()")
            assert status == 200
            assert [note["id"] for note in found] == [1, 2]
            _, written = await raw.execute(
                http, s.url, "token-alice", session_id, "return await notes.create(text='x')"
            )
            assert written["reason"] == "read-only-grant"  # no elicitation was recorded after the restart
            assert host.writes == []
            # A fresh connection negotiates again and may write.
            fresh = await raw.open_session(http, s.url, "token-alice")
            _, created = await raw.execute(http, s.url, "token-alice", fresh, "return await notes.create(text='x')")
            assert created == {"id": 3, "text": "x"}
            deleted = await raw.send(http, "DELETE", s.url, sent=raw.headers(session=session_id))
            assert deleted.status in (200, 204)
        assert url  # the same route in both lives
        async with served(host, connections=SqliteConnections(database)) as s:
            assert (await raw.request(http, s.url, "token-alice", session_id, "tools/list")).status == 404


async def test_an_sdk_client_cancelling_its_call_releases_the_run() -> None:
    host = granted()
    started = anyio.Event()

    async def hold() -> None:
        started.set()
        await anyio.sleep_forever()

    host.on_delete = hold
    async with served(host) as s:
        async with s.client(elicitation=_approve) as client, anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "execute", {"code": "return await notes.delete(id=1)"})
            await started.wait()
            group.cancel_scope.cancel()
        with anyio.fail_after(10):
            await s.catalog.aclose()
        assert s.catalog.sandbox.in_flight == 0


async def _approve(context: object, params: object) -> object:
    import mcp_types as types

    return types.ElicitResult(action="accept", content={"approve": True})


async def test_many_principals_share_one_sandbox_capacity() -> None:
    host = granted()
    async with served(host) as s, s.client("token-alice") as alice, s.client("token-bob") as bob:
        a = await alice.call_tool("execute", {"code": "return 'a'"})
        b = await bob.call_tool("execute", {"code": "return 'b'"})
        assert [json.loads(text_of(a)), json.loads(text_of(b))] == ["a", "b"]
        assert s.catalog.sandbox.in_flight == 0


async def test_one_principal_holds_at_most_its_share_of_the_connections() -> None:
    async with served(granted(), max_connections=4) as s, httpx2.AsyncClient(timeout=30) as http:
        bobs = await raw.open_session(http, s.url, "token-bob")
        alices = [await raw.open_session(http, s.url, "token-alice") for _ in range(3)]
        # Alice's share is 2 of 4: her third replaced her first, and Bob's connection stayed.
        assert [await alive(http, s.url, sid) for sid in alices] == [False, True, True]
        assert await alive(http, s.url, bobs, "token-bob")
