"""The MCP catalog's life: entered once, closing everything it opened however it is left, and the stores a
deployment gives it before it runs."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from mycelium import Access, FailureEvidence, Module, OperationEvidence, ToolCall
from mycelium.mcp import (
    McpAuthority,
    McpCatalog,
    McpExecutionContext,
    MemoryConnections,
    SqliteConnections,
    create_mcp_catalog,
)
from mycelium.mcp._principals import principal_key
from mycelium.sandbox.monty import MontySandbox
from mycelium.suspensions import SqliteSuspensions, Suspensions
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


def monty_catalog(**options: object) -> McpCatalog:
    authority = McpAuthority(grants={"ping-v1": "read"}, sources=[ping_module()])
    return create_mcp_catalog(load=lambda principal: authority, sandbox=MontySandbox(), **options)  # type: ignore[arg-type]


def durable_suspensions(path: Path) -> Suspensions:
    return Suspensions(store=SqliteSuspensions(path / "s.sqlite"), key=b"k" * 32)


async def test_use_stores_keeps_the_connections_and_paused_runs_in_the_stores_given(tmp_path: Path) -> None:
    catalog = monty_catalog()
    suspensions = durable_suspensions(tmp_path)
    catalog.use_stores(connections=SqliteConnections(tmp_path / "c.sqlite"), suspensions=suspensions)
    assert catalog.suspensions is suspensions
    async with catalog:
        assert await catalog.open("conn-1", ALICE, bound=4, keep=()) == []
    other = SqliteConnections(tmp_path / "c.sqlite")  # what another replica on the same file sees
    try:
        assert await other.resume("conn-1", principal_key(ALICE))
    finally:
        await other.aclose()


async def test_a_catalog_closes_the_stores_use_stores_gave_it(tmp_path: Path) -> None:
    closing: list[str] = []
    catalog = create_mcp_catalog(load=lambda principal: McpAuthority(grants={}), sandbox=RejectingSandbox())
    catalog.use_stores(connections=ClosingConnections(closing), suspensions=None)
    async with catalog:
        pass
    assert closing == ["store started", "store finished"]


async def test_use_stores_is_refused_once_the_catalog_was_entered_or_closed(tmp_path: Path) -> None:
    catalog = monty_catalog()
    async with catalog:
        with pytest.raises(RuntimeError, match="before the catalog is entered"):
            catalog.use_stores(connections=MemoryConnections(), suspensions=Suspensions())
    with pytest.raises(RuntimeError, match="before the catalog is entered"):
        catalog.use_stores(connections=MemoryConnections(), suspensions=Suspensions())
    closed = monty_catalog()
    await closed.aclose()
    with pytest.raises(RuntimeError, match="before the catalog is entered"):
        closed.use_stores(connections=MemoryConnections(), suspensions=Suspensions())


async def test_use_stores_never_replaces_durable_stores_the_app_chose(tmp_path: Path) -> None:
    own_connections = SqliteConnections(tmp_path / "own.sqlite")
    with_connections = monty_catalog(connections=own_connections)
    with pytest.raises(ValueError, match="already keeps its connections in a SqliteConnections"):
        with_connections.use_stores(connections=MemoryConnections(), suspensions=Suspensions())
    own_suspensions = durable_suspensions(tmp_path)
    with_suspensions = monty_catalog(suspensions=own_suspensions)
    with pytest.raises(ValueError, match="already keeps its paused runs in a SqliteSuspensions"):
        with_suspensions.use_stores(connections=MemoryConnections(), suspensions=Suspensions())
    assert with_suspensions.suspensions is own_suspensions  # a refusal changes nothing
    await with_connections.aclose()
    await with_suspensions.aclose()


async def test_use_stores_needs_suspensions_exactly_when_the_catalog_pauses_runs(tmp_path: Path) -> None:
    pausing = monty_catalog()
    with pytest.raises(ValueError, match="give its suspensions too"):
        pausing.use_stores(connections=MemoryConnections(), suspensions=None)
    waiting = create_mcp_catalog(load=lambda principal: McpAuthority(grants={}), sandbox=RejectingSandbox())
    assert waiting.suspensions is None
    with pytest.raises(ValueError, match="cannot pause runs"):
        waiting.use_stores(connections=MemoryConnections(), suspensions=Suspensions())
    with pytest.raises(ValueError, match="connections must be a ConnectionStore"):
        waiting.use_stores(connections=object(), suspensions=None)  # type: ignore[arg-type]


async def test_the_catalogs_evidence_hooks_receive_every_principals_failures_under_the_models_reference() -> None:
    module = Module(id="ledger-v1", name="ledger")

    @module.operation(access="read")
    def total() -> int:
        """Fails on the host."""
        raise ConnectionError("the ledger database is down")

    operations: list[OperationEvidence] = []
    executes: list[FailureEvidence] = []
    authority = McpAuthority(grants={"ledger-v1": "read"}, sources=[module])
    catalog = create_mcp_catalog(
        load=lambda principal: authority,
        sandbox=MontySandbox(),
        on_operation_error=operations.append,
        on_sandbox_failure=executes.append,
    )
    async with catalog:
        context = McpExecutionContext(ALICE, None, authority, Access(grants=authority.grants), "call-9")
        call = ToolCall(id="call-9", name="execute", arguments={"code": "return await ledger.total()"})
        result = await catalog.execute(call, context)
    assert result.reference is not None
    [operation] = operations
    assert (operation.reference, operation.path, type(operation.exception)) == (
        result.reference,
        "ledger.total",
        ConnectionError,
    )
    [failed] = executes
    assert (failed.reference, failed.tool_call_id, failed.failure.code) == (
        result.reference,
        "call-9",
        "capability-failed",
    )


def test_a_catalogs_evidence_hook_must_be_callable() -> None:
    with pytest.raises(ValueError, match="on_sandbox_failure must be callable"):
        create_mcp_catalog(load=lambda principal: McpAuthority(grants={}), sandbox=MontySandbox(), on_sandbox_failure=3)  # type: ignore[arg-type]


async def test_observers_added_before_serving_get_the_evidence_beside_the_apps_own_and_none_after() -> None:
    module = Module(id="ledger-v1", name="ledger")
    apps: list[FailureEvidence] = []
    added: list[FailureEvidence] = []

    def raising(evidence: FailureEvidence) -> None:
        raise RuntimeError("an observer that fails changes nothing for the others")

    authority = McpAuthority(grants={"ledger-v1": "read"}, sources=[module])
    catalog = create_mcp_catalog(
        load=lambda principal: authority, sandbox=MontySandbox(), on_sandbox_failure=apps.append
    )
    catalog.observe(on_sandbox_failure=raising)
    catalog.observe(on_sandbox_failure=added.append)
    async with catalog:
        context = McpExecutionContext(ALICE, None, authority, Access(grants=authority.grants))
        result = await catalog.execute(ToolCall(id=None, name="execute", arguments={"code": "return ("}), context)
        with pytest.raises(RuntimeError, match="before the catalog is entered"):
            catalog.observe(on_sandbox_failure=added.append)
    assert [evidence.reference for evidence in apps] == [result.reference]
    assert [evidence.reference for evidence in added] == [result.reference]
