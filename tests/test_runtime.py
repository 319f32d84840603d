"""Runtime and lease lifecycle: options, acquire/release, close, scoped forms."""

from __future__ import annotations

import gc
import logging
import warnings
from collections.abc import Iterator

import anyio
import anyio.lowlevel
import pytest

from mycelium import (
    AbortSignal,
    AcquireContext,
    Acquired,
    ExecutionOptions,
    Lease,
    LeaseReleased,
    Module,
    Runtime,
    RuntimeClosed,
    Session,
    ToolCall,
    UnknownOperation,
    operation,
    source,
)
from mycelium.sandbox import SandboxRequest
from mycelium.testing import RejectingSandbox, direct_sandbox, rejecting_sandbox
from tests.support.probes import Probe, ProbeSandbox, closing, ignore


def demo_module() -> Module:
    return Module(
        id="example-demo",
        name="demo",
        operations={"ping": operation(execute=lambda: {"value": "pong"}, access="read")},
    )


def test_runtime_refuses_an_object_that_is_not_a_sandbox() -> None:
    with pytest.raises(ValueError, match="sandbox"):
        Runtime(modules=[demo_module()], sandbox=object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("execution", {"timeout_ms": 5}),
        ("session", "session-1"),
        ("on_operation_error", 42),
        ("modules", demo_module()),
    ],
)
def test_runtime_refuses_bad_options_naming_the_option(option: str, value: object) -> None:
    options: dict[str, object] = {"modules": [demo_module()], "sandbox": rejecting_sandbox(), option: value}
    with pytest.raises(ValueError, match=option):
        Runtime(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["timeout_ms", "max_code_bytes", "max_result_bytes"])
@pytest.mark.parametrize("value", [0, -1, 1.5, "10", True])
def test_execution_options_refuse_non_positive_ints_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        ExecutionOptions(**{field: value})  # type: ignore[arg-type]


def test_session_id_must_be_a_non_empty_string() -> None:
    with pytest.raises(ValueError, match="Session id"):
        Session("")


async def test_a_lease_exposes_revision_catalog_and_execute_tool() -> None:
    async with Runtime(modules=[demo_module()], sandbox=rejecting_sandbox()) as runtime:
        lease = await runtime.acquire()
        try:
            assert lease.revision == 1
            assert [entry.path for entry in lease.catalog.entries] == ["demo.ping"]
            assert lease.execute_tool.definition.name == "execute"
        finally:
            await lease.release()


async def test_release_is_idempotent() -> None:
    async with Runtime(modules=[demo_module()], sandbox=rejecting_sandbox()) as runtime:
        lease = await runtime.acquire()
        await lease.release()
        await lease.release()
        assert lease.released


async def test_using_a_released_lease_raises_lease_released() -> None:
    async with Runtime(modules=[demo_module()], sandbox=rejecting_sandbox()) as runtime:
        lease = await runtime.acquire()
        tool = lease.execute_tool
        prepared = tool.prepare(ToolCall(id="c1", name="execute", arguments={"code": "1"}))
        await lease.release()
        with pytest.raises(LeaseReleased):
            _ = lease.execute_tool
        with pytest.raises(LeaseReleased):
            _ = lease.catalog
        with pytest.raises(LeaseReleased):
            await tool.run("1")
        with pytest.raises(LeaseReleased):
            await prepared.execute()


