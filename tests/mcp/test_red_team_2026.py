"""Red-team pass over protocol revision 2026-07-28: requestState, paused approvals, eras on one endpoint.

Every request here is an attacker's, sent by hand over real loopback HTTP (see ``raw_http``).
Each test is named after the rule it checks. A test marked ``xfail(strict=True)`` records a
break that is still open (its reason names the finding); it starts failing the suite, as
XPASS, the day the break is fixed, so the mark must then be removed.
"""

from __future__ import annotations

import functools
import json
import time
from typing import Any, ClassVar

import anyio
import httpx2
import mcp_types as types
import pytest

from mycelium import ExecutionOptions, Module
from mycelium.mcp._principals import principal_session
from mycelium.suspensions import MemorySuspensions, StoredSuspension, Suspensions

from . import raw_http as raw
from .conftest import ALICE, BOB, Host, served, text_of

ACCEPT = {"approval": {"action": "accept", "content": {"approve": True}}}
DECLINE = {"approval": {"action": "decline"}}
CONFIRMED = "first = await notes.create(text='before')\ngone = await notes.delete(id=1)\nreturn [first['id'], gone]"
DELETE_ONE = "return await notes.delete(id=1)"


def granted() -> Host:
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    host.grant(BOB, notes="write", reports="read")
    return host


async def call(
    http: httpx2.AsyncClient,
    url: str,
    code: str,
    *,
    request_id: int | str = 1,
    token: str = "token-alice",
    state: str | None = None,
    responses: dict[str, Any] | None = None,
    **extra_headers: str,
) -> raw.Answer:
    """One 2026-07-28 ``tools/call`` of ``execute``, with a requestState and answers when given."""
    body = raw.modern_call(code, request_id=request_id, request_state=state, input_responses=responses)
    return await raw.send(http, "POST", url, sent=raw.modern_headers(token, **extra_headers), body=body)


async def pause(http: httpx2.AsyncClient, url: str, code: str = CONFIRMED, **options: Any) -> str:
    """Run ``code`` until its confirmation; the sealed requestState of the input-required result."""
    answer = await call(http, url, code, **options)
    assert answer.status == 200, answer.text
    result = answer.result()
    assert result["resultType"] == "input_required", result
    return str(result["requestState"])


def tool_text(answer: raw.Answer) -> str:
    result = answer.result()
    assert result.get("resultType", "complete") == "complete", result
    return "\n".join(block["text"] for block in result["content"] if block.get("type") == "text")


def error_code(answer: raw.Answer) -> int | None:
    [message] = [m for m in answer.messages() if isinstance(m, dict) and ("result" in m or "error" in m)]
    return message["error"]["code"] if "error" in message else None


# -- finding 1: the Mcp-Session-Id header of a 2026-07-28 request picks the run's session ----------
#
# ``_caller`` reads ``Mcp-Session-Id`` for every request and ``_session`` files a 2026-07-28 run
# under it (``context.connection_id or principal_session(...)``) without checking whose it is.
# The principal's own session, ``principal-<sha256(principal_key)>``, is computable by anyone who
# knows the principal's id, which the docs call safe to log.


async def test_another_principals_paused_run_can_never_be_resumed_or_read_by_naming_its_session() -> None:
    host = Host(notes={i: f"note {i}" for i in range(1, 4243)})  # Bob's program reads a count: 4242
    host.grant(ALICE, notes="write", reports="none")  # Alice may not read reports
    host.grant(BOB, notes="write", reports="read")
    bobs = "c = await apps.reports.count()\ngone = await notes.delete(id=1)\nreturn [c, gone]"
    seen_by_alice: list[str] = []
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        bob_state = await pause(http, s.url, bobs, token="token-bob")  # Bob's pause, request id 1
        # Alice names Bob's principal session in the header and sends Bob's call (same id, same program).
        bob_session = principal_session(BOB)
        first = await call(http, s.url, bobs, mcp_session_id=bob_session)
        seen_by_alice.append(first.text)
        if first.status == 200 and first.result().get("resultType") == "input_required":
            hijack = await call(
                http,
                s.url,
                bobs,
                request_id=2,
                state=first.result()["requestState"],
                responses=ACCEPT,
                mcp_session_id=bob_session,
            )
            seen_by_alice.append(hijack.text)
        # Bob's own approval must still resume Bob's own run.
        bobs_retry = await call(http, s.url, bobs, request_id=2, token="token-bob", state=bob_state, responses=ACCEPT)
    assert not any("4242" in text for text in seen_by_alice), seen_by_alice  # Bob's read never reaches Alice
    count, _ = json.loads(tool_text(bobs_retry))
    assert count == 4242


