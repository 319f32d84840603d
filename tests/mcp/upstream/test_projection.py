"""Each tool becomes an operation: its schemas, its read-only hint as the access label, the host's confirm policy."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mycelium import MyceliumSourceError
from mycelium._graph import InstalledOperation

from .conftest import TRANSPORTS, runtime, upstream
from .servers import ADD_OUTPUT, ECHO_SCHEMA


def operations(lease: Any) -> dict[str, InstalledOperation]:
    return {target.path: target for target in lease.catalog.targets}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_schemas_descriptions_and_the_read_only_hint_become_the_operation(transport: str) -> None:
    async with upstream(transport) as (source, _), runtime(source) as rt, rt.lease() as lease:
        found = operations(lease)
    echo, add = found["up.echo"].operation, found["up.add"].operation
    assert echo.input_schema == ECHO_SCHEMA
    assert echo.output_schema == {}  # no outputSchema: any JSON value
    assert echo.description == "Echo the text back."
    assert add.output_schema == ADD_OUTPUT
    assert found["up.echo"].module.id == "up"
    # read exactly when readOnlyHint is true; false, absent or no annotations at all: write
    assert {path: target.operation.access for path, target in found.items() if target.operation.access == "read"} == {
        "up.echo": "read",
        "up.add": "read",
        "up.cancelled": "read",
    }
    assert found["up.hinted_false"].operation.access == "write"
    assert not any(target.operation.confirm for target in found.values())


async def test_the_hosts_confirm_policy_marks_the_tools_it_chooses() -> None:
    def destructive(tool: Any) -> bool:
        return bool(tool.annotations and tool.annotations.destructive_hint)

    async with upstream("http", confirm=destructive) as (source, _), runtime(source) as rt, rt.lease() as lease:
        confirmed = sorted(path for path, target in operations(lease).items() if target.operation.confirm)
    assert confirmed == ["up.delete_everything"]


async def test_a_tool_whose_schema_the_host_cannot_check_is_left_out_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="mycelium")
    async with upstream("http") as (source, _), runtime(source) as rt, rt.lease() as lease:
        found = operations(lease)
    assert "up.broken" not in found
    assert "up.echo" in found
    assert any("tool 'broken' is left out" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_server_with_a_thousand_tools_is_listed_page_by_page_and_every_tool_is_callable(transport: str) -> None:
    program = "import asyncio\nreturn await asyncio.gather(up.tool_0000(), up.tool_0500(), up.tool_0999())"
    async with upstream(transport, "many") as (source, _), runtime(source) as rt, rt.lease() as lease:
        assert len(lease.catalog.targets) == 1_000
        result = await lease.execute_tool.run(program)
    assert result.value == ["tool_0000", "tool_0500", "tool_0999"]


async def test_a_server_listing_more_than_the_tool_limit_fails_to_acquire_saying_so() -> None:
    async with upstream("http", "too_many") as (source, _), runtime(source) as rt:
        with pytest.raises(MyceliumSourceError) as caught:
            await rt.acquire()
    assert "it lists more than 2000 tools" in str(caught.value.__cause__)


async def test_a_listing_that_never_ends_fails_to_acquire_saying_so() -> None:
    async with upstream("http", "endless") as (source, _), runtime(source) as rt:
        with pytest.raises(MyceliumSourceError) as caught:
            await rt.acquire()
    assert "did not end within 200 pages" in str(caught.value.__cause__)
