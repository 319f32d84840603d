"""A confirm=True operation asks the person through MCP form elicitation, without replaying anything.

Every rule holds in both eras: over a 2025-11-25 connection the server asks by elicitation
while the run is paused; over 2026-07-28 the call answers with an input-required result and
the client's retry resumes the run.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest

from .conftest import ALICE, Host, served, text_of

# Two writes before the confirmed delete: if anything replayed, they would run twice.
PROGRAM = (
    "first = await notes.create(text='a')\n"
    "second = await notes.create(text='b')\n"
    "gone = await notes.delete(id=1)\n"
    "return {'created': [first['id'], second['id']], 'deleted': gone}"
)


class Person:
    """Answers elicitation requests as the test says, and remembers what it was asked."""

    def __init__(self, action: str, content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        return types.ElicitResult(action=self.action, content=self.content)  # type: ignore[arg-type]


@pytest.fixture(params=["legacy", "2026-07-28"])
def era(request: pytest.FixtureRequest) -> str:
    """The client's mode: a 2025-11-25 connection, or requests of 2026-07-28."""
    return str(request.param)


def granted() -> Host:
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    return host


async def test_an_accepted_confirmation_runs_the_call_once_and_the_run_continues_where_it_was(era: str) -> None:
    host = granted()
    person = Person("accept", {"approve": True})
    async with served(host) as s, s.client(elicitation=person, mode=era) as client:
        result = await client.call_tool("execute", {"code": PROGRAM})
    assert json.loads(text_of(result)) == {"created": [3, 4], "deleted": True}
    assert host.writes == [("create", 3), ("create", 4), ("delete", 1)]
    [asked] = person.asked
    assert "notes.delete" in asked.message
    assert "test-notes" in asked.message
    assert "write" in asked.message


async def test_the_confirmation_request_names_no_argument_and_no_credential(era: str) -> None:
    host = granted()
    person = Person("accept")
    secret_text = "do-not-show-this-argument"
    code = f"return await notes.delete(id=2) if {secret_text!r} else None"
    async with served(host) as s, s.client(elicitation=person, mode=era) as client:
        await client.call_tool("execute", {"code": code})
    [asked] = person.asked
    shown = asked.model_dump_json()
    assert secret_text not in shown
    assert "token-alice" not in shown
    assert '"id"' not in asked.message


@pytest.mark.parametrize(
    ("person", "reason"),
    [
        (Person("decline"), "confirmation-declined"),
        (Person("cancel"), "confirmation-declined"),
        (Person("accept", {"approve": False}), "confirmation-declined"),
        (None, "confirmation-unavailable"),
    ],
    ids=["decline", "cancel", "accept-but-not-approved", "client-without-elicitation"],
)
async def test_without_an_approval_the_call_is_refused_and_the_program_goes_on(
    era: str, person: Person | None, reason: str
) -> None:
    host = granted()
    code = "gone = await notes.delete(id=1)\nafter = await notes.create(text='after')\nreturn [gone, after['id']]"
    async with served(host) as s, s.client(elicitation=person, mode=era) as client:
        result = await client.call_tool("execute", {"code": code})
    refusal, created = json.loads(text_of(result))
    assert refusal["refused"] is True
    assert refusal["reason"] == reason
    assert created == 3
    assert host.writes == [("create", 3)]
    assert 1 in host.notes


async def test_a_grant_revoked_while_the_person_decides_refuses_the_approved_call(era: str) -> None:
    host = granted()

    class Revoking(Person):
        async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            host.grant(ALICE, notes="read", reports="read")  # the host revokes while the person reads the prompt
            return await super().__call__(context, params)

    person = Revoking("accept")
    async with served(host) as s, s.client(elicitation=person, mode=era) as client:
        result = await client.call_tool("execute", {"code": "return await notes.delete(id=1)"})
    assert json.loads(text_of(result))["reason"] == "read-only-grant"
    assert host.writes == []
    assert len(person.asked) == 1


async def test_load_runs_before_each_execution_and_after_each_approval(era: str) -> None:
    host = granted()
    async with served(host) as s, s.client(elicitation=Person("accept"), mode=era) as client:
        await client.list_tools()  # the SDK client lists tools before its first call; do it first
        before = host.loads
        await client.call_tool("execute", {"code": "return 1"})
        after_plain = host.loads
        await client.call_tool("execute", {"code": "return await notes.delete(id=1)"})
        after_approval = host.loads
    assert after_plain - before == 1
    assert after_approval - after_plain == 2


async def test_grants_revoked_between_two_executes_apply_to_the_second(era: str) -> None:
    host = granted()
    async with served(host) as s, s.client(mode=era) as client:
        first = await client.call_tool("execute", {"code": "return (await notes.create(text='x'))['id']"})
        host.grant(ALICE, notes="none", reports="read")
        second = await client.call_tool("execute", {"code": "return await notes.create(text='y')"})
    assert json.loads(text_of(first)) == 3
    assert json.loads(text_of(second))["reason"] == "not-granted"
    assert host.writes == [("create", 3)]
