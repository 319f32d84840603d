"""Suspensions kept in this process only: the default, and gone when the process ends."""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import itertools
import sys
import time
from collections.abc import Iterator

import anyio.lowlevel

from ._store import MAX_FOUND, StoredSuspension, SuspensionLimitReached

__all__ = ["MemorySuspensions"]


DEFAULT_MAX_BYTES = 256 * 1024 * 1024
_ENTRY_BYTES = 1280
"""What one held suspension costs beside its record, decision and strings: its object, the dict's entry
and its places in the indexes. Measured with tracemalloc on CPython 3.11 at about 1,150 bytes when every
pause has a session and a tool call of its own (the most the indexes cost per entry), so many small ones
cannot pass the bound."""
_PURGE_BATCH = 250
"""How many expiry times a purge, or a put making room, reads between two turns of the event loop."""


class MemorySuspensions:
    """Suspensions in a dict of this process.

    What it holds is this process's memory, so it holds at most ``max_bytes`` (256 MiB) in all,
    whatever the sessions (each suspension counted as its record, decision and strings, and 1.25 KiB
    for the entry and its indexes): the per-session bound alone lets
    sessions that come and go (connections opened, paused, closed) pile up paused runs until
    they expire. A pause that would pass it is refused as a full session's is, and nothing is
    stored; expired suspensions are dropped first to make room, the earliest expired first and
    no more than the room it needs.

    No method reads every suspension held: at the bound that is hundreds of thousands, and
    the event loop would wait for the read. Each answers from an index of what it asks about
    (a session's unclaimed pauses, one tool call's, the undecided ones, the expiry times), at
    a cost that grows with its answer, not with the store. Where many suspensions expired
    at once stand in the way (a purge, a put making room, a listing past them), it handles
    :data:`_PURGE_BATCH` of them, lets the loop turn, and goes on. Apart from those turns
    every method runs without awaiting, so on one event loop each change is atomic: no
    other task sees it half made, and a put or a listing checks afresh after each turn.
    Expiry is read against a clock that does not go back: once a listing has seen a
    suspension expired, it lists it no more.
    """

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if type(max_bytes) is not int or max_bytes < 1:
            raise ValueError(f"MemorySuspensions max_bytes must be an int of at least 1, got {max_bytes!r}")
        self._max_bytes = max_bytes
        self._held: dict[str, StoredSuspension] = {}
        self._bytes = 0  # what everything in _held costs (see _size)
        # Storage order: every held id's number, and back. An entry replaced in place keeps its number.
        self._numbers: dict[str, int] = {}
        self._ids: dict[int, str] = {}
        self._counter = itertools.count()
        # The indexes, each kept in step with _held by _index and _unindex.
        self._unclaimed: dict[str | None, set[str]] = {}  # by session, expired ones too until purged
        self._calls: dict[tuple[str | None, str], _Numbers] = {}  # by session and tool call
        self._undecided = _Numbers()  # unclaimed and undecided; expired ones until a listing sees them
        self._expiries: list[tuple[float, int]] = []  # a heap; an entry's expiry is pushed once per value

    async def put(self, suspension: StoredSuspension, *, max_per_session: int) -> None:
        """Store ``suspension`` unless its session is full, the store is, or its id is taken."""
        size = _size(suspension)
        while True:  # each pass checks afresh: other tasks ran while the last made room
            now = time.time()
            held = sum(
                1 for known in self._unclaimed.get(suspension.session_id, ()) if self._held[known].expires_at > now
            )
            if held >= max_per_session:
                raise SuspensionLimitReached(f"the session already holds {held} suspensions")
            if suspension.id in self._held:
                raise ValueError(f"suspension {suspension.id!r} is already stored")
            if self._bytes + size <= self._max_bytes:
                break
            if not self._any_expired(now):
                raise SuspensionLimitReached(
                    f"the store already holds {self._bytes} of its {self._max_bytes} bytes of suspensions"
                )
            self._drop_expired(now, until_free=size)
            if self._bytes + size > self._max_bytes:
                await anyio.lowlevel.checkpoint()  # a large pause among many small expired ones: room by batches
        number = next(self._counter)
        self._numbers[suspension.id] = number
        self._ids[number] = suspension.id
        self._keep(suspension)

    async def get(self, suspension_id: str) -> StoredSuspension | None:
        """The suspension or its tombstone, expired or not, if it is held."""
        return self._held.get(suspension_id)

    async def find(self, session_id: str | None, tool_call_id: str) -> list[StoredSuspension]:
        """This session's suspensions of the tool call and their tombstones, newest first, expired ones too."""
        numbers = self._calls.get((session_id, tool_call_id))
        if numbers is None:
            return []
        return [self._held[self._ids[number]] for number in itertools.islice(numbers.newest_first(), MAX_FOUND)]

    async def undecided(self, *, now: float, limit: int) -> list[StoredSuspension]:
        """Unexpired, undecided, unclaimed suspensions of every session, oldest first, at most ``limit``."""
        while True:
            waiting: list[StoredSuspension] = []
            expired: list[int] = []
            for number in self._undecided:
                if len(waiting) >= limit or len(expired) >= _PURGE_BATCH:
                    break
                known = self._held[self._ids[number]]
                if known.expires_at > now:
                    waiting.append(known)
                else:
                    expired.append(number)  # it will never be decided nor claimed: no listing need read it again
            for number in expired:
                self._undecided.discard(number)
            if len(expired) < _PURGE_BATCH:
                return waiting
            # Many expired since the last purge: let the loop turn, then list afresh past them.
            await anyio.lowlevel.checkpoint()

    async def decide(self, suspension_id: str, decision: bytes, *, now: float) -> bool:
        """Set the decision of an unexpired, undecided, unclaimed suspension."""
        known = self._held.get(suspension_id)
        if known is None or known.expires_at <= now or known.decision is not None or known.claimed:
            return False
        self._keep(dataclasses.replace(known, decision=decision))
        return True

    async def claim(self, suspension_id: str, *, now: float, tombstone: bytes) -> StoredSuspension | None:
        """Return the suspension if it is held, unexpired and unclaimed, leaving its tombstone."""
        known = self._held.get(suspension_id)
        if known is None or known.expires_at <= now or known.claimed:
            return None
        self._keep(dataclasses.replace(known, record=tombstone, claimed=True))
        return known

    async def restore(self, suspension: StoredSuspension) -> bool:
        """Turn the tombstone of ``suspension.id`` back into ``suspension``, unclaimed."""
        known = self._held.get(suspension.id)
        if known is None or not known.claimed:
            return False
        self._keep(dataclasses.replace(suspension, claimed=False))
        return True

    async def purge_expired(self, *, now: float) -> int:
        """Remove the suspensions and tombstones that expired at or before ``now``, a batch per loop turn."""
        removed = 0
        while self._any_expired(now):
            removed += self._drop_expired(now)
            await anyio.lowlevel.checkpoint()
        return removed

    async def aclose(self) -> None:
        """Nothing to release."""

    def _any_expired(self, now: float) -> bool:
        """Whether the expiries hold one at or before ``now`` (perhaps stale: see :meth:`_drop_expired`)."""
        return bool(self._expiries) and self._expiries[0][0] <= now

    def _drop_expired(self, now: float, *, until_free: int | None = None) -> int:
        """Remove what expired at or before ``now``, earliest first, reading at most :data:`_PURGE_BATCH`
        expiries, and only until ``until_free`` bytes are free, when given; how many were removed."""
        removed = 0
        expiries = self._expiries
        for _ in range(_PURGE_BATCH):
            if not self._any_expired(now):
                break
            if until_free is not None and self._bytes + until_free <= self._max_bytes:
                break
            expires_at, number = heapq.heappop(expiries)
            suspension_id = self._ids.get(number)
            known = self._held.get(suspension_id) if suspension_id is not None else None
            if known is None or known.expires_at != expires_at:
                continue  # gone already, or held now with another expiry (pushed when it was set)
            self._unindex(known)
            del self._held[known.id], self._numbers[known.id], self._ids[number]
            self._bytes -= _size(known)
            removed += 1
        return removed

    def _keep(self, suspension: StoredSuspension) -> None:
        """Hold ``suspension`` (its id numbered already) in place of what was held under its id."""
        replaced = self._held.get(suspension.id)
        if replaced is not None:
            self._unindex(replaced)
            self._bytes -= _size(replaced)
        self._held[suspension.id] = suspension
        self._bytes += _size(suspension)
        self._index(suspension, new_expiry=replaced is None or replaced.expires_at != suspension.expires_at)

    def _index(self, suspension: StoredSuspension, *, new_expiry: bool) -> None:
        number = self._numbers[suspension.id]
        if not suspension.claimed:
            self._unclaimed.setdefault(suspension.session_id, set()).add(suspension.id)
            if suspension.decision is None:
                self._undecided.add(number)
        if suspension.tool_call_id is not None:
            self._calls.setdefault((suspension.session_id, suspension.tool_call_id), _Numbers()).add(number)
        if new_expiry:
            heapq.heappush(self._expiries, (suspension.expires_at, number))

    def _unindex(self, suspension: StoredSuspension) -> None:
        """Take ``suspension`` out of every index but the expiries (a stale expiry is skipped when popped)."""
        number = self._numbers[suspension.id]
        if not suspension.claimed:
            members = self._unclaimed[suspension.session_id]
            members.discard(suspension.id)
            if not members:
                del self._unclaimed[suspension.session_id]
            if suspension.decision is None:
                self._undecided.discard(number)  # a listing may have let it go already, if it expired
        if suspension.tool_call_id is not None:
            key = (suspension.session_id, suspension.tool_call_id)
            self._calls[key].discard(number)
            if not self._calls[key]:
                del self._calls[key]


