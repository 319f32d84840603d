"""Approvals a person gives on the host's page: a client that cannot be asked pauses, its model polls with a handle.

Every rule holds in both eras, with the official SDK client over loopback HTTP and a real
Monty sandbox: the client declares no elicitation, so nobody can be asked through it.
"""

from __future__ import annotations

import json
import re
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import mcp_types as types
import pytest

from mycelium.suspensions import Suspension, Suspensions
from tests.mcp.conftest import ALICE, BOB, Host, Served, served, text_of
from tests.mcp.test_confirmation import Person

PROGRAM = "first = await notes.create(text='before')\ngone = await notes.delete(id=1)\nreturn [first['id'], gone]"
HANDLE = re.compile(r'"approval": "([^"]+)"')


@pytest.fixture(params=["legacy", "2026-07-28"])
def era(request: pytest.FixtureRequest) -> str:
    """The client's mode: a 2025-11-25 connection, or requests of 2026-07-28."""
    return str(request.param)


BRIEF_WAIT_MS = 200
"""How long a 2026-07-28 client's own retries wait for the person here before the model gets the handle."""


def paged(host: Host, **options: Any) -> AbstractAsyncContextManager[Served]:
    """The server with the approvals page on: a person decides elsewhere, and retries wait only briefly."""
    return served(host, page_approvals=True, approval_wait_ms=BRIEF_WAIT_MS, **options)


def granted() -> Host:
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    host.grant(BOB, notes="write", reports="read")
    return host


def handle_in(text: str) -> str:
    found = HANDLE.search(text)
    assert found is not None, text
    return found.group(1)


async def waiting(s: Served) -> list[Suspension]:
    suspensions = s.catalog.suspensions
    assert suspensions is not None
    return await suspensions.undecided(100)


async def decide(s: Served, approved: bool) -> None:
    suspensions = s.catalog.suspensions
    assert suspensions is not None
    [pending] = await suspensions.undecided(100)
    assert await suspensions.decide_as_approver(pending.id, approved)


async def test_a_confirmation_no_client_can_answer_pauses_and_gives_the_model_a_handle(era: str) -> None:
    host = granted()
    async with paged(host) as s, s.client(mode=era) as client:
        result = await client.call_tool("execute", {"code": PROGRAM})
        [pending] = await waiting(s)
    text = text_of(result)
    assert not result.is_error
    assert "Waiting for a person's approval" in text
    assert "notes.delete" in text
    assert "Do not run the program again" in text
    assert handle_in(text).startswith("approval-v1.")
    assert host.writes == [("create", 3)]  # what ran before the pause, and nothing of the confirmed call
    assert (pending.path, pending.arguments, pending.requester) == ("notes.delete", {"id": 1}, "member alice (owner)")


async def test_the_models_text_never_carries_the_arguments(era: str) -> None:
    secret = "do-not-show-this-argument"
    code = f"return await notes.delete(id=len({secret!r}))"
    async with paged(granted()) as s, s.client(mode=era) as client:
        result = await client.call_tool("execute", {"code": code})
        [pending] = await waiting(s)
    assert pending.arguments == {"id": len(secret)}
    assert f'"id": {len(secret)}' not in text_of(result)
    assert str(len(secret)) not in handle_in(text_of(result))


async def test_a_poll_before_anyone_decides_is_approval_pending_and_runs_nothing(era: str) -> None:
    host = granted()
    async with paged(host) as s, s.client(mode=era) as client:
        handle = handle_in(text_of(await client.call_tool("execute", {"code": PROGRAM})))
        polled = await client.call_tool("execute", {"approval": handle})
        still = await waiting(s)
    assert polled.is_error
    assert "still waits for a person to approve or decline" in text_of(polled)
    assert handle in text_of(polled)  # the same handle asks again
    assert len(still) == 1
    assert host.writes == [("create", 3)]


async def test_an_approved_run_resumes_once_on_the_poll_and_gives_the_programs_result(era: str) -> None:
    host = granted()
    async with paged(host) as s, s.client(mode=era) as client:
        handle = handle_in(text_of(await client.call_tool("execute", {"code": PROGRAM})))
        await decide(s, approved=True)
        done = await client.call_tool("execute", {"approval": handle})
        again = await client.call_tool("execute", {"approval": handle})
    assert json.loads(text_of(done)) == [3, True]
    assert host.writes == [("create", 3), ("delete", 1)]
    assert again.is_error
    assert "already been resumed" in text_of(again)


async def test_a_declined_call_never_runs_and_the_poll_gives_the_programs_refusal(era: str) -> None:
    host = granted()
    code = "gone = await notes.delete(id=1)\nreturn gone"
    async with paged(host) as s, s.client(mode=era) as client:
        handle = handle_in(text_of(await client.call_tool("execute", {"code": code})))
        await decide(s, approved=False)
        done = await client.call_tool("execute", {"approval": handle})
    refusal: dict[str, Any] = json.loads(text_of(done))
    assert refusal["refused"] is True
    assert refusal["reason"] == "confirmation-declined"
    assert host.writes == []


def assert_resumed_once(answers: list[str], host: Host) -> None:
    """Of two answers to one paused run, one is its result and the other says it was resumed already."""
    [resumed] = [answer for answer in answers if answer.startswith("[")]
    [refused] = [answer for answer in answers if answer is not resumed]
    assert json.loads(resumed) == [3, True]
    assert "already been resumed" in refused
    assert host.writes == [("create", 3), ("delete", 1)]


