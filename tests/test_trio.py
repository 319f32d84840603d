"""The runtime runs under trio too: every task it starts is owned by its anyio task group.

Monty's pool is asyncio-only, so these runs use sandboxes of plain anyio code: the runtime,
its leases, admission, deadlines, unacknowledged stops, sources, view builds, lost leases and
sync operations in worker threads are what is under test.
"""

from __future__ import annotations

import gc
import threading
import warnings

import anyio
import anyio.to_thread
import pytest

from mycelium import (
    AcquireContext,
    Acquired,
    ExecutionOptions,
    InvocationContext,
    Lease,
    Module,
    Runtime,
    source,
)
from mycelium.failures import DeadlineExceeded
from mycelium.mcp import McpAuthority, create_mcp_catalog
from mycelium.sandbox.monty import MontySandbox
from mycelium.testing import direct_sandbox
from tests.support.probes import Probe, ProbeSandbox, ignore


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


def notes() -> Module:
    module = Module(id="notes-v1", name="notes")
    kept: list[str] = []

    @module.operation(access="write")
    async def add(text: str, ctx: InvocationContext) -> int:
        """Keep a note."""
        kept.append(text)
        return ctx.operation_ordinal or 0

    @module.operation(access="read")
    def count() -> int:  # sync: runs in a worker thread
        """How many notes there are."""
        return len(kept)

    return module


async def test_an_execute_calls_async_and_sync_operations_under_trio() -> None:
    async def program(bindings: object, signal: object) -> object:
        first = await bindings.notes.add(text="a")  # type: ignore[attr-defined]
        second = await bindings.notes.add(text="b")  # type: ignore[attr-defined]
        return [first, second, await bindings.notes.count()]  # type: ignore[attr-defined]

    async with Runtime(modules=[notes()], sandbox=direct_sandbox(program)) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run("ignored", tool_call_id="call-1")
    assert (result.is_error, result.value) == (False, [0, 1, 2])


async def test_an_unacknowledged_stop_keeps_its_slot_in_the_runtimes_task_group_until_it_settles() -> None:
    ignored = Probe(ignore)
    options = ExecutionOptions(timeout_ms=50, abort_grace_ms=10, sandbox_capacity=1)
    async with Runtime(sandbox=ProbeSandbox(p=ignored), execution=options) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("p")
        assert result.failure == DeadlineExceeded(timeout_ms=50, acknowledged=False)
        assert runtime._slots.unsettled == 1  # the backing work still runs, owned by the runtime
        ignored.release.set()
        with anyio.fail_after(10):
            await runtime.close()
        assert runtime._slots.unsettled == 0
    assert ignored.settled.is_set()


async def test_sources_acquire_and_release_and_acquires_at_once_share_one_view_under_trio() -> None:
    released: list[str] = []

    async def acquire(context: AcquireContext) -> Acquired:
        async def release() -> None:
            released.append("v1")

        return Acquired(version="v1", modules=[notes()], release=release)

    async with Runtime(sources=[source(id="live", acquire=acquire)], sandbox=direct_sandbox(lambda b, s: 1)) as runtime:
        leases: list[Lease] = []

        async def take() -> None:
            leases.append(await runtime.acquire())

        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(take)
        assert len({id(lease.catalog) for lease in leases}) == 1
        for lease in leases:
            await lease.release()
    assert released == ["v1"]


async def test_a_lease_garbage_collected_under_trio_gives_its_hold_back() -> None:
    async with Runtime(modules=[notes()], sandbox=direct_sandbox(lambda b, s: 1)) as runtime:
        lease: Lease | None = await runtime.acquire()
        assert runtime.leases_held == 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            del lease
            gc.collect()
        with anyio.fail_after(10):
            await runtime.close()  # returns only once the lost lease's hold came back
        assert runtime.leases_held == 0


async def test_a_cancelled_runs_sync_operation_keeps_its_slot_until_its_thread_returns_under_trio() -> None:
    entered, release = threading.Event(), threading.Event()
    module = Module(id="slow-v1", name="slow")

    @module.operation(access="read")
    def block() -> str:
        """Block until released."""
        entered.set()
        release.wait(10)
        return "done"

    async def program(bindings: object, signal: object) -> object:
        return await bindings.slow.block()  # type: ignore[attr-defined]

    options = ExecutionOptions(timeout_ms=60_000, abort_grace_ms=10)
    async with Runtime(modules=[module], sandbox=direct_sandbox(program), execution=options) as runtime:
        caller = anyio.CancelScope()
        stopped = anyio.Event()

        async def run(lease: Lease) -> None:
            with caller:
                await lease.execute_tool.run("p")
            stopped.set()

        async with runtime.lease() as lease, anyio.create_task_group() as group:
            group.start_soon(run, lease)
            await anyio.to_thread.run_sync(entered.wait, 10)
            caller.cancel()
            with anyio.fail_after(10):
                await stopped.wait()  # the caller is answered after the grace, unacknowledged
            assert runtime._slots.unsettled == 1  # the thread still runs, and its slot is still held
            release.set()
        with anyio.fail_after(10):
            await runtime._slots.wait_settled()
        assert runtime._slots.unsettled == 0


async def test_an_asyncio_only_sandbox_is_refused_when_a_runtime_is_entered_under_trio() -> None:
    sandbox = MontySandbox()
    with pytest.raises(RuntimeError, match="the monty sandbox runs only under asyncio"):
        async with Runtime(modules=[notes()], sandbox=sandbox):
            pass
    await sandbox.aclose()


async def test_an_asyncio_only_sandbox_is_refused_when_an_mcp_catalog_is_entered_under_trio() -> None:
    authority = McpAuthority(grants={"notes-v1": "read"}, sources=[notes()])
    catalog = create_mcp_catalog(load=lambda principal: authority, sandbox=MontySandbox())
    with pytest.raises(RuntimeError, match="the monty sandbox runs only under asyncio"):
        async with catalog:
            pass
