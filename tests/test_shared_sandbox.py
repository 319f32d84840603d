"""Many runtimes, one process: a SharedSandbox's slots are shared, and a lease may carry its own session and access."""

from __future__ import annotations

import anyio
import pytest

from mycelium import (
    Access,
    ExecutionOptions,
    InvocationContext,
    Module,
    Runtime,
    Session,
    SharedSandbox,
)
from mycelium.testing import direct_sandbox
from tests.support.probes import Probe, ProbeSandbox, instant


class ClosingProbeSandbox(ProbeSandbox):
    def __init__(self, **probes: Probe) -> None:
        super().__init__(**probes)
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_runtimes_on_one_shared_sandbox_queue_for_the_same_slots() -> None:
    first, second = Probe(value="first"), Probe(instant, value="second")
    shared = SharedSandbox(ProbeSandbox(first=first, second=second), capacity=1)
    options = ExecutionOptions(timeout_ms=30_000, sandbox_capacity=8)  # a runtime's own capacity is not used
    async with Runtime(sandbox=shared, execution=options) as one, Runtime(sandbox=shared, execution=options) as two:
        assert one.admission.capacity == two.admission.capacity == 1
        async with one.lease() as a, two.lease() as b, anyio.create_task_group() as group:
            group.start_soon(a.execute_tool.run, "first")
            await first.started.wait()
            done = anyio.Event()

            async def run_second() -> None:
                await b.execute_tool.run("second")
                done.set()

            group.start_soon(run_second)
            await anyio.wait_all_tasks_blocked()
            assert second.calls == 0  # the other runtime's run holds the only slot
            assert shared.in_flight == 1
            first.release.set()
            await done.wait()
        assert shared.in_flight == 0


async def test_a_runtime_does_not_close_a_shared_sandbox_its_owner_does() -> None:
    inner = ClosingProbeSandbox()
    shared = SharedSandbox(inner)
    async with Runtime(sandbox=shared):
        pass
    assert inner.closed == 0
    await shared.aclose()
    assert inner.closed == 1


def test_a_shared_sandbox_refuses_what_is_not_a_sandbox_naming_it() -> None:
    with pytest.raises(ValueError, match="must be a Sandbox, got int"):
        SharedSandbox(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="SharedSandbox"):
        SharedSandbox(SharedSandbox(ProbeSandbox()))  # type: ignore[arg-type]


def recording_module(seen: list[InvocationContext]) -> Module:
    module = Module(id="rec", name="rec")

    @module.operation(access="write")
    def touch(ctx: InvocationContext) -> str:
        """Remember who called."""
        seen.append(ctx)
        return "ok"

    return module


async def test_a_lease_carries_its_own_session_and_access_for_every_call() -> None:
    seen: list[InvocationContext] = []
    sandbox = direct_sandbox(lambda ns, signal: ns.rec.touch({}))
    runtime = Runtime(modules=[recording_module(seen)], sandbox=sandbox, session=Session("runtime-session"))
    async with runtime:
        async with runtime.lease(session=Session("connection-1")) as lease:
            allowed = await lease.execute_tool.run("touch")
        async with runtime.lease(access=Access(grants={"rec": "read"})) as lease:
            refused = await lease.execute_tool.run("touch")
        async with runtime.lease() as lease:
            default = await lease.execute_tool.run("touch")
    assert allowed.value == "ok"
    assert refused.value["reason"] == "read-only-grant"  # type: ignore[index]
    assert default.value == "ok"
    assert [ctx.session_id for ctx in seen] == ["connection-1", "runtime-session"]


async def test_explicit_access_refuses_a_module_the_grants_do_not_name() -> None:
    seen: list[InvocationContext] = []
    sandbox = direct_sandbox(lambda ns, signal: ns.rec.touch({}))
    async with Runtime(modules=[recording_module(seen)], sandbox=sandbox, access=Access(explicit=True)) as runtime:
        async with runtime.lease() as lease:
            refused = await lease.execute_tool.run("touch")
        async with runtime.lease(access=Access(explicit=True, grants={"rec": "write"})) as lease:
            allowed = await lease.execute_tool.run("touch")
    assert refused.value["reason"] == "not-granted"  # type: ignore[index]
    assert allowed.value == "ok"
    assert len(seen) == 1


async def test_lease_refuses_a_session_or_access_of_the_wrong_type_naming_it() -> None:
    async with Runtime(sandbox=ProbeSandbox()) as runtime:
        with pytest.raises(ValueError, match="session must be a Session"):
            await runtime.acquire(session="s")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="access must be an Access"):
            await runtime.acquire(access={"rec": "read"})  # type: ignore[arg-type]


async def test_a_grant_revoked_while_the_person_decides_refuses_the_approved_call() -> None:
    seen: list[InvocationContext] = []
    grants = {"rec": "write"}
    module = Module(id="rec", name="rec")

    @module.operation(access="write", confirm=True)
    def touch(ctx: InvocationContext) -> str:
        """Remember who called."""
        seen.append(ctx)
        return "ok"

    def confirm(request: object) -> bool:
        grants["rec"] = "read"  # revoked while the person was deciding
        return True

    access = Access(session_grants=lambda: grants, confirm=confirm)
    sandbox = direct_sandbox(lambda ns, signal: ns.rec.touch({}))
    async with Runtime(modules=[module], sandbox=sandbox, access=access) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run("touch")
    assert result.value["reason"] == "read-only-grant"  # type: ignore[index]
    assert seen == []