async def test_one_principal_cannot_fill_another_principals_pending_approvals() -> None:
    host = granted()
    quota = Suspensions(max_per_session=3)
    async with served(host, suspensions=quota) as s, httpx2.AsyncClient(timeout=30) as http:
        for n in range(3):  # Alice's pauses, filed under Bob's principal session
            await call(http, s.url, DELETE_ONE, request_id=100 + n, mcp_session_id=principal_session(BOB))
        bobs = await call(http, s.url, DELETE_ONE, token="token-bob")
    assert bobs.status == 200
    assert bobs.result()["resultType"] == "input_required", bobs.text  # not confirmation-unavailable


async def test_one_principals_pending_approvals_are_bounded_whatever_headers_it_sends() -> None:
    host = granted()
    quota = Suspensions(max_per_session=3)
    kinds: list[str] = []
    async with served(host, suspensions=quota) as s, httpx2.AsyncClient(timeout=30) as http:
        for n in range(8):
            answer = await call(http, s.url, DELETE_ONE, request_id=n, mcp_session_id=f"made-up-{n}")
            kinds.append(answer.result()["resultType"] if answer.status == 200 else str(answer.status))
    assert kinds.count("input_required") <= 3, kinds


async def test_one_principals_pending_approvals_are_bounded_per_principal() -> None:
    """Without the header trick the bound holds: the run past it is refused, never stored."""
    host = granted()
    quota = Suspensions(max_per_session=3)
    async with served(host, suspensions=quota) as s, httpx2.AsyncClient(timeout=30) as http:
        for n in range(3):
            await pause(http, s.url, DELETE_ONE, request_id=n)
        past = await call(http, s.url, DELETE_ONE, request_id=99)
    refusal = json.loads(tool_text(past))
    assert refusal["reason"] == "confirmation-unavailable"
    assert host.writes == []


# -- finding 2: a 2026-07-28 request id is taken for a replay of an earlier call ------------------
#
# The catalog hands the runtime ``ToolCall(id=str(ctx.request_id))``, and the runtime treats a call
# whose (session, tool call id, code) matches a pause or tombstone as a framework's replay. Over
# 2026-07-28 the session is the principal's for all its clients and every client numbers its
# requests from the start: a new call is taken for an old one.


async def test_a_new_client_running_a_program_an_earlier_client_ran_is_asked_again_not_refused() -> None:
    host = granted()

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": True})

    results = []
    async with served(host) as s:
        for _ in range(2):  # e.g. the agent restarted: its SDK client numbers requests from the start again
            host.notes[1] = "recreated"
            async with s.client(elicitation=person, mode=raw.MODERN) as client:
                results.append(await client.call_tool("execute", {"code": "return await notes.delete(id=1)"}))
    assert [text_of(result) for result in results] == ["true", "true"]
    assert host.writes == [("delete", 1), ("delete", 1)]


async def test_a_new_call_reusing_a_pending_calls_request_id_runs_its_own_program() -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        await pause(http, s.url, CONFIRMED, request_id=1)  # creates note 3, then waits
        second = await call(http, s.url, CONFIRMED, request_id=1)  # a new call: it must create its own note
    assert second.result()["resultType"] == "input_required"
    assert host.writes == [("create", 3), ("create", 4)]


# -- finding 3: what a principal leaves in the suspension store ----------------------------------


