"""Runs that reach a sandbox slot only once their runtime is closing, on asyncio and on trio.

Two runtimes share the slots of one :class:`~mycelium.SharedSandbox`. The first holds a slot
with a run the test releases; the second's runs queue behind it and are admitted while (or
after) the second runtime is left. Whatever way it is left, a run admitted then never starts,
is reported as a failure, and gives its slot back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import anyio.abc
import pytest

from mycelium import AbortSignal, AcquireContext, Acquired, Lease, Module, Runtime, SharedSandbox, ToolResult, source
from mycelium.sandbox import SandboxRequest
from tests.support.probes import Probe, ProbeSandbox, instant


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@dataclass
class LateRun:
    """What became of the late run, and of the other runs its runtime made meanwhile."""

    started: int
    outcomes: list[str]
    """Each run's failure code, or its value, sorted."""
    in_flight: int

    def assert_refused(self, *others: str) -> None:
        """The late run never started and failed as ``unknown``; ``others`` are the other runs' outcomes."""
        assert self.started == 0
        assert self.outcomes == sorted(["unknown", *others])
        assert self.in_flight == 0  # every slot was given back


async def run_admitted_after_its_runtime_was_left() -> LateRun:
    """A server's request task outlives the runtime it asked: the run it queued is admitted
    only once that runtime's scope was cancelled and it was left."""
    holding, late = Probe(), Probe(instant)
    shared = SharedSandbox(ProbeSandbox(holding=holding, late=late), capacity=1, admission_wait_ms=30_000)
    first, second = Runtime(sandbox=shared), Runtime(sandbox=shared)
    results: list[ToolResult] = []
    async with _slot_held(first, holding) as group:
        scope, left = await _entered(group, second)
        group.start_soon(_request, results, await second.acquire(), "late")
        await anyio.wait_all_tasks_blocked()  # the late run waits for the one slot
        scope.cancel()
        await left.wait()
        holding.release.set()
    return _outcome(late, results, shared)


async def run_admitted_while_its_runtime_is_left_by_cancellation() -> LateRun:
    """The second runtime's scope is cancelled while one of its runs shields itself (so leaving
    waits for it) and another waits for a slot; a slot opens while the runtime is being left."""
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
    results: list[ToolResult] = []
    async with _slot_held(first, holding) as group:
        scope, left = await _entered(group, second)
        abandoned = await second.acquire()
        group.start_soon(_request, results, abandoned, "shielded")
        await shielded.started.wait()
        group.start_soon(_request, results, abandoned, "late")
        await anyio.wait_all_tasks_blocked()  # the late run waits for a slot
        scope.cancel()  # the second runtime is being left; it waits for the shielded run
        await anyio.wait_all_tasks_blocked()
        holding.release.set()  # a slot opens while it is being left
        await anyio.wait_all_tasks_blocked()
        shield_released.set()
        await left.wait()
    return _outcome(late, results, shared)


async def run_queued_on_an_abandoned_lease() -> LateRun:
    """The second runtime is left on an exception with a lease still held, whose execute waits
    for the slot; the slot opens while that runtime closes its sources."""
    releasing, release_gate = anyio.Event(), anyio.Event()

    async def acquire(context: AcquireContext) -> Acquired:
        async def release() -> None:
            releasing.set()
            await release_gate.wait()

        return Acquired(version="v1", modules=[Module(id="m-v1", name="m")], release=release)

    holding, late = Probe(), Probe(instant)
    shared = SharedSandbox(ProbeSandbox(holding=holding, late=late), capacity=1, admission_wait_ms=30_000)
    first = Runtime(sandbox=shared)
    second = Runtime(sandbox=shared, sources=[source(id="s", acquire=acquire)], close_warning_ms=20)
    results: list[ToolResult] = []

    async def leave_on_an_exception(group: anyio.abc.TaskGroup) -> None:
        async with second:
            group.start_soon(_request, results, await second.acquire(), "late")
            await anyio.wait_all_tasks_blocked()  # the late run waits for the one slot
            raise ValueError("the host's block failed")  # its lease is left held: abandoned

    async def owner(group: anyio.abc.TaskGroup) -> None:
        with pytest.raises(ValueError, match="the host's block failed"):
            await leave_on_an_exception(group)

    async with _slot_held(first, holding) as group:
        group.start_soon(owner, group)
        await releasing.wait()  # the second runtime stopped its leases and closes its sources
        holding.release.set()  # the slot opens now
        await anyio.wait_all_tasks_blocked()
        release_gate.set()
    return _outcome(late, results, shared)


@asynccontextmanager
async def _slot_held(first: Runtime, holding: Probe) -> AsyncIterator[anyio.abc.TaskGroup]:
    """``first`` entered, one of its runs holding a slot until the test releases ``holding``."""
    async with first, first.lease() as lease, anyio.create_task_group() as group:
        group.start_soon(lease.execute_tool.run, "holding")
        await holding.started.wait()
        yield group


async def _entered(group: anyio.abc.TaskGroup, runtime: Runtime) -> tuple[anyio.CancelScope, anyio.Event]:
    """Enter ``runtime`` in a task of ``group`` under a scope of its own; the event is set once it is left."""
    scope, entered, left = anyio.CancelScope(), anyio.Event(), anyio.Event()

    async def owner() -> None:
        with scope:
            async with runtime:
                entered.set()
                await anyio.sleep_forever()
        left.set()

    group.start_soon(owner)
    await entered.wait()
    return scope, left


async def _request(results: list[ToolResult], lease: Lease, code: str) -> None:
    results.append(await lease.execute_tool.run(code))


def _outcome(late: Probe, results: list[ToolResult], shared: SharedSandbox) -> LateRun:
    outcomes = sorted(result.failure.code if result.failure else str(result.value) for result in results)
    return LateRun(late.calls, outcomes, shared.in_flight)


async def test_a_run_admitted_after_its_runtime_was_left_never_starts_and_gives_its_slot_back() -> None:
    (await run_admitted_after_its_runtime_was_left()).assert_refused()


async def test_a_run_queued_on_a_lease_its_runtime_abandoned_never_starts_once_the_runtime_closes() -> None:
    (await run_queued_on_an_abandoned_lease()).assert_refused()


async def test_a_run_admitted_while_its_runtime_is_left_by_cancellation_never_starts() -> None:
    (await run_admitted_while_its_runtime_is_left_by_cancellation()).assert_refused("shielded")
