"""Serving the catalog over MCP with the official SDK client on real loopback HTTP."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .conftest import ALICE, BOB, Host, served, text_of


async def test_the_server_offers_exactly_one_execute_tool_with_annotations_and_instructions() -> None:
    async with served() as s, s.client() as client:
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ["execute"]
        [tool] = listed.tools
        assert "forage.search" in (tool.description or "")
        assert tool.input_schema["required"] == ["code"]
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is False
        assert client.instructions == "Notes for Member."


async def test_execute_runs_a_program_that_calls_several_operations() -> None:
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    async with served(host) as s, s.client() as client:
        code = (
            "import asyncio\n"
            "made = await notes.create(text='third')\n"
            "found, n = await asyncio.gather(notes.search(text='i'), apps.reports.count())\n"
            "print('made', made['id'])\n"
            "return {'made': made, 'found': [f['id'] for f in found], 'count': n}"
        )
        result = await client.call_tool("execute", {"code": code})
    assert result.is_error is False
    assert json.loads(result.content[0].text) == {"made": {"id": 3, "text": "third"}, "found": [1, 3], "count": 3}
    assert result.content[1].text == "print output:\nmade 3"
    assert host.writes == [("create", 3)]


async def test_a_module_the_grants_do_not_name_is_refused() -> None:
    host = Host()
    host.grant(BOB, notes="read")
    async with served(host) as s, s.client("token-bob") as client:
        result = await client.call_tool("execute", {"code": "return await apps.reports.count()"})
        written = await client.call_tool("execute", {"code": "return await notes.create(text='x')"})
    refusal = json.loads(text_of(result))
    assert refusal["refused"] is True
    assert refusal["reason"] == "not-granted"
    assert json.loads(text_of(written))["reason"] == "read-only-grant"
    assert host.writes == []


async def test_a_failed_execute_is_a_tool_error_with_the_safe_message() -> None:
    async with served() as s, s.client() as client:
        result = await client.call_tool("execute", {"code": "raise ValueError('boom')"})
        bad = await client.call_tool("execute", {"program": "1"})
    assert result.is_error is True
    assert "boom" in text_of(result)
    assert bad.is_error is True
    assert "code" in text_of(bad)


class _Backwards:
    """A host's own ranking by meaning: the catalog last path first, whatever the need."""

    def index(self, documents: Sequence[Sequence[str]]) -> _BackwardsIndex:
        return _BackwardsIndex(len(documents))


class _BackwardsIndex:
    def __init__(self, count: int) -> None:
        self._count = count

    def nearest(self, queries: Sequence[str], depth: int) -> list[int]:
        return list(range(self._count - 1, -1, -1))[:depth]


async def test_a_served_catalog_ranks_with_the_semantic_ranker_it_was_given() -> None:
    # No word of the query is in the catalog: only the ranker's order can answer.
    code = 'return [e["path"] for e in await forage.search(["qqqq", "zzzz"], limit=2)]'
    async with served(semantic=_Backwards()) as s, s.client() as client:
        result = await client.call_tool("execute", {"code": code})
    assert result.is_error is False, text_of(result)
    assert json.loads(text_of(result)) == ["notes.search", "notes.delete"]