def _padded(n: int) -> str:
    return "# " + "p" * 60_000 + f"\nreturn await notes.delete(id={n})"


async def test_pause_and_decline_cycles_do_not_grow_the_store_without_bound() -> None:
    host = granted()

    class Measured(MemorySuspensions):
        """Keeps the size of every record the store holds, by id, as it changes."""

        held: ClassVar[dict[str, int]] = {}

        async def put(self, suspension: StoredSuspension, *, max_per_session: int) -> None:
            await super().put(suspension, max_per_session=max_per_session)
            self.held[suspension.id] = len(suspension.record)

        async def claim(self, suspension_id: str, *, now: float, tombstone: bytes) -> StoredSuspension | None:
            claimed = await super().claim(suspension_id, now=now, tombstone=tombstone)
            if claimed is not None:
                self.held[suspension_id] = len(tombstone)
            return claimed

    store = Measured()
    cycles, max_per_session = 40, 5
    async with served(host, suspensions=Suspensions(store=store, max_per_session=max_per_session)) as s:
        async with httpx2.AsyncClient(timeout=30) as http:
            for n in range(cycles):  # never more than one pending at a time: the quota never bites
                state = await pause(http, s.url, _padded(n), request_id=n)
                declined = await call(http, s.url, _padded(n), request_id=10_000 + n, state=state, responses=DECLINE)
                assert "confirmation-declined" in tool_text(declined)
    assert len(store.held) == cycles
    # Bounded by the pending quota's worth of programs plus a small tombstone per finished approval.
    budget = max_per_session * 64 * 1024 + cycles * 1024
    assert sum(store.held.values()) <= budget, store.held


async def test_expired_paused_runs_are_purged_not_kept_in_the_store() -> None:
    host = granted()

    class Watched(MemorySuspensions):
        """Says when the catalog has purged, so the test waits on that, not on a clock."""

        purged = anyio.Event()

        async def purge_expired(self, *, now: float) -> int:
            removed = await super().purge_expired(now=now)
            self.purged.set()
            return removed

    store = Watched()
    expiring = Suspensions(store=store, max_per_session=3, expires_after_ms=1)  # each expires at once
    big = "big = 'x' * 500_000\n"
    async with served(host, suspensions=expiring) as s, httpx2.AsyncClient(timeout=30) as http:
        for n in range(30):  # an expired pause no longer counts against the quota, so each is stored
            await pause(http, s.url, big + f"return await notes.delete(id={n})", request_id=n)
        with anyio.fail_after(30):
            await store.purged.wait()  # the catalog purges on its own, at least once a second here
        left = await store.purge_expired(now=time.time())  # what the server left for someone else to remove
    assert left <= 3, f"{left} expired paused runs (about 500 KB each) still held"


# -- finding 4: a retry without an answer is asked again about a run that no longer waits -------


async def test_a_retry_without_an_answer_is_asked_again_only_while_its_run_still_waits() -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        state = await pause(http, s.url)
        done = await call(http, s.url, CONFIRMED, request_id=2, state=state, responses=ACCEPT)
        assert json.loads(tool_text(done)) == [3, True]
        stale = await call(http, s.url, CONFIRMED, request_id=3, state=state)  # no inputResponses
    # The person must not be asked to approve a call whose run already went on.
    assert stale.status != 200 or stale.result().get("resultType") != "input_required", stale.text


# -- requestState: what held ---------------------------------------------------------------------


async def test_a_first_pauses_state_replayed_after_the_run_paused_again_runs_nothing() -> None:
    host = granted()
    code = "a = await notes.delete(id=1)\nb = await notes.delete(id=2)\nreturn [a, b]"
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        first = await pause(http, s.url, code)
        second_pause = await call(http, s.url, code, request_id=2, state=first, responses=ACCEPT)
        second = second_pause.result()
        assert second["resultType"] == "input_required"
        replayed = await call(http, s.url, code, request_id=3, state=first, responses=ACCEPT)
        assert "cannot continue" in tool_text(replayed)
        assert host.writes == [("delete", 1)]  # the replay approved nothing of the second pause
        done = await call(http, s.url, code, request_id=4, state=second["requestState"], responses=ACCEPT)
    assert json.loads(tool_text(done)) == [True, True]
    assert host.writes == [("delete", 1), ("delete", 2)]


