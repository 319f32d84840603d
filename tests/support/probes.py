"""A test sandbox driven by probes: each program (looked up by its code) does what the test says.

NO ISOLATION: it evaluates nothing. Shared by the admission and cancellation tests; ordering
is established with events, never with sleeps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mycelium import AbortSignal, Runtime
from mycelium.sandbox import Sandbox, SandboxRequest

Behaviour = Callable[["Probe", SandboxRequest, AbortSignal], Awaitable[object]]


async def gate(probe: Probe, request: SandboxRequest, signal: AbortSignal) -> object:
    """Wait for the test to release the program, whatever the signal says; then return its value."""
    await probe.release.wait()
    return probe.value


async def honour(probe: Probe, request: SandboxRequest, signal: AbortSignal) -> object:
    """Run until aborted, then stop by raising, as a well-behaved sandbox does."""
    await signal.wait()
    probe.aborted_at = anyio.current_time()
    signal.throw_if_aborted()
    raise AssertionError("unreachable")


async def ignore(probe: Probe, request: SandboxRequest, signal: AbortSignal) -> object:
    """Notice the abort but keep working until the test releases the program."""
    await signal.wait()
    probe.aborted_at = anyio.current_time()
    await probe.release.wait()
    return probe.value


async def late(probe: Probe, request: SandboxRequest, signal: AbortSignal) -> object:
    """Finish successfully right after the abort."""
    await signal.wait()
    return probe.value


async def instant(probe: Probe, request: SandboxRequest, signal: AbortSignal) -> object:
    return probe.value


def works_for(seconds: float) -> Behaviour:
    """A program that takes ``seconds`` of work (a deadline inside the sandbox, not a sync point)."""

    async def behave(probe: Probe, request: SandboxRequest, signal: AbortSignal) -> object:
        with anyio.move_on_after(seconds):
            await signal.wait()
        return probe.value

    return behave


def raising(exc: BaseException) -> Behaviour:
    async def behave(probe: Probe, request: SandboxRequest, signal: AbortSignal) -> object:
        raise exc

    return behave


class Probe:
    """One program's controls and what the sandbox saw when it ran."""

    def __init__(self, behaviour: Behaviour = gate, value: object = "ok") -> None:
        self.behaviour = behaviour
        self.value = value
        self.release = anyio.Event()
        self.started = anyio.Event()
        self.settled = anyio.Event()
        self.calls = 0
        self.request: SandboxRequest | None = None
        self.signal: AbortSignal | None = None
        self.started_at: float | None = None
        self.aborted_at: float | None = None


class ProbeSandbox(Sandbox):
    """Runs each program by its probe (looked up by the code). NO ISOLATION: it evaluates nothing."""

    adapter = "test"

    def __init__(self, **probes: Probe) -> None:
        self.probes = probes
        self.timeline: list[tuple[str, str]] = []

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> Any:
        probe = self.probes[request.code]
        probe.calls += 1
        probe.request, probe.signal = request, signal
        probe.started_at = anyio.current_time()
        self.timeline.append(("start", request.code))
        probe.started.set()
        try:
            return await probe.behaviour(probe, request, signal)
        finally:
            self.timeline.append(("end", request.code))
            probe.settled.set()


@asynccontextmanager
async def closing(runtime: Runtime) -> AsyncIterator[anyio.Event]:
    """Start ``runtime.close()`` beside the block and wait until it blocks; the event is set once
    it has returned. Leaving the block waits for ``close()`` to return."""
    closed = anyio.Event()

    async def close() -> None:
        await runtime.close()
        closed.set()

    async with anyio.create_task_group() as group:
        group.start_soon(close)
        await anyio.wait_all_tasks_blocked()
        yield closed
