"""A run queued on a lease its runtime abandoned, admitted while that runtime closes: for both backends."""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import pytest

from mycelium import AbortSignal, AcquireContext, Acquired, Lease, Module, Runtime, SharedSandbox, ToolResult, source
from mycelium.sandbox import SandboxRequest
from tests.support.probes import Probe, ProbeSandbox, instant


@dataclass
class LateRun:
    """What became of the late run."""

    started: int
    results: list[ToolResult]
    in_flight: int


async def run_queued_on_an_abandoned_lease() -> LateRun:
    """Two runtimes share one slot. The second is left on an exception with a lease still held,
    whose execute waits for the slot; the slot opens while that runtime closes its sources."""
    releasing, release_gate = anyio.Event(), anyio.Event()

    async def acquire(context: AcquireContext) -> Acquired:
        async def release() -> None:
            releasing.set()
            await release_gate.wait()

        return Acquired(version="v1", modules=[Module(id="m-v1", name="m")], release=release)

    async def late_behaviour(probe: Probe, request: SandboxRequest, signal: AbortSignal) -> object:
        return "ran"

    holding, late = Probe(), Probe(late_behaviour)
    shared = SharedSandbox(ProbeSandbox(holding=holding, late=late), capacity=1, admission_wait_ms=30_000)
    first = Runtime(sandbox=shared)
    second = Runtime(sandbox=shared, sources=[source(id="s", acquire=acquire)], close_warning_ms=20)
    results: list[ToolResult] = []

    async def request(lease: Lease) -> None:
        results.append(await lease.execute_tool.run("late"))

    async def leave_on_an_exception(group: anyio.abc.TaskGroup) -> None:
        async with second:
            group.start_soon(request, await second.acquire())
            await anyio.wait_all_tasks_blocked()  # the late run waits for the one slot
            raise ValueError("the host's block failed")  # its lease is left held: abandoned

    async def owner(group: anyio.abc.TaskGroup) -> None:
        with pytest.raises(ValueError, match="the host's block failed"):
            await leave_on_an_exception(group)

    async with first, first.lease() as lease, anyio.create_task_group() as group:
        group.start_soon(lease.execute_tool.run, "holding")
        await holding.started.wait()
        group.start_soon(owner, group)
        await releasing.wait()  # the second runtime stopped its leases and closes its sources
        holding.release.set()  # the slot opens now
        await anyio.wait_all_tasks_blocked()
        release_gate.set()
    return LateRun(late.calls, results, shared.in_flight)


async def run_admitted_while_its_runtime_is_left_by_cancellation() -> LateRun:
    """Two runtimes share two slots. The second runtime's scope is cancelled while one of its
    runs shields itself (so leaving waits for it) and another waits for a slot; a slot opens
    while the runtime is being left."""
    holding, late = Probe(), Probe(instant)
    shield_released = anyio.Event()

    async def shielded_behaviour(probe: Probe, request: SandboxRequest, signal: AbortSignal) -> object:
        with anyio.CancelScope(shield=True):
            await shield_released.wait()
        return "shielded"

    shielded = Probe(shielded_behaviour)
    sandbox = ProbeSandbox(holding=holding, late=late, shielded=shielded)
    shared = SharedSandbox(sandbox, capacity=2, admission_wait_ms=30_000)
    first, second = Runtime(sandbox=shared), Runtime(sandbox=shared)
    left = anyio.Event()
    results: list[ToolResult] = []

    async def owner(scope: anyio.CancelScope, entered: anyio.Event) -> None:
        with scope:
            async with second:
                entered.set()
                await anyio.sleep_forever()
        left.set()

    async def request(lease: Lease, code: str) -> None:
        results.append(await lease.execute_tool.run(code))

    async with first, first.lease() as lease, anyio.create_task_group() as group:
        group.start_soon(lease.execute_tool.run, "holding")
        await holding.started.wait()
        scope, entered = anyio.CancelScope(), anyio.Event()
        group.start_soon(owner, scope, entered)
        await entered.wait()
        abandoned = await second.acquire()
        group.start_soon(request, abandoned, "shielded")
        await shielded.started.wait()
        group.start_soon(request, abandoned, "late")
        await anyio.wait_all_tasks_blocked()  # the late run waits for a slot
        scope.cancel()  # the second runtime is being left; it waits for the shielded run
        await anyio.wait_all_tasks_blocked()
        holding.release.set()  # a slot opens while it is being left
        await anyio.wait_all_tasks_blocked()
        shield_released.set()
        await left.wait()
    return LateRun(late.calls, results, shared.in_flight)
