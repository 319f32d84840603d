"""``mcp_source`` refuses a wrong definition when it is made, without showing a secret; names default from the id."""

from __future__ import annotations

from typing import Any

import pytest

from mycelium import DefinitionError
from mycelium.mcp import mcp_source
from mycelium.mcp._upstream import McpSource

from .conftest import runtime, upstream


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"url": "http://127.0.0.1:1/mcp", "command": "server"},
        {"url": "file:///etc/passwd"},
        {"url": "http://127.0.0.1:1/mcp", "env": {"A": "b"}},
        {"command": "server", "headers": {"A": "b"}},
        {"command": "server", "args": "--flag"},
        {"command": "server", "connect_timeout_ms": 0},
        {"command": "server", "name": "not an identifier"},
        {"command": "server", "namespace": ["forage"]},
    ],
)
def test_a_wrong_definition_is_refused_when_it_is_made(options: dict[str, Any]) -> None:
    with pytest.raises(DefinitionError, match=r"mcp_source 'up'|module 'up'"):
        mcp_source("up", **options)


def test_a_refused_mapping_is_not_shown() -> None:
    with pytest.raises(DefinitionError) as caught:
        mcp_source("up", url="http://127.0.0.1:1/mcp", headers={"Authorization": 12345678})  # type: ignore[dict-item]
    assert "12345678" not in str(caught.value)


@pytest.mark.parametrize(
    ("source_id", "namespace", "name"),
    [
        ("github-server", (), "github_server"),
        ("json", (), "json_"),
        ("print", (), "print_"),
        ("print", ("mcp",), "print"),
    ],
)
def test_the_guest_name_defaults_to_the_id_made_a_usable_identifier(
    source_id: str, namespace: tuple[str, ...], name: str
) -> None:
    source = mcp_source(source_id, command="server", namespace=namespace)
    assert isinstance(source, McpSource)
    assert source.name == name


async def test_a_namespace_places_the_servers_module_deeper_in_env() -> None:
    async with upstream("http", name="tools", namespace=("mcp",)) as (source, _):
        async with runtime(source) as rt, rt.lease() as lease:
            result = await lease.execute_tool.run("return await env.mcp.tools.echo(text='deep')")
    assert result.value == "deep"
