"""Waiting, bounded, for a person's decision on a suspension.

A server that holds a client's retry open while a person decides must learn of the
decision soon, without reading the store in a loop. A decision recorded in this process
(an approvals page served beside the server) wakes the waiters of that suspension at once;
one recorded elsewhere (another replica's page, sharing the store) is found by reading the
store once every :data:`CHECK_EVERY_S`. Only so many suspensions are watched at once: past
:data:`MAX_WATCHED`, a waiter reads the store on the same schedule, unwoken.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio

__all__ = ["CHECK_EVERY_S", "MAX_WATCHED", "DecisionWaiters"]

CHECK_EVERY_S = 1.0
"""How often a waiter reads the store for a decision made by another process."""
MAX_WATCHED = 10_000
"""The most suspensions whose waiters this process wakes itself."""


class DecisionWaiters:
    """The waiters of this process, by suspension: woken when a decision on theirs is recorded here.

    Used from one event loop (the one the store is used from), like the rest of a runtime.
    """

    def __init__(self, max_watched: int = MAX_WATCHED) -> None:
        self._max_watched = max_watched
        self._watched: dict[str, tuple[anyio.Event, int]] = {}  # the event, and how many wait on it

    def wake(self, suspension_id: str) -> None:
        """Wake whoever waits on ``suspension_id``: its decision was recorded, or it was claimed."""
        watched = self._watched.get(suspension_id)
        if watched is not None:
            watched[0].set()

    @contextmanager
    def watching(self, suspension_id: str) -> Iterator[anyio.Event | None]:
        """The event set when ``suspension_id`` is woken, while inside; ``None`` when too many are watched."""
        known = self._watched.get(suspension_id)
        if known is None and len(self._watched) >= self._max_watched:
            yield None
            return
        event = known[0] if known is not None else anyio.Event()
        self._watched[suspension_id] = (event, (known[1] if known is not None else 0) + 1)
        try:
            yield event
        finally:
            _, count = self._watched[suspension_id]
            if count == 1:
                del self._watched[suspension_id]
            else:
                self._watched[suspension_id] = (event, count - 1)

    def __len__(self) -> int:
        return len(self._watched)
