"""A 2026-07-28 client's own retries while a person decides on the approvals page.

The client is the official SDK's, over real HTTP on 127.0.0.1, with no elicitation callback:
nobody can be asked through it. Its call is answered with an input-required result carrying
only a sealed state; the SDK retries it by itself, and the server holds each retry a while
for the decision. The person decides through the page's own HTTP endpoints, served on the
same address. Either way in (the client's retry, the model's poll with the handle) the
paused program resumes exactly once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import mycelium.mcp._approvals
from mycelium import ExecutionOptions, MemorySuspensions, Suspensions
from mycelium.mcp import approvals_app
from mycelium.mcp._approvals import MAX_STATE_ROUNDS
from mycelium.suspensions import StoredSuspension
from tests.mcp.conftest import ALICE, BOB, TOKENS, Host, Served, served, text_of
from tests.mcp.test_approvals import ACCEPT
from tests.mcp.test_page_approvals import assert_resumed_once, handle_in
from tests.support.approver import Approver

from . import raw_http as raw

PROGRAM = "first = await notes.create(text='before')\ngone = await notes.delete(id=1)\nreturn [first['id'], gone]"
APPROVER = "approver-token-" + "r" * 32
MODERN = "2026-07-28"


class Watched(MemorySuspensions):
    """The memory store, saying when a run paused into it and when a retry first looked for its decision."""

    def __init__(self) -> None:
        super().__init__()
        self.paused = anyio.Event()
        self.looked = anyio.Event()

    async def put(self, suspension: StoredSuspension, *, max_per_session: int) -> None:
        await super().put(suspension, max_per_session=max_per_session)
        self.paused.set()

    async def get(self, suspension_id: str) -> StoredSuspension | None:
        if self.paused.is_set():
            self.looked.set()
        return await super().get(suspension_id)


@dataclass
class Page:
    """The server and its approvals page on one address, and the person at the page."""

    served: Served
    store: Watched
    person: Approver

    async def pending(self) -> str:
        """The one approval waiting, once the run has paused."""
        await self.store.paused.wait()
        [suspension_id] = await self.person.listed()
        return suspension_id


@asynccontextmanager
async def paged(host: Host, **options: Any) -> AsyncIterator[Page]:
    store = Watched()
    suspensions = Suspensions(store=store)
    page = approvals_app(suspensions, approver_token=APPROVER, agent_tokens=list(TOKENS))
    async with served(host, page_approvals=True, suspensions=suspensions, beside={"/approvals": page}, **options) as s:
        base = s.url.removesuffix("/mcp")
        async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
            person = Approver(http)
            signed_in = await person.sign_in(APPROVER)
            assert signed_in.status_code == 303, signed_in.text
            yield Page(s, store, person)


def granted() -> Host:
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    host.grant(BOB, notes="write", reports="read")
    return host


@asynccontextmanager
async def counted_client(s: Served, calls: list[bytes], **options: Any) -> AsyncIterator[Client]:
    """A 2026-07-28 SDK client without elicitation; the body of every tools/call it sends goes in ``calls``."""

    async def count(request: httpx2.Request) -> None:
        if b'"tools/call"' in request.content:
            calls.append(request.content)

    headers = {"Authorization": "Bearer token-alice"}
    async with httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"request": [count]}) as http:
        async with Client(streamable_http_client(s.url, http_client=http), mode=MODERN, **options) as client:
            yield client


async def test_a_client_that_cannot_be_asked_gets_a_state_only_input_required_result() -> None:
    host = granted()
    async with paged(host) as p, p.served.client(mode=MODERN) as client:
        first = await client.session.call_tool("execute", {"code": PROGRAM}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    assert not first.input_requests  # nothing for the client to answer: a person decides elsewhere
    assert first.request_state
    assert "susp-" not in first.request_state  # sealed and encrypted
    assert host.writes == [("create", 3)]


async def test_the_clients_own_retry_resumes_the_run_once_a_person_approves_on_the_page() -> None:
    host = granted()
    async with paged(host) as p, p.served.client(mode=MODERN) as client, anyio.create_task_group() as group:
        results: list[types.CallToolResult] = []

        async def call() -> None:
            results.append(await client.call_tool("execute", {"code": PROGRAM}))

        group.start_soon(call)
        suspension_id = await p.pending()
        await p.store.looked.wait()  # a retry of the client's waits for the decision now
        landed = await p.person.decide(suspension_id, approve=True)
    assert "Approved" in landed.text
    [result] = results
    assert json.loads(text_of(result)) == [3, True]
    assert host.writes == [("create", 3), ("delete", 1)]


async def test_a_decline_on_the_page_reaches_the_program_through_the_retry() -> None:
    host = granted()
    async with paged(host) as p, p.served.client(mode=MODERN) as client, anyio.create_task_group() as group:
        results: list[types.CallToolResult] = []

        async def call() -> None:
            results.append(await client.call_tool("execute", {"code": PROGRAM}))

        group.start_soon(call)
        await p.person.decide(await p.pending(), approve=False)
    refused = json.loads(text_of(results[0]))[1]
    assert refused["refused"] is True
    assert refused["reason"] == "confirmation-declined"
    assert host.writes == [("create", 3)]


async def test_the_retries_end_with_the_handle_before_the_clients_round_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # Retries that wait only briefly each, and a call that may wait long: the rounds run out first.
    monkeypatch.setattr(mycelium.mcp._approvals, "RETRY_WAIT_S", 0.05)
    host = granted()
    calls: list[bytes] = []
    async with paged(host, approval_wait_ms=600_000) as p:
        async with counted_client(p.served, calls, input_required_max_rounds=MAX_STATE_ROUNDS) as client:
            told = await client.call_tool("execute", {"code": PROGRAM})
            posted = len(calls)
            await p.person.decide(await p.pending(), approve=True)
            done = await client.call_tool("execute", {"approval": handle_in(text_of(told))})
    assert "Waiting for a person's approval" in text_of(told)
    assert posted == 1 + MAX_STATE_ROUNDS  # the call, then one retry per state-only answer
    assert json.loads(text_of(done)) == [3, True]
    assert host.writes == [("create", 3), ("delete", 1)]


async def test_a_retry_and_a_poll_with_the_handle_resume_the_run_exactly_once() -> None:
    host = granted()
    async with paged(host, approval_wait_ms=200) as p, p.served.client(mode=MODERN) as client:
        first = await client.session.call_tool("execute", {"code": PROGRAM}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        told = await client.call_tool("execute", {"code": PROGRAM}, request_state=first.request_state)
        handle = handle_in(text_of(told))
        await p.person.decide(await p.pending(), approve=True)
        answers: list[str] = []

        async def retry() -> None:  # a client that kept the first state and retries with it now
            retried = await client.call_tool("execute", {"code": PROGRAM}, request_state=first.request_state)
            answers.append(text_of(retried))

        async def poll() -> None:
            async with p.served.client(mode=MODERN) as other:
                answers.append(text_of(await other.call_tool("execute", {"approval": handle})))

        async with anyio.create_task_group() as group:
            group.start_soon(retry)
            group.start_soon(poll)
    assert_resumed_once(answers, host)


async def test_an_answer_the_client_sends_with_its_retry_approves_nothing() -> None:
    host = granted()
    async with paged(host, approval_wait_ms=200) as p, httpx2.AsyncClient(timeout=30) as http:
        sent = raw.modern_headers()
        first = await raw.send(http, "POST", p.served.url, sent=sent, body=raw.modern_call(PROGRAM, capabilities={}))
        state = first.result()["requestState"]
        body = raw.modern_call(PROGRAM, request_id=2, request_state=state, input_responses=ACCEPT, capabilities={})
        retried = await raw.send(http, "POST", p.served.url, sent=sent, body=body)
        still = await p.person.listed()
    assert "Waiting for a person's approval" in retried.result()["content"][0]["text"]
    assert len(still) == 1
    assert host.writes == [("create", 3)]


async def test_a_draining_server_answers_a_retry_with_the_handle_at_once() -> None:
    host = granted()
    async with paged(host) as p, p.served.client(mode=MODERN) as client:
        first = await client.session.call_tool("execute", {"code": PROGRAM}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        p.served.server.drain()
        with anyio.fail_after(mycelium.mcp._approvals.RETRY_WAIT_S):
            told = await client.call_tool("execute", {"code": PROGRAM}, request_state=first.request_state)
    assert "Waiting for a person's approval" in text_of(told)
    assert '{"approval": "approval-v1.' in text_of(told)


async def test_a_retry_waiting_for_the_person_holds_no_sandbox_slot() -> None:
    host = granted()
    one_slot = ExecutionOptions(sandbox_capacity=1, admission_wait_ms=2_000)
    async with paged(host, execution=one_slot) as p, anyio.create_task_group() as group:
        results: list[types.CallToolResult] = []

        async def alice() -> None:
            async with p.served.client(mode=MODERN) as client:
                results.append(await client.call_tool("execute", {"code": PROGRAM}))

        group.start_soon(alice)
        suspension_id = await p.pending()
        await p.store.looked.wait()
        # The only slot is free while Alice's retry waits: Bob's programs run at once.
        async with p.served.client("token-bob", mode=MODERN) as client:
            for _ in range(3):
                bob = await client.call_tool("execute", {"code": "return (await notes.create(text='bob'))['id']"})
                assert bob.is_error is False, text_of(bob)
        assert results == []
        await p.person.decide(suspension_id, approve=True)
    assert json.loads(text_of(results[0]))[1] is True
    assert ("delete", 1) in host.writes
