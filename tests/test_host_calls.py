"""Cancellation stays honest for sync operations, which run in worker threads.

Python cannot stop a thread. So a sync operation that has started keeps running to the
end, and everything that waits for it waits for the real work: its call settles only when
the thread returns, the run is reported ``acknowledged=False``, its sandbox slot stays
taken and ``runtime.close()`` waits. Threads stay within anyio's thread limiter. A host
makes a sync operation stoppable by polling ``ctx.signal.aborted``.

The threads block on ``threading.Event`` objects the tests control; ordering is
established with events and ``anyio.wait_all_tasks_blocked()``, never with sleeps. The
only timed waits are the deadlines and grace periods under test.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread
import pytest

from mycelium import ExecutionOptions, InvocationContext, Module, Runtime, operation
from mycelium._signals import AbortController
from mycelium.failures import Cancelled, DeadlineExceeded, SandboxBusy
from mycelium.sandbox.monty import MontySandbox
from tests.support.probes import closing

TIMEOUT_MS = 500
GRACE_MS = 100
# A bound on waits that must end (a thread the test released); never reached when all is well.
SETTLE_BOUND_S = 10
BLOCK_BOUND_S = 30  # a test that fails never leaves a thread blocked for ever


class Blocker:
    """A sync operation's thread, as the test sees it: entered, released, finished."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.saw_abort = False

    def block(self) -> str:
        self.entered.set()
        try:
            self.release.wait(BLOCK_BOUND_S)
            return "done"
        finally:
            self.finished.set()

    def poll(self, ctx: InvocationContext) -> str:
        """A cancellable sync operation: it polls the run's signal and returns early."""
        self.entered.set()
        try:
            while not ctx.signal.aborted:
                if self.release.wait(0.005):
                    return "done"
            self.saw_abort = True
            return "stopped early"
        finally:
            self.finished.set()


class WatchedMonty(MontySandbox):
    """The real sandbox, recording whether the blocked thread had finished when it was closed."""

    def __init__(self, blocker: Blocker) -> None:
        super().__init__()
        self._blocker = blocker
        self.closing = anyio.Event()
        self.finished_when_closed: list[bool] = []

    async def aclose(self) -> None:
        if not self.closing.is_set():
            self.finished_when_closed.append(self._blocker.finished.is_set())
            self.closing.set()
        await super().aclose()


@asynccontextmanager
async def sync_host(blocker: Blocker) -> AsyncIterator[tuple[Runtime, WatchedMonty]]:
    """A runtime over a warm Monty pool with one slot and a module of blocking sync operations."""
    slow = Module(id="slow-v1", name="slow")
    slow.operation(access="read")(blocker.block)
    slow.operation(access="read")(blocker.poll)
    sandbox = WatchedMonty(blocker)
    await sandbox.__aenter__()  # warm: the deadline must not be spent starting worker processes
    options = ExecutionOptions(timeout_ms=TIMEOUT_MS, abort_grace_ms=GRACE_MS, sandbox_capacity=1, admission_wait_ms=50)
    async with Runtime(modules=[slow], sandbox=sandbox, execution=options) as runtime:
        try:
            yield runtime, sandbox
        finally:
            blocker.release.set()
            with anyio.fail_after(SETTLE_BOUND_S):
                await runtime.close()


async def test_a_sync_operation_past_the_deadline_is_unacknowledged_and_holds_its_slot_until_it_returns() -> None:
    blocker = Blocker()
    async with sync_host(blocker) as (runtime, sandbox):
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("return await slow.block()")
            assert result.failure == DeadlineExceeded(timeout_ms=TIMEOUT_MS, acknowledged=False)
            assert blocker.entered.is_set()
            assert not blocker.finished.is_set()
            # The thread still runs, so its run still holds the runtime's only slot.
            busy = await lease.execute_tool.run("return 1")
            assert isinstance(busy.failure, SandboxBusy)
            assert busy.failure.capacity == runtime.admission.capacity == 1

        async with closing(runtime) as closed:
            # close() is waiting for the run, not closing the sandbox under a running thread.
            assert runtime.closed
            assert not closed.is_set()
            assert not sandbox.closing.is_set()
            blocker.release.set()
            with anyio.fail_after(SETTLE_BOUND_S):
                await closed.wait()
        assert sandbox.finished_when_closed == [True]


async def test_the_slot_of_a_sync_operation_that_outlived_its_run_opens_when_its_thread_returns() -> None:
    blocker = Blocker()
    async with sync_host(blocker) as (runtime, _), runtime.lease() as lease:
        result = await lease.execute_tool.run("return await slow.block()")
        assert result.failure == DeadlineExceeded(timeout_ms=TIMEOUT_MS, acknowledged=False)
        blocker.release.set()
        with anyio.fail_after(SETTLE_BOUND_S):
            await anyio.to_thread.run_sync(blocker.finished.wait)
        # Settling (the call's task, then the run) takes a few loop turns after the thread.
        await anyio.wait_all_tasks_blocked()
        after = await lease.execute_tool.run("return 1")
        assert (after.is_error, after.value) == (False, 1)


