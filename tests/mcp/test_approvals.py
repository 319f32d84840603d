"""Approvals pause the run: nothing waits in a sandbox slot while a person decides, and the answer resumes it.

Over 2026-07-28 the call answers with an input-required result whose ``requestState`` is
sealed by the server; the retry that carries it back with the person's answer resumes the
paused program. What comes back is the attacker's to shape, so every way of bending it is
refused before anything runs.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from mycelium import ExecutionOptions
from mycelium.mcp import SecretKeys
from mycelium.suspensions import Suspensions

from . import raw_http as raw
from .conftest import ALICE, BOB, Host, served, text_of

CONFIRMED = "first = await notes.create(text='before')\ngone = await notes.delete(id=1)\nreturn [first['id'], gone]"
ACCEPT = {"approval": {"action": "accept", "content": {"approve": True}}}


def granted() -> Host:
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    host.grant(BOB, notes="write", reports="read")
    return host


async def pause(http: httpx2.AsyncClient, url: str, code: str = CONFIRMED) -> dict[str, Any]:
    """Run ``code`` over 2026-07-28 until its confirmation: the input-required result."""
    answer = await raw.send(http, "POST", url, sent=raw.modern_headers(), body=raw.modern_call(code))
    assert answer.status == 200, answer.text
    result = answer.result()
    assert result["resultType"] == "input_required", result
    return dict(result)


async def retry(
    http: httpx2.AsyncClient,
    url: str,
    state: str,
    *,
    code: str = CONFIRMED,
    token: str = "token-alice",
    responses: dict[str, Any] | None = None,
) -> raw.Answer:
    body = raw.modern_call(code, request_id=2, request_state=state, input_responses=responses or ACCEPT)
    return await raw.send(http, "POST", url, sent=raw.modern_headers(token), body=body)


def refused_state(answer: raw.Answer) -> bool:
    """Whether the answer is the JSON-RPC refusal of a requestState the server did not mint unchanged."""
    [message] = answer.messages()
    return message.get("error", {}).get("code") == types.INVALID_PARAMS and "result" not in message


async def test_the_question_names_the_call_and_the_state_holds_nothing_readable() -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        paused = await pause(http, s.url)
    [(key, asked)] = paused["inputRequests"].items()
    assert key == "approval"
    assert asked["method"] == "elicitation/create"
    assert "notes.delete" in asked["params"]["message"]
    state = paused["requestState"]
    # Sealed and encrypted, not merely signed: neither the suspension nor the call can be read in it.
    assert "susp-" not in state
    assert "notes" not in state
    assert host.writes == [("create", 3)]


async def test_an_approved_retry_resumes_the_program_where_it_paused_and_runs_nothing_twice() -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        paused = await pause(http, s.url)
        resumed = await retry(http, s.url, paused["requestState"])
    assert json.loads(resumed.result()["content"][0]["text"]) == [3, True]
    assert host.writes == [("create", 3), ("delete", 1)]


async def test_a_retry_replayed_after_the_run_resumed_runs_nothing_again() -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        paused = await pause(http, s.url)
        first = await retry(http, s.url, paused["requestState"])
        again = await retry(http, s.url, paused["requestState"])
    assert first.result()["isError"] is False
    replayed = again.result()
    assert replayed["isError"] is True
    assert "already been resumed" in replayed["content"][0]["text"]
    assert host.writes == [("create", 3), ("delete", 1)]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_retry_refuses_the_call_and_the_program_goes_on(action: str) -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        paused = await pause(http, s.url)
        resumed = await retry(http, s.url, paused["requestState"], responses={"approval": {"action": action}})
    first, refusal = json.loads(resumed.result()["content"][0]["text"])
    assert first == 3
    assert refusal["reason"] == "confirmation-declined"
    assert host.writes == [("create", 3)]


async def test_a_retry_without_an_answer_is_refused_and_the_run_still_waits() -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        paused = await pause(http, s.url)
        body = raw.modern_call(CONFIRMED, request_id=2, request_state=paused["requestState"])
        unanswered = await raw.send(http, "POST", s.url, sent=raw.modern_headers(), body=body)
        assert refused_state(unanswered), unanswered.text
        resumed = await retry(http, s.url, paused["requestState"])
    assert json.loads(resumed.result()["content"][0]["text"]) == [3, True]
    assert host.writes == [("create", 3), ("delete", 1)]


def _flipped(state: str) -> str:
    middle = len(state) // 2
    return state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]


@pytest.mark.parametrize(
    "bend",
    ["tampered", "truncated", "another-principal", "another-program", "not-a-string"],
)
async def test_a_bent_request_state_is_refused_and_runs_nothing(bend: str) -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        state = (await pause(http, s.url))["requestState"]
        match bend:
            case "tampered":
                answer = await retry(http, s.url, _flipped(state))
            case "truncated":
                answer = await retry(http, s.url, state[:-8])
            case "another-principal":
                answer = await retry(http, s.url, state, token="token-bob")
            case "another-program":
                answer = await retry(http, s.url, state, code="return await notes.delete(id=2)")
            case _:
                body = raw.modern_call(CONFIRMED, request_id=2, input_responses=ACCEPT)
                body["params"]["requestState"] = {"suspension": "susp-x"}
                answer = await raw.send(http, "POST", s.url, sent=raw.modern_headers(), body=body)
        assert refused_state(answer), answer.text
        # The paused run is untouched: its own retry still resumes it.
        resumed = await retry(http, s.url, state)
    assert json.loads(resumed.result()["content"][0]["text"]) == [3, True]
    assert host.writes == [("create", 3), ("delete", 1)]


async def test_a_request_state_sealed_under_another_ring_is_refused() -> None:
    host = granted()
    shared = Suspensions()  # two replicas of one store: only the ring differs
    ours, theirs = (SecretKeys.of(secrets.token_hex(32)) for _ in range(2))
    async with served(host, suspensions=shared, secret_keys=theirs) as other, httpx2.AsyncClient(timeout=30) as http:
        foreign = (await pause(http, other.url))["requestState"]
    async with served(host, suspensions=shared, secret_keys=ours) as s, httpx2.AsyncClient(timeout=30) as http:
        answer = await retry(http, s.url, foreign)
    assert refused_state(answer)
    assert ("delete", 1) not in host.writes


async def test_a_request_state_sealed_under_an_older_key_of_the_ring_still_resumes() -> None:
    host = granted()
    shared = Suspensions()
    old, new = secrets.token_hex(32), secrets.token_hex(32)
    async with served(host, suspensions=shared, secret_keys=SecretKeys.of(old)) as s, httpx2.AsyncClient() as http:
        state = (await pause(http, s.url))["requestState"]
    rotated = SecretKeys.of(new, old)  # the new key seals from now on; the old one still opens
    async with served(host, suspensions=shared, secret_keys=rotated) as s, httpx2.AsyncClient(timeout=30) as http:
        answer = await retry(http, s.url, state)
    assert json.loads(answer.result()["content"][0]["text"]) == [3, True]
    assert host.writes == [("create", 3), ("delete", 1)]


async def test_a_resumed_program_may_pause_again_and_each_call_is_asked_once() -> None:
    host = granted()
    asked: list[str] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    code = "a = await notes.delete(id=1)\nb = await notes.delete(id=2)\nreturn [a, b]"
    async with served(host) as s, s.client(elicitation=person, mode=raw.MODERN) as client:
        result = await client.call_tool("execute", {"code": code})
    assert json.loads(text_of(result)) == [True, True]
    assert len(asked) == 2
    assert host.writes == [("delete", 1), ("delete", 2)]


@pytest.mark.parametrize("era", ["legacy", raw.MODERN])
async def test_a_pending_approval_holds_no_sandbox_slot(era: str) -> None:
    host = granted()
    deciding, decide = anyio.Event(), anyio.Event()

    async def slow_person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        deciding.set()
        await decide.wait()
        return types.ElicitResult(action="accept", content={"approve": True})

    one_slot = ExecutionOptions(sandbox_capacity=1, admission_wait_ms=2_000)
    async with served(host, execution=one_slot) as s, anyio.create_task_group() as group:
        results: dict[str, Any] = {}

        async def alice() -> None:
            async with s.client(elicitation=slow_person, mode=era) as client:
                results["alice"] = await client.call_tool("execute", {"code": "return await notes.delete(id=1)"})

        group.start_soon(alice)
        await deciding.wait()
        # The only slot is free while Alice's person decides: Bob's programs run at once.
        async with s.client("token-bob", mode=era) as client:
            for _ in range(3):
                bob = await client.call_tool("execute", {"code": "return (await notes.create(text='bob'))['id']"})
                assert bob.is_error is False, text_of(bob)
        decide.set()
    assert json.loads(text_of(results["alice"])) is True
    assert ("delete", 1) in host.writes


@pytest.mark.parametrize("era", ["legacy", raw.MODERN])
async def test_fifty_pending_approvals_per_sandbox_slot_leave_other_principals_running(era: str) -> None:
    host = granted()
    pending, everyone_asked, decide = 50, anyio.Event(), anyio.Event()
    asked = 0

    async def slow_person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        nonlocal asked
        asked += 1
        if asked == pending:
            everyone_asked.set()
        await decide.wait()
        return types.ElicitResult(action="decline")

    one_slot = ExecutionOptions(sandbox_capacity=1, admission_wait_ms=2_000)
    roomy = Suspensions(max_per_session=pending)  # over 2026-07-28 they are all one principal's session
    async with (
        served(
            host,
            execution=one_slot,
            suspensions=roomy,
            max_connections=pending + 8,
            max_connections_per_principal=pending + 4,  # all fifty are Alice's
        ) as s,
        httpx2.AsyncClient(timeout=30) as http,
        anyio.create_task_group() as group,
    ):
        if era == raw.MODERN:
            for _ in range(pending):
                await pause(http, s.url, "return await notes.delete(id=1)")
        else:

            async def waiting_client() -> None:
                async with s.client(elicitation=slow_person) as client:
                    await client.call_tool("execute", {"code": "return await notes.delete(id=1)"})

            for _ in range(pending):
                group.start_soon(waiting_client)
            await everyone_asked.wait()
        async with s.client("token-bob", mode=era) as client:
            bob = await client.call_tool("execute", {"code": "return (await notes.create(text='bob'))['id']"})
        assert bob.is_error is False, text_of(bob)
        decide.set()
    assert ("delete", 1) not in host.writes


@pytest.mark.parametrize("era", ["legacy", raw.MODERN])
async def test_an_unknown_tool_is_a_json_rpc_invalid_params_error(era: str) -> None:
    host = granted()
    async with served(host) as s, s.client(mode=era) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("delete_everything", {"code": "return 1"})
    assert raised.value.error.code == types.INVALID_PARAMS
    assert "delete_everything" not in str(raised.value)
