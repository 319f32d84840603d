"""A client that closes its connection mid-request: its run stops, and nothing waits for it.

Nothing can take the answer of a request whose client left: 2026-07-28 calls that closing
a cancellation, and this server keeps no event stream a 2025 client could resume. Each
test's client is an HTTP client of its own, so leaving closes its TCP connection and the
server sees exactly that, with no DELETE and no cancellation notice.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import anyio
import httpx2
import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mycelium import ExecutionOptions, MemorySuspensions, Suspensions
from mycelium.mcp import McpAuthority, Principal
from mycelium.suspensions import StoredSuspension

from . import raw_http as raw
from .conftest import ALICE, Host, Served, served

REVISIONS = ("2025-11-25", "2026-07-28")
FAR_DEADLINE = ExecutionOptions(timeout_ms=120_000)
"""Far beyond each test's own bound: a run that ends in time was stopped, not timed out."""


def granted() -> Host:
    host = Host()
    host.grant(ALICE, notes="write")
    return host


async def call_and_leave(s: Served, revision: str, code: str, when: anyio.Event) -> None:
    """Call ``execute`` with ``code`` over ``revision`` and close the connection once ``when`` is set."""
    async with httpx2.AsyncClient(timeout=30) as http:
        if revision == raw.MODERN:
            sent, body = raw.modern_headers(), raw.modern_call(code)
        else:
            session = await raw.open_session(http, s.url)
            sent, body = raw.headers(session=session), raw.call_execute(code)
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: raw.send(http, "POST", s.url, sent=sent, body=body))
            await when.wait()
            group.cancel_scope.cancel()


async def closed_with_nothing_held(s: Served) -> None:
    """Close the catalog, which waits for every lease: it returns in time only if each run has ended."""
    with anyio.fail_after(raw.ANSWER_WITHIN_S):
        await s.catalog.aclose()
    assert s.catalog.sandbox.in_flight == 0


@pytest.mark.parametrize("revision", REVISIONS)
async def test_a_call_in_flight_when_its_client_leaves_is_cancelled_and_never_completes(revision: str) -> None:
    host = granted()
    started, cancelled = anyio.Event(), anyio.Event()

    async def hold() -> None:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    host.on_create = hold
    async with served(host, execution=FAR_DEADLINE) as s:
        await call_and_leave(s, revision, "return await notes.create(text='x')", started)
        with anyio.fail_after(raw.ANSWER_WITHIN_S):
            await cancelled.wait()
        await closed_with_nothing_held(s)
    assert host.writes == []


@pytest.mark.parametrize("revision", REVISIONS)
async def test_a_program_that_never_ends_is_stopped_when_its_client_leaves(revision: str) -> None:
    host = granted()
    spinning = anyio.Event()

    async def about_to_spin() -> None:
        spinning.set()

    host.on_create = about_to_spin
    async with served(host, execution=FAR_DEADLINE) as s:
        await call_and_leave(s, revision, "await notes.create(text='x')\nwhile True:\n    pass", spinning)
        await closed_with_nothing_held(s)


async def test_a_run_paused_for_a_question_its_client_left_unanswered_is_dropped_not_kept() -> None:
    """Over a 2025 connection the question travels on the call's own stream: once that closes, nobody can answer."""
    host = granted()
    store = Claims()
    async with served(host, suspensions=Suspensions(store=store)) as s, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION)
        # Declined, the program would go on to its write: dropped, it never does.
        code = "await notes.delete(id=1)\nreturn await notes.create(text='after')"
        body = json.dumps(raw.call_execute(code)).encode()
        async with http.stream("POST", s.url, headers=raw.headers(session=session), content=body) as response:
            async for line in response.aiter_lines():
                if "elicitation/create" in line:
                    break
        await http.aclose()  # leaves while asked
        with anyio.fail_after(raw.ANSWER_WITHIN_S):
            await store.claimed.wait()
        assert await s.catalog.suspensions.undecided(10) == []  # type: ignore[union-attr]
    assert host.writes == []


