"""A snapshot owns its upstream session: list changes make new revisions, release and failures leave nothing behind."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import anyio
import pytest

from mycelium import Module, MyceliumSourceError, Runtime, operation
from mycelium.mcp import mcp_source
from mycelium.sandbox.monty import MontySandbox
from tests.support.loopback import serve_asgi

from .conftest import TRANSPORTS, children, runtime, stdio_source, upstream

SESSION_TASK = "mycelium upstream MCP session"


def session_tasks() -> list[asyncio.Task[Any]]:
    return [task for task in asyncio.all_tasks() if task.get_name() == SESSION_TASK]


def paths(lease: Any) -> list[str]:
    return [target.path for target in lease.catalog.targets]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_list_changed_makes_the_next_lease_a_new_revision_while_a_lease_in_flight_keeps_its_tools(
    transport: str,
) -> None:
    before = children()
    async with upstream(transport) as (source, _), runtime(source) as rt, rt.lease() as first:
        changed = await first.execute_tool.run("return await up.change_tools()")
        assert changed.value == "changed"
        async with rt.lease() as second:
            assert second.catalog.revision > first.catalog.revision
            assert "up.added_later" in paths(second)
            assert "up.added_later" not in paths(first)
            assert (await second.execute_tool.run("return await up.added_later()")).value == "called added_later"
            # The first lease still calls the tools it captured, over the session it captured.
            assert (await first.execute_tool.run("return await up.echo(text='old')")).value == "old"
            # Both snapshots share one session: a stdio server keeps its one process (and its state).
            assert len(children() - before) == (1 if transport == "stdio" else 0)
    assert children() == before
    assert session_tasks() == []


async def test_release_closes_the_session_and_ends_the_stdio_child() -> None:
    before = children()
    async with runtime(stdio_source()) as rt:
        async with rt.lease() as lease:
            assert (await lease.execute_tool.run("return await up.echo(text='x')")).value == "x"
            assert len(children() - before) == 1
            assert len(session_tasks()) == 1
    assert children() == before
    assert session_tasks() == []


async def test_a_server_that_never_answers_initialize_fails_the_lease_within_connect_timeout() -> None:
    before = children()
    async with runtime(stdio_source("hang", connect_timeout_ms=300)) as rt:
        with pytest.raises(MyceliumSourceError) as caught:
            await rt.acquire()
    cause = caught.value.__cause__
    assert caught.value.source_id == "up"
    assert isinstance(cause, MyceliumSourceError)
    assert "no answer within connect_timeout_ms=300 while connecting and initializing" in str(cause)
    assert children() == before
    assert session_tasks() == []


async def test_a_cancelled_acquisition_of_a_hanging_server_leaves_no_child_and_no_task() -> None:
    before = children()
    async with runtime(stdio_source("hang")) as rt:
        with anyio.move_on_after(0.5) as scope:
            await rt.acquire()
        assert scope.cancelled_caught
    assert children() == before
    assert session_tasks() == []


async def hang(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An ASGI app that takes every request and answers none (lifespan aside)."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    while (await receive())["type"] != "http.disconnect":
        pass


async def test_an_http_server_that_never_answers_initialize_fails_the_lease_within_connect_timeout() -> None:
    async with serve_asgi(hang) as base:
        async with runtime(mcp_source("up", url=f"{base}/mcp", connect_timeout_ms=300)) as rt:
            with pytest.raises(MyceliumSourceError) as caught:
                await rt.acquire()
    assert "connect_timeout_ms=300" in str(caught.value.__cause__)
    assert session_tasks() == []


async def test_a_crashed_server_is_a_host_failure_and_the_next_lease_connects_again() -> None:
    before = children()
    async with runtime(stdio_source()) as rt:
        async with rt.lease() as lease:
            crashed = await lease.execute_tool.run("return await up.crash()")
            assert crashed.failure is not None
            assert crashed.failure.code == "capability-failed"
        async with rt.lease() as lease:
            assert (await lease.execute_tool.run("return await up.echo(text='back')")).value == "back"
    assert children() == before


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def local_module() -> Module:
    return Module(id="local", name="local", operations={"ping": operation(execute=lambda: "pong", access="read")})


async def test_a_server_that_fails_to_acquire_fails_the_lease_naming_it() -> None:
    down = mcp_source("down", url=f"http://127.0.0.1:{unused_port()}/mcp")
    async with Runtime(modules=[local_module()], sources=[down], sandbox=MontySandbox()) as rt:
        with pytest.raises(MyceliumSourceError) as caught:
            await rt.acquire()
    assert caught.value.source_id == "down"
    assert "source 'down' failed to acquire" in str(caught.value.__cause__)


async def test_an_optional_server_that_fails_is_logged_and_gives_no_tools_and_is_tried_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    down = mcp_source("down", url=f"http://127.0.0.1:{unused_port()}/mcp", optional=True)
    caplog.set_level(logging.WARNING, logger="mycelium")
    async with Runtime(modules=[local_module()], sources=[down], sandbox=MontySandbox()) as rt:
        async with rt.lease() as lease:
            assert paths(lease) == ["local.ping"]
        async with rt.lease() as lease:
            assert paths(lease) == ["local.ping"]
    skipped = [record.getMessage() for record in caplog.records if "optional MCP server 'down'" in record.getMessage()]
    assert len(skipped) == 2  # one per lease: each tries again
    assert session_tasks() == []
