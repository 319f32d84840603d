"""Waiting, bounded, for a person's decision on a suspension.

A server that holds a client's retry open while a person decides must learn of the
decision soon, without reading the store in a loop. A decision recorded in this process
(an approvals page served beside the server) wakes the waiters of that suspension at once;
one recorded elsewhere (another replica's page, sharing the store) is found by reading the
store once every :data:`CHECK_EVERY_S`.

The waiters of one suspension share those reads: however many retries a client holds open
on one paused run, the store is read for it about once a second, plus once after each wake.
Only so many suspensions are watched at once: past :data:`MAX_WATCHED`, a waiter reads the
store on a schedule of its own, unwoken.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import anyio

__all__ = ["CHECK_EVERY_S", "MAX_WATCHED", "DecisionWaiters", "Watch"]

CHECK_EVERY_S = 1.0
"""How often the store is read for a decision made by another process."""
MAX_WATCHED = 10_000
"""The most suspensions whose waiters this process wakes itself."""


class Watch:
    """The waiters of one suspension: woken together, and sharing each read of the store.

    Used from one event loop, like the rest of a runtime.
    """

    def __init__(self) -> None:
        self.woken = anyio.Event()
        """Set by the next wake; a fresh event replaces it then, for the wake after."""
        self.read_at = -math.inf
        """When the newest answer's read began, on anyio's clock."""
        self.waiters = 0
        """How many wait on it (kept by :class:`DecisionWaiters`)."""
        self._still_waits = True
        self._woken_at = -math.inf
        self._reading = anyio.Lock()

    def wake(self) -> None:
        """A decision or claim was recorded: every answer read before now is stale."""
        self._woken_at = anyio.current_time()
        woken, self.woken = self.woken, anyio.Event()
        woken.set()

    async def still_waits(self, since: float, until: float, read: Callable[[], Awaitable[bool]]) -> bool:
        """Whether the suspension still waits, by a read begun at ``since`` or later and after the
        latest wake: the newest answer when it is one, else ``read()`` (one at a time, so waiters
        queued behind a read take its answer). Waiting for a turn ends at ``until``: still waiting."""
        with anyio.move_on_after(until - anyio.current_time()):
            async with self._reading:
                if self.read_at < max(since, self._woken_at):
                    began = anyio.current_time()
                    self._still_waits = await read()
                    self.read_at = began
                return self._still_waits
        return True


class DecisionWaiters:
    """The waiters of this process, by suspension: woken when a decision on theirs is recorded here.

    Used from one event loop (the one the store is used from), like the rest of a runtime.
    """

    def __init__(self, max_watched: int = MAX_WATCHED) -> None:
        self._max_watched = max_watched
        self._watched: dict[str, Watch] = {}

    def wake(self, suspension_id: str) -> None:
        """Wake whoever waits on ``suspension_id``: its decision was recorded, or it was claimed."""
        watch = self._watched.get(suspension_id)
        if watch is not None:
            watch.wake()

    @contextmanager
    def watching(self, suspension_id: str) -> Iterator[Watch]:
        """The watch of ``suspension_id`` while inside, shared with its other waiters; past the bound,
        a watch of the caller's own that nothing wakes."""
        watch = self._watched.get(suspension_id)
        if watch is None:
            if len(self._watched) >= self._max_watched:
                yield Watch()
                return
            watch = self._watched[suspension_id] = Watch()
        watch.waiters += 1
        try:
            yield watch
        finally:
            watch.waiters -= 1
            if not watch.waiters:
                del self._watched[suspension_id]

    def __len__(self) -> int:
        return len(self._watched)