class _Numbers:
    """Storage numbers in ascending order. One larger than every number in the tail (a new
    suspension's) is added and removed in constant time; a smaller one (a restored suspension
    rejoining) is kept in a sorted list beside them, which only restores make longer."""

    __slots__ = ("_early", "_tail")

    def __init__(self) -> None:
        self._tail: dict[int, None] = {}  # in the order added, which is ascending
        self._early: list[int] = []

    def add(self, number: int) -> None:
        if not self._tail or number > next(reversed(self._tail)):
            self._tail[number] = None
        else:
            bisect.insort(self._early, number)

    def discard(self, number: int) -> None:
        if self._tail.pop(number, False) is None:
            return
        at = bisect.bisect_left(self._early, number)
        if at < len(self._early) and self._early[at] == number:
            del self._early[at]

    def __iter__(self) -> Iterator[int]:
        return heapq.merge(self._tail, self._early) if self._early else iter(self._tail)

    def newest_first(self) -> Iterator[int]:
        if not self._early:
            return reversed(self._tail)
        return heapq.merge(reversed(self._tail), reversed(self._early), reverse=True)

    def __bool__(self) -> bool:
        return bool(self._tail or self._early)


def _size(suspension: StoredSuspension) -> int:
    """What holding ``suspension`` costs: its bytes and strings, and what every entry costs beside them."""
    texts = (suspension.id, suspension.session_id, suspension.tool_call_id)
    strings = sum(sys.getsizeof(text) for text in texts if text is not None)
    return _ENTRY_BYTES + strings + len(suspension.record) + len(suspension.decision or b"")