async def test_a_declined_run_replayed_with_an_accept_runs_nothing() -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        state = await pause(http, s.url)
        declined = await call(http, s.url, CONFIRMED, request_id=2, state=state, responses=DECLINE)
        assert "confirmation-declined" in tool_text(declined)
        accepted = await call(http, s.url, CONFIRMED, request_id=3, state=state, responses=ACCEPT)
    assert "cannot continue" in tool_text(accepted)
    assert accepted.result()["isError"] is True
    assert host.writes == [("create", 3)]


async def test_the_same_retry_sent_many_times_at_once_resumes_once_and_writes_once() -> None:
    host = granted()
    answers: list[raw.Answer] = []
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        state = await pause(http, s.url)

        async def retry(n: int) -> None:
            responses = ACCEPT if n % 3 else DECLINE  # accepts and declines race each other too
            answers.append(await call(http, s.url, CONFIRMED, request_id=10 + n, state=state, responses=responses))

        async with anyio.create_task_group() as group:
            for n in range(12):
                group.start_soon(retry, n)
    assert all(answer.status == 200 for answer in answers)
    texts = [tool_text(answer) for answer in answers]
    went_on = [text for text in texts if text.startswith("[3,")]
    assert len(went_on) == 1, texts  # exactly one resumed; every other one ran nothing
    assert all("cannot continue" in text for text in texts if not text.startswith("[3,"))
    assert host.writes in ([("create", 3)], [("create", 3), ("delete", 1)])


async def test_a_principal_named_in_meta_is_ignored_only_the_credential_counts() -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        state = await pause(http, s.url)  # Alice's
        body = raw.modern_call(CONFIRMED, request_id=2, request_state=state, input_responses=ACCEPT)
        body["params"]["_meta"].update(
            {
                "principal": ["member", "alice", "owner"],
                "io.modelcontextprotocol/principal": "alice",
                "authorization": "Bearer token-alice",
                "user": {"member_id": "alice", "role": "owner"},
            }
        )
        as_bob = await raw.send(http, "POST", s.url, sent=raw.modern_headers("token-bob"), body=body)
        assert error_code(as_bob) == types.INVALID_PARAMS
        assert host.writes == [("create", 3)]
        own = await call(http, s.url, CONFIRMED, request_id=3, state=state, responses=ACCEPT)
    assert json.loads(tool_text(own)) == [3, True]


@pytest.mark.parametrize("where", ["other-tool", "prompts-get", "resources-read"])
async def test_a_state_moved_to_another_tool_or_method_is_refused_and_runs_nothing(where: str) -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        state = await pause(http, s.url)
        body = raw.modern_call(CONFIRMED, request_id=2, request_state=state, input_responses=ACCEPT)
        method, name = {
            "other-tool": ("tools/call", "execute2"),
            "prompts-get": ("prompts/get", "execute"),
            "resources-read": ("resources/read", "execute"),
        }[where]
        body["method"] = method
        body["params"]["name"] = name
        if where == "resources-read":
            body["params"]["uri"] = "execute"
        sent = raw.headers(version=raw.MODERN, mcp_method=method, mcp_name=name)
        moved = await raw.send(http, "POST", s.url, sent=sent, body=body)
        assert 400 <= moved.status < 500, moved.text
        assert error_code(moved) is not None
        own = await call(http, s.url, CONFIRMED, request_id=3, state=state, responses=ACCEPT)
    assert json.loads(tool_text(own)) == [3, True]