async def test_a_sync_operation_that_polls_its_signal_returns_early_and_the_deadline_is_acknowledged() -> None:
    blocker = Blocker()
    async with sync_host(blocker) as (runtime, _), runtime.lease() as lease:
        result = await lease.execute_tool.run("return await slow.poll()")
        assert result.failure == DeadlineExceeded(timeout_ms=TIMEOUT_MS, acknowledged=True)
        assert blocker.saw_abort
        assert blocker.finished.is_set()
        after = await lease.execute_tool.run("return 2")
        assert (after.is_error, after.value) == (False, 2)


async def test_a_caller_abort_during_a_sync_operation_is_cancelled_unacknowledged_until_its_thread_returns() -> None:
    blocker = Blocker()
    controller = AbortController()
    async with sync_host(blocker) as (runtime, _), runtime.lease() as lease:
        results: list[object] = []

        async def run() -> None:
            result = await lease.execute_tool.run("return await slow.block()", signal=controller.signal)
            results.append(result.failure)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await anyio.to_thread.run_sync(blocker.entered.wait, BLOCK_BOUND_S)
            controller.abort("user pressed stop")
        assert results == [Cancelled(acknowledged=False, by="caller")]
        assert not blocker.finished.is_set()


# ---------------------------------------------------------------------------------------------
# One call, cancelled: the thread is waited for, and threads stay within the limiter


def _context(signal: AbortController | None = None) -> InvocationContext:
    return InvocationContext(
        execution_id="exec-1",
        tool_call_id=None,
        session_id=None,
        operation_ordinal=None,
        module_id="m",
        operation="op",
        signal=(signal or AbortController()).signal,
    )


async def _call_then_record(fn: Callable[[], object], settled: list[str], scope: anyio.CancelScope) -> None:
    op = operation(execute=fn)
    with scope:
        try:
            await op.call({}, _context())
            settled.append("returned")
        except anyio.get_cancelled_exc_class():
            settled.append("cancelled")
            raise


async def test_a_cancelled_sync_call_settles_only_once_its_thread_has_returned() -> None:
    blocker = Blocker()
    settled: list[str] = []
    scope = anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_call_then_record, blocker.block, settled, scope)
        await anyio.to_thread.run_sync(blocker.entered.wait, BLOCK_BOUND_S)
        scope.cancel()
        await anyio.wait_all_tasks_blocked()
        assert settled == []  # still waiting for the thread, though cancelled
        assert not blocker.finished.is_set()
        blocker.release.set()
    assert settled == ["cancelled"]  # the cancellation is delivered once the work is over
    assert blocker.finished.is_set()


@pytest.mark.parametrize("cancel", ["anyio scope", "task.cancel()"])
async def test_cancelled_sync_calls_keep_their_threads_within_the_thread_limiter(cancel: str) -> None:
    limiter = anyio.to_thread.current_default_thread_limiter()
    tokens = limiter.total_tokens
    limiter.total_tokens = 2
    blockers = [Blocker() for _ in range(4)]
    try:
        await _calls_past_the_limiter(limiter, blockers, cancel)
    finally:
        for blocker in blockers:
            blocker.release.set()
        limiter.total_tokens = tokens


async def _calls_past_the_limiter(limiter: anyio.CapacityLimiter, blockers: list[Blocker], cancel: str) -> None:
    settled: list[str] = []
    tasks: list[asyncio.Task[None]] = []
    scopes = [anyio.CancelScope() for _ in blockers]
    async with anyio.create_task_group() as tg:
        for blocker, scope in zip(blockers, scopes, strict=True):
            if cancel == "anyio scope":
                tg.start_soon(_call_then_record, blocker.block, settled, scope)
            else:
                call = _call_then_record(blocker.block, settled, anyio.CancelScope())
                tasks.append(asyncio.get_running_loop().create_task(call))
        for blocker in blockers[:2]:
            await anyio.to_thread.run_sync(blocker.entered.wait, BLOCK_BOUND_S, limiter=anyio.CapacityLimiter(1))
        await anyio.wait_all_tasks_blocked()
        if cancel == "anyio scope":
            for scope in scopes:
                scope.cancel()
        else:
            for task in tasks:
                task.cancel()
        await anyio.wait_all_tasks_blocked()
        # The two running threads keep their tokens: nothing else starts, and nobody settles.
        assert limiter.borrowed_tokens == 2
        assert [blocker.entered.is_set() for blocker in blockers] == [True, True, False, False]
        assert settled.count("cancelled") == 2  # the two that never got a thread
        for blocker in blockers:
            blocker.release.set()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
    assert settled == ["cancelled"] * 4
    # A call cancelled before its thread started never runs, not even later.
    assert [blocker.entered.is_set() for blocker in blockers] == [True, True, False, False]
    assert limiter.borrowed_tokens == 0
