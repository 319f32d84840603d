"""Sandbox admission: how many runs may be in flight, and the runtime-wide tracker that enforces it.

There is one :class:`SandboxSlots` per runtime (not per lease or revision), or one set of
slots per :class:`~mycelium.SharedSandbox` that many runtimes share. A run first
registers as a waiter, then waits for a slot until the earlier of its admission-wait
deadline and its own deadline; a waiter that expires or is cancelled is removed and
never starts later. Once admitted, the run's backing work owns its slot until that work
has really settled, even when the run was reported as stopped before then. The runtime's
task group owns that work, through :class:`BackingTasks`.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from ._signals import AbortSignal

__all__ = ["BackingTasks", "BackingWork", "SandboxSlots"]


class BackingTasks:
    """Starts a runtime's backing work; its task group owns every run until it ends.

    On asyncio each run is a plain task in a cancel scope of its own: a child of an anyio
    task group costs almost twice as much to start and wake its owner (20 us against 12 us
    measured). The group still owns them, through one keeper task of its
    own: when the group is cancelled, the keeper cancels each run's own cancel scope (so
    the shields inside a run hold, as they would for a child of the group) and waits for
    every run to end. On any other backend each run is a child of the group itself.

    Made inside the group's task; :meth:`close` once every run has ended lets the group end.
    """

    def __init__(self, group: TaskGroup) -> None:
        self._group = group
        self._native: dict[asyncio.Task[None], anyio.CancelScope] | None = None
        self._keeper = anyio.CancelScope()
        self._closed = False
        if _on_asyncio():
            self._native = {}
            group.start_soon(self._keep, name="mycelium backing work")

    def start_soon(self, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Start ``run`` now; it is owned until it ends.

        Raises ``RuntimeError`` once the runtime is closing (:meth:`close`, or its group
        cancelled): nothing would own the run then, so it never starts.
        """
        if self._closed:
            raise RuntimeError("the runtime is closing: no run starts now")
        native = self._native
        if native is None:
            self._group.start_soon(run)
            return
        scope = anyio.CancelScope()
        task = asyncio.get_running_loop().create_task(_within(scope, run))
        native[task] = scope
        task.add_done_callback(native.pop)

    def refuse_new(self) -> None:
        """From now on no run starts (:meth:`start_soon` raises): the runtime is closing."""
        self._closed = True

    def close(self) -> None:
        """Refuse new runs and stop the keeper, so the group can end. Runs still going are cancelled and waited for."""
        self.refuse_new()
        self._keeper.cancel()

    async def _keep(self) -> None:
        assert self._native is not None
        with self._keeper:
            try:
                await anyio.sleep_forever()
            finally:
                self.refuse_new()  # from here on a run would outlive its owner: none starts
                left = list(self._native.items())
                for _, scope in left:
                    scope.cancel()
                with anyio.CancelScope(shield=True):  # owned work ends before its owner does
                    for task, _ in left:
                        await asyncio.wait([task])


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # trio's loop is not asyncio's
        return False
    return True


async def _within(scope: anyio.CancelScope, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
    with scope:
        await run()


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
        # Made only when somebody waits for it (a close): most runs start and settle unwatched.
        self._all_settled: anyio.Event | None = None

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

    def start(self, run: Callable[[], Awaitable[object]], tasks: BackingTasks) -> BackingWork:
        """Start ``run`` with ``tasks`` (the runtime's) as backing work owning the slot :meth:`admit` took.

        The work outlives the execute that started it when that execute is reported stopped
        first; the runtime's task group owns it until it settles.
        """
        work = BackingWork()
        self._unsettled += 1
        try:
            tasks.start_soon(functools.partial(self._own, work, run))
        except BaseException:
            self._give_back()  # the run never started: its slot is free again
            raise
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
            work.settled.set()
            self._give_back()

    def _give_back(self) -> None:
        """One started run has ended: its slot is free, and a close waiting for the last one goes on."""
        self._semaphore.release()
        self._unsettled -= 1
        if not self._unsettled and self._all_settled is not None:
            self._all_settled.set()
            self._all_settled = None

    async def wait_settled(self) -> None:
        """Return once every started run has settled."""
        while self._unsettled:
            if self._all_settled is None:
                self._all_settled = anyio.Event()
            await self._all_settled.wait()


def _foreign_cancellation(exc: BaseException) -> bool:
    """Whether ``exc`` is a cancellation exception although nothing cancelled the current task."""
    return isinstance(exc, anyio.get_cancelled_exc_class()) and anyio.current_effective_deadline() != -math.inf