async def test_scoped_lease_is_released_even_when_the_body_raises() -> None:
    async with Runtime(modules=[demo_module()], sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(RuntimeError, match="boom"):
            async with runtime.lease() as lease:
                raise RuntimeError("boom")
        assert lease.released


async def test_acquire_after_close_raises_runtime_closed() -> None:
    runtime = Runtime(modules=[demo_module()], sandbox=rejecting_sandbox())
    await runtime.close()
    with pytest.raises(RuntimeClosed):
        await runtime.acquire()
    with pytest.raises(RuntimeClosed):
        await runtime.invoke("example-demo", "ping")


async def test_close_waits_until_every_held_lease_is_released() -> None:
    async with Runtime(modules=[demo_module()], sandbox=rejecting_sandbox()) as runtime:
        lease = await runtime.acquire()
        async with closing(runtime) as closed:
            assert runtime.closed
            assert not closed.is_set(), "close() returned while a lease was still held"
            with pytest.raises(RuntimeClosed):
                await runtime.acquire()
            await lease.release()
        assert closed.is_set()


async def test_release_waits_for_an_execute_already_running_on_the_lease() -> None:
    started = anyio.Event()
    proceed = anyio.Event()

    async def slow(bindings: object, signal: object) -> str:
        started.set()
        await proceed.wait()
        return "done"

    async with Runtime(modules=[demo_module()], sandbox=direct_sandbox(slow)) as runtime:
        lease = await runtime.acquire()
        results = []
        released = anyio.Event()

        async def run() -> None:
            results.append(await lease.execute_tool.run("x"))

        async def release() -> None:
            await lease.release()
            released.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            tg.start_soon(release)
            await anyio.wait_all_tasks_blocked()
            assert not released.is_set()
            proceed.set()
        assert released.is_set()
        assert results[0].text == '"done"'


async def test_invoke_runs_one_operation_outside_any_execute() -> None:
    async with Runtime(modules=[demo_module()], sandbox=rejecting_sandbox()) as runtime:
        assert await runtime.invoke("example-demo", "ping") == {"value": "pong"}


async def test_invoke_of_an_unknown_module_or_operation_raises_unknown_operation() -> None:
    async with Runtime(modules=[demo_module()], sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(UnknownOperation, match="nope"):
            await runtime.invoke("nope", "ping")
        with pytest.raises(UnknownOperation, match="pong"):
            await runtime.invoke("example-demo", "pong")


async def test_modules_registered_after_construction_do_not_change_the_installed_graph() -> None:
    module = demo_module()
    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        module.add("later", operation(execute=lambda: 1))
        async with runtime.lease() as lease:
            assert [entry.path for entry in lease.catalog.entries] == ["demo.ping"]


# ------------------------------------------------------------------------------------------
# A forgotten lease: close() says what it waits for; a collected lease warns and gives back
# ------------------------------------------------------------------------------------------


class Captured(logging.Handler):
    """Collects the mycelium logger's warnings and signals the first one from ``close()``."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.close_warned = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(("runtime.close()", "leaving the runtime")):
            self.messages.append(message)
            self.close_warned.set()
        elif "garbage-collected" in message:
            self.messages.append(message)


@pytest.fixture
def warned() -> Iterator[Captured]:
    handler = Captured()
    logger = logging.getLogger("mycelium")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


async def forget_a_lease(runtime: Runtime) -> Lease:
    return await runtime.acquire()  # the line a warning must point at


async def test_close_warns_after_the_configured_wait_naming_each_unreleased_lease_and_where_it_was_acquired(
    warned: Captured,
) -> None:
    async with Runtime(modules=[demo_module()], sandbox=rejecting_sandbox(), close_warning_ms=20) as runtime:
        forgotten = await forget_a_lease(runtime)
        async with runtime.lease():  # released before close: never named
            pass
        async with closing(runtime) as closed:
            with anyio.fail_after(10):
                await warned.close_warned.wait()
            assert not closed.is_set()
            [message] = warned.messages
            assert message.startswith("runtime.close() has waited 0.02 s for 1 unreleased lease(s): ")
            assert "the lease of revision 1 acquired at " in message
            line = forget_a_lease.__code__.co_firstlineno + 1
            assert f"{__file__}:{line} in forget_a_lease <- {__file__}:" in message
            assert "in test_close_warns_after_the_configured_wait" in message
            assert "async with runtime.lease()" in message
            await forgotten.release()
        assert closed.is_set()
        assert len(warned.messages) == 1  # said once, not repeated


async def test_a_close_that_ends_before_the_warning_wait_logs_nothing(warned: Captured) -> None:
    async with Runtime(modules=[demo_module()], sandbox=rejecting_sandbox(), close_warning_ms=60_000) as runtime:
        lease = await runtime.acquire()
        async with anyio.create_task_group() as tg:
            tg.start_soon(runtime.close)
            await anyio.wait_all_tasks_blocked()
            await lease.release()
        assert warned.messages == []


@pytest.mark.parametrize("value", [0, -1, 1.5, "5000", True])
def test_close_warning_ms_must_be_a_positive_int(value: object) -> None:
    with pytest.raises(ValueError, match="close_warning_ms"):
        Runtime(sandbox=rejecting_sandbox(), close_warning_ms=value)  # type: ignore[arg-type]


async def test_a_lease_garbage_collected_unreleased_warns_and_gives_its_hold_back(warned: Captured) -> None:
    async with Runtime(modules=[demo_module()], sandbox=rejecting_sandbox(), close_warning_ms=60_000) as runtime:
        lease = await forget_a_lease(runtime)
        gc.disable()  # collected inside pytest.warns, not by chance just before
        try:
            del lease
            with pytest.warns(
                ResourceWarning, match="revision 1 acquired at .* garbage-collected without being released"
            ):
                gc.collect()
        finally:
            gc.enable()
        with anyio.fail_after(10):
            await runtime.close()  # the lost lease's hold was given back: close() does not hang
        [message] = warned.messages
        assert "was garbage-collected without being released" in message
        assert f"{__file__}:" in message


async def test_a_released_lease_that_is_collected_warns_nothing(warned: Captured) -> None:
    async with Runtime(modules=[demo_module()], sandbox=rejecting_sandbox()) as runtime:
        lease: Lease | None = await runtime.acquire()
        assert lease is not None
        await lease.release()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            del lease
            gc.collect()
        await runtime.close()
        assert warned.messages == []


async def test_close_warns_about_sandbox_runs_still_settling_after_an_unacknowledged_stop(warned: Captured) -> None:
    ignored = Probe(ignore)
    options = ExecutionOptions(timeout_ms=50, abort_grace_ms=10)
    async with Runtime(sandbox=ProbeSandbox(p=ignored), execution=options, close_warning_ms=20) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("p")
        assert result.failure is not None
        async with anyio.create_task_group() as tg:
            tg.start_soon(runtime.close)
            with anyio.fail_after(10):
                await warned.close_warned.wait()
            ignored.release.set()
        [message] = warned.messages
        assert "1 sandbox run(s) still settling" in message
        assert "ctx.signal.aborted" in message


async def test_an_acquire_that_fails_after_capturing_gives_everything_back_and_close_returns() -> None:
    released: list[str] = []

    async def acquire(context: AcquireContext) -> Acquired:
        async def release() -> None:
            released.append("v1")

        return Acquired(version="v1", modules=[], release=release)

    class BrokenNotes(RejectingSandbox):
        """A sandbox whose description of itself raises: building the lease's view fails."""

        @property
        def guest_notes(self) -> str:
            raise RuntimeError("the notes are broken")

    async with Runtime(sources=[source(id="live", acquire=acquire)], sandbox=BrokenNotes(None)) as runtime:
        with pytest.raises(RuntimeError, match="the notes are broken"):
            await runtime.acquire()
        assert runtime.leases_held == 0
        with anyio.fail_after(5):
            await runtime.close()
        assert released == ["v1"]


class ClosingSandbox(RejectingSandbox):
    """A sandbox whose ``aclose`` awaits, as stopping worker processes or a connection does."""

    def __init__(self) -> None:
        super().__init__()
        self.closing: list[str] = []

    async def aclose(self) -> None:
        self.closing.append("started")
        await anyio.lowlevel.checkpoint()  # where a cancellation would cut a close short
        self.closing.append("finished")


async def test_a_runtime_left_because_its_scope_was_cancelled_still_closes_its_sandbox_and_sources() -> None:
    released: list[str] = []

    async def acquire(context: AcquireContext) -> Acquired:
        async def release() -> None:
            released.append("v1")

        return Acquired(version="v1", modules=[demo_module()], release=release)

    sandbox = ClosingSandbox()
    with anyio.CancelScope() as scope:
        async with Runtime(sources=[source(id="demo", acquire=acquire)], sandbox=sandbox) as runtime:
            lease = await runtime.acquire()
            scope.cancel()  # the host is stopped (a signal, a timeout) with a lease still held
            await anyio.sleep_forever()
    assert sandbox.closing == ["started", "finished"]
    assert released == ["v1"]
    with pytest.raises(RuntimeClosed, match="has closed"):
        _ = lease.execute_tool


async def test_a_runtime_left_because_its_scope_was_cancelled_stops_the_runs_still_going_before_it_is_left() -> None:
    # The program ignores its abort: only the cancellation of the work itself ends it.
    program = Probe(ignore)
    with anyio.fail_after(10), anyio.CancelScope() as scope:
        async with Runtime(sandbox=ProbeSandbox(p=program)) as runtime, runtime.lease() as lease:
            async with anyio.create_task_group() as group:
                group.start_soon(lease.execute_tool.run, "p")
                await program.started.wait()
                scope.cancel()
    assert program.settled.is_set()
    assert not program.release.is_set()


async def test_a_runtime_left_because_its_scope_was_cancelled_waits_for_a_run_inside_a_shield() -> None:
    # A run stopping what it cannot drop (a paused state being written, a thread) shields it:
    # leaving the runtime cancels the run, but the shield holds and leaving waits for it.
    shielded, leave_shield = anyio.Event(), anyio.Event()
    order: list[str] = []

    async def behave(probe: Probe, request: SandboxRequest, signal: AbortSignal) -> object:
        with anyio.CancelScope(shield=True):
            shielded.set()
            await leave_shield.wait()
            order.append("shield left")
        await anyio.sleep_forever()

    program = Probe(behave)
    options = ExecutionOptions(abort_grace_ms=10)

    async def host() -> None:
        with anyio.CancelScope() as scope:
            async with Runtime(sandbox=ProbeSandbox(p=program), execution=options) as runtime, runtime.lease() as lease:
                async with anyio.create_task_group() as group:
                    group.start_soon(lease.execute_tool.run, "p")
                    await shielded.wait()
                    scope.cancel()
        order.append("runtime left")

    async with anyio.create_task_group() as group:
        group.start_soon(host)
        await anyio.wait_all_tasks_blocked()
        leave_shield.set()
    assert order == ["shield left", "runtime left"]
    assert program.settled.is_set()


async def test_a_block_that_raised_with_a_lease_unreleased_leaves_with_its_own_exception(warned: Captured) -> None:
    sandbox = ClosingSandbox()
    leases: list[Lease] = []

    async def host_with_a_bug() -> None:
        async with Runtime(modules=[demo_module()], sandbox=sandbox, close_warning_ms=20) as runtime:
            leases.append(await runtime.acquire())  # the traceback keeps it alive: never collected
            raise KeyError("the host's bug")

    with anyio.fail_after(10), pytest.raises(KeyError, match="the host's bug"):
        await host_with_a_bug()
    assert sandbox.closing == ["started", "finished"]
    assert any("abandons 1 unreleased lease(s)" in message for message in warned.messages)
    with pytest.raises(RuntimeClosed):
        await leases[0].execute_tool.run("1")
    await leases[0].release()  # harmless: what it held closed with the runtime