async def test_two_polls_at_once_after_the_decision_resume_the_run_exactly_once(era: str) -> None:
    host = granted()
    async with paged(host) as s, s.client(mode=era) as client:
        handle = handle_in(text_of(await client.call_tool("execute", {"code": PROGRAM})))
        await decide(s, approved=True)
        answers: list[str] = []

        async def poll() -> None:
            async with s.client(mode=era) as other:
                answers.append(text_of(await other.call_tool("execute", {"approval": handle})))

        async with anyio.create_task_group() as group:
            group.start_soon(poll)
            group.start_soon(poll)
    assert_resumed_once(answers, host)


async def test_a_handle_serves_only_the_principal_it_was_minted_for(era: str) -> None:
    host = granted()
    async with paged(host) as s:
        async with s.client(mode=era) as alice:
            handle = handle_in(text_of(await alice.call_tool("execute", {"code": PROGRAM})))
        await decide(s, approved=True)
        async with s.client("token-bob", mode=era) as bob:
            stolen = await bob.call_tool("execute", {"approval": handle})
            forged = await bob.call_tool("execute", {"approval": handle[:-4] + "AAAA"})
        written = list(host.writes)
        async with s.client(mode=era) as alice:
            owned = await alice.call_tool("execute", {"approval": handle})
    for answer in (stolen, forged):
        assert answer.is_error
        assert "no such paused run" in text_of(answer)
    assert written == [("create", 3)]
    assert json.loads(text_of(owned)) == [3, True]


@pytest.mark.parametrize(
    ("arguments", "advice"),
    [
        ({"code": "return 1", "approval": "approval-v1.x.y"}, "not both"),
        ({}, "give either code or an approval handle"),
        ({"approval": 7}, "must be a string"),
    ],
    ids=["both", "neither", "not-a-string"],
)
async def test_a_call_must_give_code_or_a_handle_and_is_told_which(
    era: str, arguments: dict[str, Any], advice: str
) -> None:
    async with paged(granted()) as s, s.client(mode=era) as client:
        result = await client.call_tool("execute", arguments)
    assert result.is_error
    assert advice in text_of(result)
    assert '{"approval": "<handle>"}' in text_of(result)


async def test_the_execute_schema_offers_the_handle_only_when_a_page_decides() -> None:
    async with paged(granted()) as s, s.client() as client:
        [offered] = (await client.list_tools()).tools
    async with served(granted()) as s, s.client() as client:
        [plain] = (await client.list_tools()).tools
    assert set(offered.input_schema["properties"]) == {"code", "approval"}
    assert "required" not in offered.input_schema
    assert offered.input_schema["additionalProperties"] is False
    assert '{"approval": "<handle>"}' in (offered.description or "")
    assert set(plain.input_schema["properties"]) == {"code"}
    assert plain.input_schema["required"] == ["code"]


async def test_without_the_page_a_client_that_cannot_be_asked_is_still_refused(era: str) -> None:
    host = granted()
    async with served(host) as s, s.client(mode=era) as client:
        result = await client.call_tool("execute", {"code": "return await notes.delete(id=1)"})
    assert json.loads(text_of(result))["reason"] == "confirmation-unavailable"
    assert host.writes == []


async def test_a_client_that_can_be_asked_is_still_asked_with_the_page_on(era: str) -> None:
    host = granted()
    person = Person("accept", {"approve": True})
    async with paged(host) as s, s.client(elicitation=person, mode=era) as client:
        result = await client.call_tool("execute", {"code": PROGRAM})
    assert json.loads(text_of(result)) == [3, True]
    assert len(person.asked) == 1


async def test_a_run_asked_over_a_connection_that_the_page_decided_otherwise_is_dropped_not_kept() -> None:
    """The person declines on the page while the client accepts: the decline stands, and the paused run,
    which nothing but this request could resume, is not left in the store until it expires."""
    host = granted()
    asked: list[Suspension] = []
    async with paged(host) as s:
        suspensions = s.catalog.suspensions
        assert suspensions is not None

        async def decline_on_the_page_then_accept(context: object, params: object) -> types.ElicitResult:
            [paused] = await waiting(s)
            asked.append(paused)
            assert await suspensions.decide_as_approver(paused.id, False)
            return types.ElicitResult(action="accept", content={"approve": True})

        async with s.client(elicitation=decline_on_the_page_then_accept) as client:
            result = await client.call_tool("execute", {"code": PROGRAM})
        assert "says otherwise" in text_of(result)
        [paused] = asked
        stored = await suspensions.store.get(paused.id)
        assert stored is not None
        assert stored.claimed  # dropped: its tombstone is all that is left
    assert ("delete", 1) not in host.writes


async def test_an_expired_approval_is_no_longer_listed_and_its_poll_says_expired(era: str) -> None:
    host = granted()
    expiring = Suspensions(expires_after_ms=1)
    async with paged(host, suspensions=expiring) as s, s.client(mode=era) as client:
        handle = handle_in(text_of(await client.call_tool("execute", {"code": PROGRAM})))
        listed = await waiting(s)
        polled = await client.call_tool("execute", {"approval": handle})
    assert listed == []
    assert polled.is_error
    assert "time to decide ran out" in text_of(polled)
    assert host.writes == [("create", 3)]