NOT_AN_ELICIT_RESULT: dict[str, Any] = {
    "sampling-result": {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"},
    "roots-result": {"roots": []},
    "list": [ACCEPT["approval"]],
    "null": None,
    "string": "accept",
    "nested-content": {"action": "accept", "content": {"approve": {"a": {"b": {"c": True}}}}},
    "huge-content": {"action": "accept", "content": {"approve": "y" * 200_000}},
    "truthy-not-true": {"action": "accept", "content": {"approve": 1}},
    "upper-case-action": {"action": "ACCEPT"},
    "extra-fields": {"action": "accept", "content": {"approve": False}, "approve": True},
}


@pytest.mark.parametrize("shape", sorted(NOT_AN_ELICIT_RESULT))
async def test_an_answer_that_is_not_an_accepted_elicit_result_never_approves_and_never_500s(shape: str) -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        state = await pause(http, s.url)
        answer = await call(
            http, s.url, CONFIRMED, request_id=2, state=state, responses={"approval": NOT_AN_ELICIT_RESULT[shape]}
        )
    assert answer.status < 500
    assert host.writes == [("create", 3)]
    if answer.status == 200:
        assert "[3, true]" not in answer.text.lower()


async def test_answers_under_keys_other_than_approval_are_refused_and_run_nothing() -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        state = await pause(http, s.url)
        others = {"Approval": ACCEPT["approval"], "approval ": ACCEPT["approval"], "other": ACCEPT["approval"]}
        again = await call(http, s.url, CONFIRMED, request_id=2, state=state, responses=others)
        [message] = again.messages()
        assert message["error"]["code"] == types.INVALID_PARAMS
        resumed = await call(http, s.url, CONFIRMED, request_id=3, state=state, responses=ACCEPT)
    assert json.loads(tool_text(resumed)) == [3, True]  # the run still waited
    assert host.writes == [("create", 3), ("delete", 1)]


async def test_an_answer_sent_with_the_first_call_approves_nothing() -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        first = await call(http, s.url, CONFIRMED, responses=ACCEPT)
    assert first.result()["resultType"] == "input_required"
    assert host.writes == [("create", 3)]


async def _until_asked(http: httpx2.AsyncClient, url: str, sent: dict[str, str], body: Any) -> list[Any]:
    """POST ``body`` and read its event stream until the server asks the client something; its messages."""
    seen: list[Any] = []
    with anyio.fail_after(raw.ANSWER_WITHIN_S):
        async with http.stream("POST", url, headers=sent, content=json.dumps(body).encode()) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("data:") and line[5:].strip():
                    message = json.loads(line[5:])
                    seen.append(message)
                    if message.get("method") == "elicitation/create" or "result" in message or "error" in message:
                        break
    return seen


async def test_a_modern_state_presented_on_a_connection_is_not_taken_for_an_answer() -> None:
    """Over 2025-11-25 the server asks the person itself: a state and an accept in the call approve nothing."""
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        state = await pause(http, s.url)  # Alice's 2026-07-28 pause: note 3 created, delete waiting
        session = await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION)
        body = raw.call_execute(CONFIRMED, 5)
        body["params"]["requestState"] = state
        body["params"]["inputResponses"] = ACCEPT
        seen = await _until_asked(http, s.url, raw.headers(session=session), body)
        assert seen[-1].get("method") == "elicitation/create", seen  # the person is asked, not bypassed
        assert ("delete", 1) not in host.writes
        await raw.send(http, "DELETE", s.url, sent=raw.headers(session=session))
        # The modern pause is untouched: its own retry resumes it.
        own = await call(http, s.url, CONFIRMED, request_id=3, state=state, responses=ACCEPT)
    assert json.loads(tool_text(own)) == [3, True]


# -- eras on one endpoint --------------------------------------------------------------------------


def _meta() -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": raw.MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def _bare(method: str, *, modern: bool, request_id: int | None = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if modern:
        message["params"] = {"_meta": _meta()}
    return message


