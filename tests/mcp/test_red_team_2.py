"""Red-team findings, second pass: the server's own request handling around the SDK.

Each test names the rule an attacker broke, over real loopback HTTP. A test in this file
fails for as long as the break it records is open.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest

from . import raw_http as raw
from .conftest import ALICE, BOB, Host, served

# The breaks below overwrite a request's stream in the SDK's table; the orphaned stream is only
# reported by the garbage collector. The assertions say what broke; this keeps that report out.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Exception ignored.*MemoryObjectSendStream:pytest.PytestUnraisableExceptionWarning"
)


def granted() -> Host:
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    return host


def gated(host: Host) -> tuple[list[anyio.Event], list[anyio.Event]]:
    """Make the n-th ``notes.create`` wait on its own gate: (started[n], release[n]) for n in 0, 1."""
    started = [anyio.Event(), anyio.Event()]
    release = [anyio.Event(), anyio.Event()]
    calls = 0

    async def hold() -> None:
        nonlocal calls
        n, calls = calls, calls + 1
        started[n].set()
        await release[n].wait()

    host.on_create = hold
    return started, release


def replies(answer: raw.Answer) -> list[dict[str, Any]]:
    return [m for m in answer.messages() if isinstance(m, dict) and ("result" in m or "error" in m)]


# -- one answer per request, and the right one ------------------------------------------------


async def test_two_requests_in_flight_whose_ids_are_1_and_string_1_each_get_their_own_answer() -> None:
    """The SDK files answers under ``str(id)``: 1 and "1" are one slot, so both must not be in flight."""
    host = granted()
    started, release = gated(host)
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, s.url)
        sent = raw.headers(session=session)
        first: list[raw.Answer | None] = []

        async def numeric() -> None:
            body = raw.call_execute("return (await notes.create(text='from id 1'))['text']", 1)
            try:
                first.append(await raw.send(http, "POST", s.url, sent=sent, body=body))
            except TimeoutError:
                first.append(None)

        async with anyio.create_task_group() as group:
            group.start_soon(numeric)
            await started[0].wait()
            second = await raw.send(
                http, "POST", s.url, sent=sent, body=raw.call_execute("return 'from id \"1\"'", "1")
            )
            # Either refused as a reused id, or answered with its own result.
            if second.status == 200:
                [reply] = replies(second)
                assert reply["id"] == "1", second.text
                assert reply["result"]["content"][0]["text"] == json.dumps('from id "1"'), second.text
            else:
                assert second.status == 409, (second.status, second.text)
            release[0].set()
        [answer] = first
        assert answer is not None, "the request with id 1 never got an answer: it was filed under the other's slot"
        assert [r["id"] for r in replies(answer)] == [1], answer.text
        assert "from id 1" in answer.text


async def test_an_id_whose_client_left_is_never_reused_so_no_request_gets_another_runs_answer() -> None:
    """A client that drops its POST leaves a handler that answers under that id whenever it ends: the id stays taken."""
    host = granted()
    started, release = gated(host)
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, s.url)
        sent = raw.headers(session=session)
        first_done = anyio.Event()
        execute = s.catalog.execute

        async def noting_the_first_run_done(call: Any, context: Any) -> Any:
            try:
                return await execute(call, context)
            finally:
                if "the first run" in call.arguments["code"]:
                    first_done.set()

        s.catalog.execute = noting_the_first_run_done  # type: ignore[method-assign]

        async with anyio.create_task_group() as group:

            async def walk_away() -> None:
                # Its own HTTP client, so leaving closes the TCP connection and the server sees it.
                async with httpx2.AsyncClient(timeout=30) as leaving:
                    body = raw.call_execute("return (await notes.create(text='the first run'))['text']", 5)
                    with anyio.CancelScope() as scope:
                        group.start_soon(_cancel_when, started[0], scope)
                        await raw.send(leaving, "POST", s.url, sent=sent, body=body)

            group.start_soon(walk_away)
            await started[0].wait()

        reused = raw.call_execute("return (await notes.create(text='the second run'))['text']", 5)
        assert (await raw.send(http, "POST", s.url, sent=sent, body=reused)).status == 409
        release[0].set()  # the first run, stopped as its client left, answers id 5 into the void
        with anyio.fail_after(raw.ANSWER_WITHIN_S):
            await first_done.wait()
        assert (await raw.send(http, "POST", s.url, sent=sent, body=reused)).status == 409
        release[1].set()
        fresh = raw.call_execute("return (await notes.create(text='the second run'))['text']", 6)
        answer = await raw.send(http, "POST", s.url, sent=sent, body=fresh)
        assert answer.status == 200, (answer.status, answer.text)
        assert "the second run" in answer.text
        assert "the first run" not in answer.text


async def _cancel_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


# -- one principal cannot lock the others out ------------------------------------------------


async def test_one_principal_leaving_confirmations_unanswered_cannot_lock_other_principals_out() -> None:
    """A confirmation nobody answers keeps its run, and so its connection, busy for as long as the stream is open."""
    host = granted()
    host.grant(BOB, notes="read")
    async with served(host, max_connections=2) as s, httpx2.AsyncClient(timeout=30) as http:
        # Alice opens two; her share of the two held connections is one, so her first is replaced.
        sessions = [await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION) for _ in range(2)][1:]
        asked = [anyio.Event() for _ in sessions]
        done = anyio.Event()

        async def ask_and_never_answer(n: int) -> None:
            body = json.dumps(raw.call_execute("return await notes.delete(id=1)", 10 + n)).encode()
            sent = raw.headers(session=sessions[n])
            async with http.stream("POST", s.url, headers=sent, content=body) as response:
                async for line in response.aiter_lines():
                    if "elicitation/create" in line:
                        asked[n].set()
                        await done.wait()  # the stream stays open; the question is never answered
                        return

        async with anyio.create_task_group() as group:
            for n in range(len(sessions)):
                group.start_soon(ask_and_never_answer, n)
            with anyio.fail_after(raw.ANSWER_WITHIN_S):
                for event in asked:
                    await event.wait()
            opened = await raw.send(
                http, "POST", s.url, sent=raw.headers("token-bob", version=None), body=raw.initialize(1)
            )
            done.set()
        assert opened.status == 200, f"another principal could not open a connection: {opened.status} {opened.text}"
