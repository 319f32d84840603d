"""Sandbox admission: how many runs may be in flight, and the runtime-wide tracker that enforces it.

There is one :class:`SandboxSlots` per runtime (not per lease or revision), or one set of
slots per :class:`SharedSandbox` that many runtimes share. A run first
registers as a waiter, then waits for a slot until the earlier of its admission-wait
deadline and its own deadline; a waiter that expires or is cancelled is removed and
never starts later. Once admitted, the run's backing work owns its slot until that work
has really settled, even when the run was reported as stopped before then.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

import anyio

from .options import MAX_ADMISSION_WAIT_MS, ExecutionOptions, check_int
from .sandbox import PendingCalls, Sandbox, SandboxRequest, SuspendingSandbox, Unrestorable, close_sandbox
from .signals import AbortSignal
from .values import JsonValue

__all__ = [
    "AdmissionPolicy",
    "BackingWork",
    "SandboxSlots",
    "SharedSandbox",
    "available_cores",
    "can_suspend",
    "normalize_sandbox_admission_policy",
]

MIN_DERIVED_CAPACITY = 2
MAX_DERIVED_CAPACITY = 32


@dataclass(frozen=True)
class AdmissionPolicy:
    """Resolved admission facts: the slot count and how long a run may queue for one."""

    capacity: int
    admission_wait_ms: int


def available_cores() -> int | None:
    """The cores this process may run on (affinity-aware), or ``None`` when that cannot be observed."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def normalize_sandbox_admission_policy(
    options: ExecutionOptions, available_cores: int | None = None
) -> AdmissionPolicy:
    """Validate and resolve the admission options. Reserves nothing and starts nothing.

    An explicit ``sandbox_capacity`` is used as given (not clamped); without one, the
    capacity is ``available_cores`` clamped to 2..32, or 2 when it is ``None``. Without an
    ``admission_wait_ms``, a run may queue for its whole ``timeout_ms``.
    """
    if options.sandbox_capacity is not None:
        capacity = check_int("sandbox_capacity", options.sandbox_capacity)
    elif available_cores is None:
        capacity = MIN_DERIVED_CAPACITY
    else:
        cores = check_int("available_cores", available_cores)
        capacity = min(max(cores, MIN_DERIVED_CAPACITY), MAX_DERIVED_CAPACITY)
    if options.admission_wait_ms is not None:
        wait = check_int("admission_wait_ms", options.admission_wait_ms, maximum=MAX_ADMISSION_WAIT_MS)
    else:
        wait = check_int("timeout_ms", options.timeout_ms)
    return AdmissionPolicy(capacity=capacity, admission_wait_ms=wait)


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
        # Strong references: the event loop keeps only weak ones to tasks.
        self._tasks: set[asyncio.Task[None]] = set()
        self._all_settled = anyio.Event()
        self._all_settled.set()

    @property
    def in_flight(self) -> int:
        """How many admitted runs have not settled yet (of every tracker sharing the slots)."""
        return self.capacity - self._semaphore.value

    @property
    def unsettled(self) -> int:
        """How many started runs have not settled yet (a run reported as stopped may be among them)."""
        return len(self._tasks)

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

    def start(self, run: Callable[[], Awaitable[object]]) -> BackingWork:
        """Start ``run`` as backing work that owns the slot taken by :meth:`admit` until it settles."""
        work = BackingWork()
        if not self._tasks:
            self._all_settled = anyio.Event()
        task = asyncio.get_running_loop().create_task(self._own(work, run))
        self._tasks.add(task)
        task.add_done_callback(self._forget)
        return work

    async def _own(self, work: BackingWork, run: Callable[[], Awaitable[object]]) -> None:
        try:
            work.value = await run()
        except Exception as exc:
            # Recorded, not re-raised: the owner of the run reads it from the work.
            work.error = exc
        except BaseException as exc:
            work.error = exc
            raise
        finally:
            self._semaphore.release()
            work.settled.set()

    def _forget(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not self._tasks:
            self._all_settled.set()

    async def wait_settled(self) -> None:
        """Return once every started run has settled."""
        while self._tasks:
            await self._all_settled.wait()


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
        self.policy = normalize_sandbox_admission_policy(
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
