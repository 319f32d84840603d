"""Sandbox admission: how many runs may be in flight, and the runtime-wide tracker that enforces it.

There is one :class:`SandboxSlots` per runtime (not per lease or revision), or one set of
slots per :class:`SharedSandbox` that many runtimes share. A run first
registers as a waiter, then waits for a slot until the earlier of its admission-wait
deadline and its own deadline; a waiter that expires or is cancelled is removed and
never starts later. Once admitted, the run's backing work owns its slot until that work
has really settled, even when the run was reported as stopped before then.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Literal

import anyio
from anyio.abc import TaskGroup

from .options import AdmissionPolicy, ExecutionOptions, available_cores
from .sandbox import PendingCalls, Sandbox, SandboxRequest, SuspendingSandbox, Unrestorable, close_sandbox
from .signals import AbortSignal
from .values import JsonValue

__all__ = ["BackingWork", "SandboxSlots", "SharedSandbox", "can_suspend"]


class BackingWork:
    """A sandbox run that owns a slot until it settles. Its outcome is read after ``settled``."""

    def __init__(self) -> None:
        self.settled = anyio.Event()
        self.value: object = None
        self.error: BaseException | None = None


class SandboxSlots:
    """The runtime-wide admission tracker: bounded slots and the backing work that holds them.

    ``semaphore`` shares the slots themselves with other trackers (see :class:`SharedSandbox`):
    each tracker still knows, and waits for, only the work it started.
    """

    def __init__(self, capacity: int, semaphore: anyio.Semaphore | None = None) -> None:
        self.capacity = capacity
        self._semaphore = semaphore or anyio.Semaphore(capacity)
        self._unsettled = 0
        self._all_settled = anyio.Event()
        self._all_settled.set()

    @property
    def in_flight(self) -> int:
        """How many admitted runs have not settled yet (of every tracker sharing the slots)."""
        return self.capacity - self._semaphore.value

    @property
    def unsettled(self) -> int:
        """How many started runs have not settled yet (a run reported as stopped may be among them)."""
        return self._unsettled

    async def admit(self, *, until: float, signal: AbortSignal) -> Literal["admitted", "expired", "aborted"]:
        """Wait for a slot until ``until`` (``anyio.current_time()`` clock) or ``signal`` aborts.

        On ``"admitted"`` the caller owns a slot and must hand it to :meth:`start`.
        """
        if signal.aborted:
            return "aborted"
        try:
            self._semaphore.acquire_nowait()  # a free slot needs no trip round the event loop
            return "admitted"
        except anyio.WouldBlock:
            pass
        with anyio.CancelScope(deadline=until) as scope:
            stop_watching = signal.add_listener(lambda _: scope.cancel())
            try:
                await self._semaphore.acquire()
                return "admitted"
            finally:
                stop_watching()
        return "aborted" if signal.aborted else "expired"

    def start(self, run: Callable[[], Awaitable[object]], tasks: TaskGroup) -> BackingWork:
        """Start ``run`` in ``tasks`` (the runtime's) as backing work owning the slot :meth:`admit` took.

        The work outlives the execute that started it when that execute is reported stopped
        first; the runtime's task group owns it until it settles.
        """
        work = BackingWork()
        if not self._unsettled:
            self._all_settled = anyio.Event()
        self._unsettled += 1
        tasks.start_soon(self._own, work, run)
        return work

    async def _own(self, work: BackingWork, run: Callable[[], Awaitable[object]]) -> None:
        try:
            work.value = await run()
        except BaseException as exc:
            # Recorded, not raised: the owner of the run reads it from the work. A cancellation
            # the sandbox raised of its own (nobody cancelled this task) is the sandbox's failure,
            # and must not cancel the runtime's other work; a real one goes on.
            work.error = exc
            if not isinstance(exc, Exception) and not _foreign_cancellation(exc):
                raise
        finally:
            self._semaphore.release()
            work.settled.set()
            self._unsettled -= 1
            if not self._unsettled:
                self._all_settled.set()

    async def wait_settled(self) -> None:
        """Return once every started run has settled."""
        while self._unsettled:
            await self._all_settled.wait()


def _foreign_cancellation(exc: BaseException) -> bool:
    """Whether ``exc`` is a cancellation exception although nothing cancelled the current task."""
    return isinstance(exc, anyio.get_cancelled_exc_class()) and anyio.current_effective_deadline() != -math.inf


def can_suspend(sandbox: Sandbox) -> bool:
    """Whether ``sandbox`` can pause a run at a deferred decision and resume it."""
    return isinstance(sandbox, SuspendingSandbox) and getattr(sandbox, "suspends", True) is True


class SharedSandbox:
    """One sandbox and one set of admission slots, shared by every runtime given it.

    Capacity is a property of the process, not of a runtime: pass the same
    ``SharedSandbox`` as ``Runtime(sandbox=...)`` to many runtimes (one per principal,
    say) and they queue for the same ``capacity`` slots and run in the same worker pool.
    A runtime does not close a shared sandbox; its owner calls :meth:`aclose` after the
    runtimes are closed. ``capacity`` and ``admission_wait_ms`` resolve as
    :class:`~mycelium.options.ExecutionOptions`' ``sandbox_capacity`` and
    ``admission_wait_ms`` do; a runtime's own admission options are not used.
    """

    def __init__(self, sandbox: Sandbox, *, capacity: int | None = None, admission_wait_ms: int | None = None) -> None:
        if not isinstance(sandbox, Sandbox) or isinstance(sandbox, SharedSandbox):
            raise ValueError(f"sandbox must implement the Sandbox protocol, got {type(sandbox).__name__}")
        self.sandbox = sandbox
        self.policy = AdmissionPolicy.resolve(
            ExecutionOptions(sandbox_capacity=capacity, admission_wait_ms=admission_wait_ms), available_cores()
        )
        self._semaphore = anyio.Semaphore(self.policy.capacity)

    @property
    def adapter(self) -> str:
        """The shared sandbox's adapter name."""
        return self.sandbox.adapter

    @property
    def build_sha(self) -> str | None:
        """The shared sandbox's source revision, if known."""
        return self.sandbox.build_sha

    @property
    def guest_notes(self) -> str | None:
        """What the shared sandbox adds to the tool description, if anything."""
        notes = getattr(self.sandbox, "guest_notes", None)
        return notes if isinstance(notes, str) else None

    @property
    def unenforced_limits(self) -> tuple[str, ...]:
        """The limits the shared sandbox declares it does not enforce."""
        return tuple(getattr(self.sandbox, "unenforced_limits", ()))

    @property
    def in_flight(self) -> int:
        """How many admitted runs, of every runtime sharing this sandbox, have not settled yet."""
        return self.policy.capacity - self._semaphore.value

    def slots(self) -> SandboxSlots:
        """A tracker for one runtime: the shared slots, and only that runtime's backing work."""
        return SandboxSlots(self.policy.capacity, self._semaphore)

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> JsonValue:
        """Run ``request`` in the shared sandbox (admission is the runtime's job, through :meth:`slots`)."""
        return await self.sandbox.execute(request, signal)

    @property
    def suspends(self) -> bool:
        """Whether the shared sandbox can pause and resume runs."""
        return can_suspend(self.sandbox)

    async def resume(
        self, request: SandboxRequest, state: bytes, pending: PendingCalls, signal: AbortSignal
    ) -> JsonValue:
        """Continue a paused run in the shared sandbox (see :class:`~mycelium.sandbox.SuspendingSandbox`)."""
        if not isinstance(self.sandbox, SuspendingSandbox):
            raise Unrestorable(f"the shared {self.adapter} sandbox cannot resume a paused run")
        return await self.sandbox.resume(request, state, pending, signal)

    async def aclose(self) -> None:
        """Close the shared sandbox. Close the runtimes that use it first."""
        await close_sandbox(self.sandbox)