MIXED_ERAS = [
    "handshake-version-without-initialize",
    "initialize-under-the-modern-version",
    "discover-under-a-handshake-version",
    "discover-on-a-connection",
    "ping-under-the-modern-version",
    "notification-under-the-modern-version",
    "modern-meta-under-a-handshake-header",
    "handshake-meta-under-the-modern-header",
    "modern-body-without-a-version-header",
    "batch-under-the-modern-version",
    "posted-reply-under-the-modern-version",
    "get-under-the-modern-version",
    "delete-of-a-connection-under-the-modern-version",
    "duplicate-version-headers",
]


@pytest.mark.parametrize("case", MIXED_ERAS)
async def test_requests_mixing_eras_get_a_4xx_or_their_answer_never_a_500_nor_a_session(case: str) -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION)
        method = "POST"
        sent = raw.headers()
        body: Any
        match case:
            case "handshake-version-without-initialize":
                body = raw.call_execute("return 1")
            case "initialize-under-the-modern-version":
                body = raw.initialize(1)
                body["params"]["_meta"] = _meta()
                sent = raw.headers(version=raw.MODERN, mcp_method="initialize")
            case "discover-under-a-handshake-version":
                body = _bare("server/discover", modern=False)
            case "discover-on-a-connection":
                body = _bare("server/discover", modern=False)
                sent = raw.headers(session=session)
            case "ping-under-the-modern-version":
                body = _bare("ping", modern=True)
                sent = raw.headers(version=raw.MODERN, mcp_method="ping")
            case "notification-under-the-modern-version":
                body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
                sent = raw.headers(version=raw.MODERN, mcp_method="notifications/cancelled")
            case "modern-meta-under-a-handshake-header":
                body = raw.modern_call("return 1")
                sent = raw.headers(session=session)
            case "handshake-meta-under-the-modern-header":
                body = raw.modern_call("return 1")
                body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = raw.PROTOCOL_VERSION
                sent = raw.modern_headers()
            case "modern-body-without-a-version-header":
                body = raw.modern_call("return 1")
                sent = raw.headers(version=None, mcp_method="tools/call", mcp_name="execute")
            case "batch-under-the-modern-version":
                body = [raw.modern_call("return 1"), raw.modern_call("return 2", request_id=2)]
                sent = raw.modern_headers()
            case "posted-reply-under-the-modern-version":
                body = {"jsonrpc": "2.0", "id": 0, "result": ACCEPT["approval"]}
                sent = raw.headers(version=raw.MODERN)
            case "get-under-the-modern-version":
                method, body, sent = "GET", None, raw.headers(version=raw.MODERN, session=session)
            case "delete-of-a-connection-under-the-modern-version":
                method, body, sent = "DELETE", None, raw.headers(version=raw.MODERN, session=session)
            case _:
                body = raw.modern_call("return 1")
                sent = [*raw.modern_headers().items(), ("mcp-protocol-version", raw.PROTOCOL_VERSION)]  # type: ignore[assignment]
        answer = await raw.send(http, method, s.url, sent=sent, body=body)
        assert answer.status < 500, (answer.status, answer.text)
        if case.endswith(("modern-version", "modern-header")):
            assert "mcp-session-id" not in answer.headers  # the modern era never opens a connection
        opened = answer.headers.get("mcp-session-id")
        if opened is not None and opened != session and answer.status >= 400:
            # A refused opening request may name the id the SDK drew for it; nothing answers under it.
            ghost = await raw.request(http, s.url, "token-alice", opened, "tools/list", request_id=8)
            assert ghost.status == 404, ghost.text
        # The connection survived whatever was sent beside it.
        alive = await raw.request(http, s.url, "token-alice", session, "tools/list", request_id=9)
    assert alive.status == 200


