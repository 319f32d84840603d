"""A run that may pause is driven step by step; a program must not be able to tell.

With suspensions on and a confirm operation in the revision, the Monty adapter drives
runs one step at a time instead of feeding them whole. Every program here runs both
ways and must give the same result, failure and output.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from mycelium import Access, Module, Runtime, Suspensions, ToolResult, defer
from mycelium.sandbox.monty import MontySandbox

PROGRAMS = {
    "one call": "return await notes.search(query='x')",
    "nested path through env": "return await env.notes.search(query='x')",
    "gathered calls": "import asyncio\nreturn await asyncio.gather(*[notes.search(query=str(i)) for i in range(5)])",
    "call started, awaited later": (
        "t = notes.search(query='a')\nu = await notes.search(query='b')\nreturn [u, await t]"
    ),
    "call never awaited": "notes.search(query='a')\nreturn 1",
    "pending call returned": "return notes.search(query='a')",
    "unhandled host failure": "return await notes.fail()",
    "handled host failure": "try:\n    await notes.fail()\nexcept RuntimeError as e:\n    return str(e)[:30]",
    "invalid input": "try:\n    await notes.search(query=1)\nexcept ValueError as e:\n    return 'bad'",
    "unknown operation": "return await notes.nope()",
    "printed output": "print('hello')\nprint('world')\nreturn None",
    "sleeps capped then over budget": "import time\ntime.sleep(1000)\ntime.sleep(1000)\nreturn 'slept'",
    "async sleeps": "import asyncio\nawait asyncio.gather(asyncio.sleep(0.01), asyncio.sleep(0.01))\nreturn 'ok'",
    "discovery": "return [hit['path'] for hit in await forage.search('search notes')][:1]",
    "result not JSON": "return {1, 2}",
    "guest exception": "raise KeyError('k')",
    "statement last": "x = await notes.search(query='q')",
}


def notes_module() -> Module:
    notes = Module(id="notes-v1", name="notes")

    @notes.operation(access="read")
    async def search(query: str) -> list[str]:
        """Find notes."""
        return [f"about {query}"]

    @notes.operation()
    def fail() -> int:
        raise RuntimeError("host detail")

    @notes.operation(confirm=True)
    def remove(id: int) -> bool:
        """Remove a note; a person confirms."""
        return True

    return notes


@pytest.fixture
async def runtimes() -> AsyncIterator[tuple[Runtime, Runtime]]:
    async with (
        MontySandbox(max_sleep_ms=50, max_total_sleep_ms=80) as sandbox,
        Runtime(modules=[notes_module()], sandbox=sandbox, access=Access(confirm=defer)) as fed,
        Runtime(
            modules=[notes_module()], sandbox=sandbox, access=Access(confirm=defer), suspensions=Suspensions()
        ) as stepped,
    ):
        yield fed, stepped


def observed(result: ToolResult) -> tuple[object, ...]:
    """What a model or host sees of a result, references aside (they are random)."""
    failure = result.failure.to_dict() if result.failure is not None else None
    if failure is not None:
        failure.pop("reference", None)
    return (
        result.is_error,
        re.sub(r"ref-[0-9a-f]+", "ref-?", result.text),
        str(failure),
        result.logs,
        result.value,
    )


@pytest.mark.parametrize("code", PROGRAMS.values(), ids=PROGRAMS.keys())
async def test_a_program_gets_the_same_outcome_whether_fed_whole_or_stepped(
    runtimes: tuple[Runtime, Runtime], code: str
) -> None:
    fed, stepped = runtimes
    async with fed.lease() as lease:
        expected = await lease.execute_tool.run(code)
    async with stepped.lease() as lease:
        got = await lease.execute_tool.run(code)
    assert observed(got) == observed(expected)


async def test_only_the_stepped_runtime_pauses_at_a_deferred_confirmation(runtimes: tuple[Runtime, Runtime]) -> None:
    fed, stepped = runtimes
    code = "return await notes.remove(id=1)"
    async with fed.lease() as lease:
        refused = await lease.execute_tool.run(code)
    async with stepped.lease() as lease:
        paused = await lease.execute_tool.run(code)
    assert refused.value == {
        "refused": True,
        "module": "notes-v1",
        "operation": "remove",
        "reason": "confirmation-unavailable",
        "message": refused.value["message"],  # type: ignore[index]
    }
    assert paused.suspension is not None
    assert paused.suspension.path == "notes.remove"
