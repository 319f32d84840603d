"""The MCP catalog's life: entered once, and closing everything it opened however it is left."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from mycelium import Module
from mycelium.mcp import McpAuthority, MemoryConnections, create_mcp_catalog
from mycelium.testing import RejectingSandbox

from .conftest import ALICE


def ping_module() -> Module:
    module = Module(id="ping-v1", name="ping")

    @module.operation(access="read")
    def ping() -> str:
        """Answer."""
        return "pong"

    return module


class ClosingSandbox(RejectingSandbox):
    def __init__(self, closing: list[str]) -> None:
        super().__init__()
        self.closing = closing

    async def aclose(self) -> None:
        self.closing.append("sandbox started")
        await anyio.lowlevel.checkpoint()  # where a cancellation would cut a close short
        self.closing.append("sandbox finished")


class ClosingConnections(MemoryConnections):
    def __init__(self, closing: list[str]) -> None:
        super().__init__()
        self.closing = closing

    async def aclose(self) -> None:
        self.closing.append("store started")
        await anyio.lowlevel.checkpoint()
        self.closing.append("store finished")


@pytest.mark.parametrize("served", [False, True], ids=["before-serving", "after-a-principal-ran"])
async def test_a_catalog_left_because_its_scope_was_cancelled_closes_its_sandbox_and_store(served: bool) -> None:
    closing: list[str] = []
    authority = McpAuthority(grants={"ping-v1": "read"}, sources=[ping_module()])
    catalog = create_mcp_catalog(
        load=lambda principal: authority, sandbox=ClosingSandbox(closing), connections=ClosingConnections(closing)
    )
    with anyio.fail_after(10), anyio.CancelScope() as scope:
        async with catalog:
            if served:
                await catalog.definition(ALICE, authority)  # alice's runtime runs in the catalog's task group
            scope.cancel()  # the server is stopped by a signal
            await anyio.sleep_forever()
    assert closing == ["sandbox started", "sandbox finished", "store started", "store finished"]


async def test_a_catalog_runs_once() -> None:
    authority = McpAuthority(grants={}, sources=[])
    catalog = create_mcp_catalog(load=lambda principal: authority, sandbox=RejectingSandbox())
    async with catalog:
        pass
    with pytest.raises(RuntimeError, match="runs once"):
        async with catalog:
            pass