@pytest.mark.parametrize(
    "version",
    ["1999-01-01", "2026-07-28x", "2026-07-29", "2026-07-28\t<script>alert(1)</script>", "\x7f\x01", "9" * 4_000, ""],
)
async def test_an_unknown_version_is_a_400_naming_what_is_served_and_echoing_a_bounded_value(version: str) -> None:
    async with served(granted()) as s, httpx2.AsyncClient(timeout=30) as http:
        answer = await raw.send(http, "POST", s.url, sent=raw.headers(version=version), body=raw.call_execute("1"))
    assert answer.status == 400, answer.text
    [message] = answer.messages()
    assert message["error"]["code"] == types.UNSUPPORTED_PROTOCOL_VERSION
    assert raw.MODERN in message["error"]["data"]["supported"]
    assert len(message["error"]["data"]["requested"]) <= 64
    assert len(answer.text) < 2_000


@pytest.mark.parametrize("version", ["1999-01-01", raw.MODERN, raw.PROTOCOL_VERSION, None])
@pytest.mark.parametrize("method", ["server/discover", "tools/list", "tools/call"])
async def test_an_unauthenticated_request_learns_nothing_not_even_the_versions_served(
    method: str, version: str | None
) -> None:
    body = raw.modern_call("return 1") if method == "tools/call" else _bare(method, modern=True)
    sent = raw.headers(None, version=version, mcp_method=method)
    async with served(granted()) as s, httpx2.AsyncClient(timeout=30) as http:
        answer = await raw.send(http, "POST", s.url, sent=sent, body=body)
    assert answer.status == 401
    assert "2025" not in answer.text
    assert "2026" not in answer.text
    assert "mcp-session-id" not in answer.headers


@pytest.mark.parametrize("what", ["state-near-the-limit", "state-over-the-limit", "meta", "authorization", "headers"])
async def test_oversized_states_meta_and_headers_get_a_4xx_or_an_answer_never_a_500(what: str) -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        body = raw.modern_call("return 1")
        sent = raw.modern_headers()
        match what:
            case "state-near-the-limit":
                body = raw.modern_call("return 1", request_state="v1." + "A" * 200_000, input_responses=ACCEPT)
            case "state-over-the-limit":
                body = raw.modern_call("return 1", request_state="v1." + "A" * 300_000, input_responses=ACCEPT)
            case "meta":
                body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"x": "y" * 200_000}
            case "authorization":
                sent = raw.modern_headers(authorization="Bearer " + "A" * 60_000)
            case _:
                sent = {**raw.modern_headers(), **{f"x-pad-{n}": "v" * 100 for n in range(400)}}
        answer = await raw.send(http, "POST", s.url, sent=sent, body=body)
        assert answer.status < 500, answer.text
        ordinary = await call(http, s.url, "return 2", request_id=9)
    assert tool_text(ordinary) == "2"


# -- clients that leave ----------------------------------------------------------------------------


async def test_a_retry_whose_client_leaves_while_waiting_for_a_slot_leaves_the_run_claimable() -> None:
    host = granted()
    started, release = host.hold_creates()
    one_slot = ExecutionOptions(sandbox_capacity=1, admission_wait_ms=20_000)
    async with served(host, execution=one_slot) as s, httpx2.AsyncClient(timeout=30) as http:
        state = await pause(http, s.url, DELETE_ONE)
        async with anyio.create_task_group() as group:
            bobs = functools.partial(
                call, http, s.url, "return (await notes.create(text='bob'))['id']", token="token-bob"
            )
            group.start_soon(bobs)
            await started.wait()  # Bob's run holds the only slot
            with anyio.move_on_after(0.5):  # Alice's retry waits for it, then her client leaves
                await call(http, s.url, DELETE_ONE, request_id=2, state=state, responses=ACCEPT)
            release.set()
        again = await call(http, s.url, DELETE_ONE, request_id=3, state=state, responses=ACCEPT)
    assert tool_text(again) == "true"
    assert host.writes == [("create", 3), ("delete", 1)]


