"""A server that stops hands its 2026-07-28 runs off: each pauses at its next call, and another replica finishes it.

``McpServer.hand_off()`` is what a draining ``mycelium serve`` calls near the end of its drain.
Here it is called from inside the first ``notes.create`` (the host's hook), so the test knows
where the program is: the second create is the call it pauses at. Two servers share one
suspension store and one ring, as replicas do; the second one takes the retry over.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2

from mycelium.mcp import SecretKeys
from mycelium.suspensions import Suspensions

from . import raw_http as raw
from .conftest import ALICE, BOB, Host, Served, served
from .test_approvals import refused_state

TWO_WRITES = "a = await notes.create(text='one')\nb = await notes.create(text='two')\nreturn [a['id'], b['id']]"


def handing_off_at_the_first_create(replica: list[Served]) -> Host:
    """A host whose first ``notes.create`` asks its server to hand its runs off (as a drain would)."""
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    host.grant(BOB, notes="write", reports="read")

    async def hand_off() -> None:
        host.on_create = None
        replica[0].server.hand_off()

    host.on_create = hand_off
    return host


@asynccontextmanager
async def two_replicas() -> AsyncIterator[tuple[Host, Served, Served]]:
    """Two servers of one host sharing a suspension store and a ring; the first hands off at the first create."""
    replica: list[Served] = []
    host = handing_off_at_the_first_create(replica)
    shared, ring = Suspensions(), SecretKeys.of(secrets.token_hex(32))
    async with (
        served(host, suspensions=shared, secret_keys=ring) as stopping,
        served(host, suspensions=shared, secret_keys=ring) as taking_over,
    ):
        replica.append(stopping)
        yield host, stopping, taking_over


async def call(http: httpx2.AsyncClient, url: str, *, state: str | None = None, token: str = "token-alice") -> Any:
    body = raw.modern_call(TWO_WRITES, request_id=2 if state else 1, request_state=state)
    answer = await raw.send(http, "POST", url, sent=raw.modern_headers(token), body=body)
    assert answer.status == 200, answer.text
    return answer.result()


async def test_a_handed_off_run_asks_only_for_a_retry_and_another_replica_finishes_it_each_write_once() -> None:
    async with two_replicas() as (host, stopping, taking_over), httpx2.AsyncClient(timeout=30) as http:
        handed_off = await call(http, stopping.url)
        assert handed_off["resultType"] == "input_required"
        assert "inputRequests" not in handed_off  # nobody is asked: the client retries at once
        assert host.writes == [("create", 3)]
        # The stopping replica takes nothing over: its answer to the retry is the same state, run nothing.
        echoed = await call(http, stopping.url, state=handed_off["requestState"])
        assert echoed["resultType"] == "input_required"
        assert host.writes == [("create", 3)]
        finished = await call(http, taking_over.url, state=echoed["requestState"])
        replayed = await call(http, taking_over.url, state=handed_off["requestState"])
    assert json.loads(finished["content"][0]["text"]) == [3, 4]
    assert host.writes == [("create", 3), ("create", 4)]
    assert replayed["isError"] is True
    assert "already been resumed" in replayed["content"][0]["text"]


async def test_another_principal_cannot_take_over_a_handed_off_run() -> None:
    async with two_replicas() as (host, stopping, taking_over), httpx2.AsyncClient(timeout=30) as http:
        state = (await call(http, stopping.url))["requestState"]
        body = raw.modern_call(TWO_WRITES, request_id=2, request_state=state)
        stolen = await raw.send(http, "POST", taking_over.url, sent=raw.modern_headers("token-bob"), body=body)
        assert refused_state(stolen), stolen.text
        finished = await call(http, taking_over.url, state=state)
    assert json.loads(finished["content"][0]["text"]) == [3, 4]
    assert host.writes == [("create", 3), ("create", 4)]


async def test_a_connection_run_is_never_handed_off_and_finishes_where_it_runs() -> None:
    replica: list[Served] = []
    host = handing_off_at_the_first_create(replica)
    async with served(host) as server:
        replica.append(server)
        async with server.client(mode="legacy") as client:
            result = await client.call_tool("execute", {"code": TWO_WRITES})
    assert json.loads(result.content[0].text) == [3, 4]  # type: ignore[union-attr]
    assert host.writes == [("create", 3), ("create", 4)]


async def test_a_forged_hand_off_state_is_refused_and_runs_nothing() -> None:
    replica: list[Served] = []
    host = handing_off_at_the_first_create(replica)
    async with served(host) as server, httpx2.AsyncClient(timeout=30) as http:
        replica.append(server)
        forged = json.dumps({"suspension": "susp-" + "0" * 32, "question": None})
        body = raw.modern_call(TWO_WRITES, request_id=2, request_state=forged)
        answer = await raw.send(http, "POST", server.url, sent=raw.modern_headers(), body=body)
    assert refused_state(answer), answer.text
    assert host.writes == []