async def test_a_run_whose_client_leaves_after_approving_and_before_its_resume_is_dropped_not_kept() -> None:
    """The approval re-reads the principal's grants before the run resumes; a client gone by then takes nothing."""
    host = HeldLoads()
    host.grant(ALICE, notes="write")
    store = Claims()
    call_left = anyio.Event()
    suspensions = Suspensions(store=store)
    async with served(host, suspensions=suspensions, wrap=noting_calls_left(call_left)) as s:
        async with httpx2.AsyncClient(timeout=30) as http:
            session = await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION)
        code = "await notes.delete(id=1)\nreturn await notes.create(text='after')"
        body = json.dumps(raw.call_execute(code)).encode()
        async with httpx2.AsyncClient(timeout=30) as leaving:
            async with leaving.stream("POST", s.url, headers=raw.headers(session=session), content=body) as response:
                lines = response.aiter_lines()  # held: a loop ending the iterator would close the connection
                async for line in lines:
                    if "elicitation/create" in line:
                        asked = json.loads(line.removeprefix("data:"))
                        break
                host.hold()
                accept = {
                    "jsonrpc": "2.0",
                    "id": asked["id"],
                    "result": {"action": "accept", "content": {"approve": True}},
                }
                async with httpx2.AsyncClient(timeout=30) as http:
                    replied = await raw.send(http, "POST", s.url, sent=raw.headers(session=session), body=accept)
                assert replied.status == 202, replied.text
                with anyio.fail_after(raw.ANSWER_WITHIN_S):
                    await host.loading.wait()  # approved: the server re-reads the grants
        with anyio.fail_after(raw.ANSWER_WITHIN_S):
            await call_left.wait()
        host.release.set()
        with anyio.fail_after(raw.ANSWER_WITHIN_S):
            await store.claimed.wait()
        assert await suspensions.undecided(10) == []
    assert host.writes == []


async def test_a_run_paused_for_a_question_whose_call_the_client_cancels_is_dropped_not_kept() -> None:
    host = granted()
    store = Claims()
    asked = anyio.Event()

    async def never_answer(context: object, params: object) -> object:
        asked.set()
        await anyio.sleep_forever()

    async with served(host, suspensions=Suspensions(store=store)) as s:
        async with s.client(elicitation=never_answer) as client, anyio.create_task_group() as group:
            code = "await notes.delete(id=1)\nreturn await notes.create(text='after')"
            group.start_soon(client.call_tool, "execute", {"code": code})
            await asked.wait()
            group.cancel_scope.cancel()  # the SDK client sends notifications/cancelled for its call
        with anyio.fail_after(raw.ANSWER_WITHIN_S):
            await store.claimed.wait()
        assert await s.catalog.suspensions.undecided(10) == []  # type: ignore[union-attr]
    assert host.writes == []


class HeldLoads(Host):
    """A host whose reading of the grants can be held, once :meth:`hold` is called."""

    def __init__(self) -> None:
        super().__init__()
        self.held = False
        self.loading, self.release = anyio.Event(), anyio.Event()

    def hold(self) -> None:
        self.held = True

    def load(self, principal: Principal) -> McpAuthority | Awaitable[McpAuthority]:
        authority = super().load(principal)
        if not self.held:
            return authority

        async def held() -> McpAuthority:
            self.loading.set()
            await self.release.wait()
            return authority

        return held()


def noting_calls_left(left: anyio.Event) -> Callable[[ASGIApp], ASGIApp]:
    """An ASGI app in front of the server's that sets ``left`` when a ``tools/call`` request's client disconnects."""

    def wrap(app: ASGIApp) -> ASGIApp:
        async def noting(scope: Scope, receive: Receive, send: Send) -> None:
            calls = False

            async def noted() -> Message:
                nonlocal calls
                message = await receive()
                calls = calls or b'"tools/call"' in message.get("body", b"")
                if message["type"] == "http.disconnect" and calls:
                    left.set()
                return message

            await app(scope, noted, send)

        return noting

    return wrap


class Claims(MemorySuspensions):
    """The memory store, saying when a paused run was claimed: resumed or dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.claimed = anyio.Event()

    async def claim(self, suspension_id: str, *, now: float, tombstone: bytes) -> StoredSuspension | None:
        claimed = await super().claim(suspension_id, now=now, tombstone=tombstone)
        self.claimed.set()
        return claimed