async def test_a_retry_whose_client_leaves_mid_run_is_never_resumed_twice() -> None:
    host = granted()
    deleting, finish = anyio.Event(), anyio.Event()

    async def hold() -> None:
        deleting.set()
        await finish.wait()

    host.on_delete = hold
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        state = await pause(http, s.url, DELETE_ONE)
        async with anyio.create_task_group() as group:
            group.start_soon(
                functools.partial(call, http, s.url, DELETE_ONE, request_id=2, state=state, responses=ACCEPT)
            )
            await deleting.wait()
            group.cancel_scope.cancel()  # the client leaves while the approved call runs
        finish.set()
        host.on_delete = None
        again = await call(http, s.url, DELETE_ONE, request_id=3, state=state, responses=ACCEPT)
    assert again.result()["isError"] is True
    assert "cannot continue" in tool_text(again)
    assert host.writes.count(("delete", 1)) <= 1


async def test_a_client_that_leaves_right_after_input_required_loses_nothing() -> None:
    host = granted()
    async with served(host) as s:
        async with httpx2.AsyncClient(timeout=30) as http:
            state = await pause(http, s.url)
        # A new client, a new TCP connection: the paused run waits in the store, not in a socket.
        async with httpx2.AsyncClient(timeout=30) as http:
            resumed = await call(http, s.url, CONFIRMED, request_id=2, state=state, responses=ACCEPT)
    assert json.loads(tool_text(resumed)) == [3, True]


async def test_a_principals_full_quota_of_pending_approvals_holds_no_sandbox_slot() -> None:
    host = granted()
    one_slot = ExecutionOptions(sandbox_capacity=1, admission_wait_ms=2_000)
    async with served(host, execution=one_slot) as s, httpx2.AsyncClient(timeout=30) as http:
        for n in range(20):  # the default max_per_session
            await pause(http, s.url, DELETE_ONE, request_id=n)
        for n in range(3):
            bob = await call(
                http, s.url, "return (await notes.create(text='bob'))['id']", token="token-bob", request_id=n
            )
            assert bob.result()["isError"] is False, bob.text
    assert ("delete", 1) not in host.writes


# -- what a resumed run answers ---------------------------------------------------------------------


async def _round_trip(host: Host, code: str, execution: ExecutionOptions | None = None, between: Any = None) -> str:
    async with served(host, execution=execution) as s, httpx2.AsyncClient(timeout=30) as http:
        state = await pause(http, s.url, code)
        if between is not None:
            between()
        answer = await call(http, s.url, code, request_id=2, state=state, responses=ACCEPT)
        assert answer.status == 200, answer.text
        assert answer.result()["isError"] is True, answer.text
        return answer.text


def _no_internals(text: str) -> None:
    for leak in ("Traceback", "/work/", "site-packages", '.py"', "hunter2", "token-"):
        assert leak not in text, (leak, text)


async def test_a_resumed_run_that_raises_is_a_tool_error_with_no_internals() -> None:
    text = await _round_trip(granted(), "await notes.delete(id=1)\nreturn {}['missing']")
    assert "KeyError" in text
    _no_internals(text)


async def test_a_resumed_run_whose_host_operation_fails_is_a_tool_error_with_no_internals() -> None:
    host = granted()

    async def fails() -> None:
        raise RuntimeError("db password=hunter2 at /srv/secret/db.py")

    host.on_delete = fails
    _no_internals(await _round_trip(host, DELETE_ONE))


async def test_a_resumed_run_that_outlives_its_deadline_is_a_tool_error() -> None:
    text = await _round_trip(
        granted(), "await notes.delete(id=1)\nwhile True:\n    pass", ExecutionOptions(timeout_ms=1_500)
    )
    assert "did not finish" in text
    _no_internals(text)


async def test_a_run_whose_operations_changed_while_paused_is_refused_as_revision_changed() -> None:
    host = granted()

    def change() -> None:
        changed = Module(id="test-notes", name="notes", description="The test host's notes, changed")

        @changed.operation(access="write", confirm=True)
        async def delete(id: int, everything: bool = False) -> bool:
            """Delete a note, or everything."""
            host.writes.append(("changed-delete", id))
            return True

        host.module = changed

    text = await _round_trip(host, DELETE_ONE, between=change)
    assert "changed since it paused" in text
    assert host.writes == []
    _no_internals(text)
