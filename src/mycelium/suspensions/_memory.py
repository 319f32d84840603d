"""Suspensions kept in this process only: the default, and gone when the process ends."""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import time

from ._store import MAX_FOUND, StoredSuspension, SuspensionLimitReached

__all__ = ["MemorySuspensions"]


DEFAULT_MAX_BYTES = 256 * 1024 * 1024
_ENTRY_BYTES = 1024
"""What one held suspension costs beside its own bytes and strings (its object, the dict's entry and
its places in the indexes; measured at about 940 bytes on CPython 3.11), so many small ones cannot
pass the bound."""


class MemorySuspensions:
    """Suspensions in a dict of this process.

    What it holds is this process's memory, so it holds at most ``max_bytes`` (256 MiB) in all,
    whatever the sessions (each suspension counted as its records, decision and ids, and 1 KiB
    for the entry and its indexes): the per-session bound alone lets
    sessions that come and go (connections opened, paused, closed) pile up paused runs until
    they expire. A pause that would pass it is refused as a full session's is, and nothing is
    stored; expired suspensions are dropped first to make room.

    Every method runs to completion without awaiting, so on one event loop each is
    atomic: no other task sees a half-made change. None of them reads every suspension
    held: at the bound that is hundreds of thousands, and the event loop would wait for the
    read. Each answers from an index of what it asks about (a session's unclaimed pauses,
    one tool call's, the undecided ones, the expiry times), at a cost that grows with the
    size of its answer, not of the store.
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
        self._next_number = 0
        # The indexes, each kept in step with _held by _index and _unindex.
        self._unclaimed: dict[str | None, set[str]] = {}  # by session, expired ones too until purged
        self._calls: dict[tuple[str | None, str], list[int]] = {}  # by session and tool call, in storage order
        self._undecided: list[int] = []  # unclaimed and undecided, in storage order, expired ones too
        self._expiries: list[tuple[float, int]] = []  # a heap; an entry's expiry is pushed once per value

    async def put(self, suspension: StoredSuspension, *, max_per_session: int) -> None:
        """Store ``suspension`` unless its session is full, the store is, or its id is taken."""
        now = time.time()
        held = sum(
            1 for known in self._unclaimed.get(suspension.session_id, ()) if self._held[known].expires_at > now
        )
        if held >= max_per_session:
            raise SuspensionLimitReached(f"the session already holds {held} suspensions")
        if suspension.id in self._held:
            raise ValueError(f"suspension {suspension.id!r} is already stored")
        size = _size(suspension)
        if self._bytes + size > self._max_bytes:
            await self.purge_expired(now=now)
            if self._bytes + size > self._max_bytes:
                raise SuspensionLimitReached(
                    f"the store already holds {self._bytes} of its {self._max_bytes} bytes of suspensions"
                )
        self._numbers[suspension.id] = self._next_number
        self._ids[self._next_number] = suspension.id
        self._next_number += 1
        self._keep(suspension)

    async def get(self, suspension_id: str) -> StoredSuspension | None:
        """The suspension or its tombstone, expired or not, if it is held."""
        return self._held.get(suspension_id)

    async def find(self, session_id: str | None, tool_call_id: str) -> list[StoredSuspension]:
        """This session's suspensions of the tool call and their tombstones, newest first, expired ones too."""
        numbers = self._calls.get((session_id, tool_call_id), [])
        return [self._held[self._ids[number]] for number in reversed(numbers[-MAX_FOUND:])]

    async def undecided(self, *, now: float, limit: int) -> list[StoredSuspension]:
        """Unexpired, undecided, unclaimed suspensions of every session, oldest first, at most ``limit``."""
        waiting: list[StoredSuspension] = []
        for number in self._undecided:
            if len(waiting) >= limit:
                break
            known = self._held[self._ids[number]]
            if known.expires_at > now:
                waiting.append(known)
        return waiting

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
        """Remove the suspensions and tombstones that expired at or before ``now``."""
        removed = 0
        expiries = self._expiries
        while expiries and expiries[0][0] <= now:
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

    async def aclose(self) -> None:
        """Nothing to release."""

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
                bisect.insort(self._undecided, number)
        if suspension.tool_call_id is not None:
            bisect.insort(self._calls.setdefault((suspension.session_id, suspension.tool_call_id), []), number)
        if new_expiry:
            heapq.heappush(self._expiries, (suspension.expires_at, number))

    def _unindex(self, suspension: StoredSuspension) -> None:
        """Take ``suspension`` out of every index but the expiries (a stale expiry is skipped when popped)."""
        number = self._numbers[suspension.id]
        if not suspension.claimed:
            _discard(self._unclaimed, suspension.session_id, suspension.id)
            if suspension.decision is None:
                _remove(self._undecided, number)
        if suspension.tool_call_id is not None:
            key = (suspension.session_id, suspension.tool_call_id)
            _remove(self._calls[key], number)
            if not self._calls[key]:
                del self._calls[key]


def _discard(sets: dict[str | None, set[str]], key: str | None, member: str) -> None:
    members = sets[key]
    members.discard(member)
    if not members:
        del sets[key]


def _remove(numbers: list[int], number: int) -> None:
    del numbers[bisect.bisect_left(numbers, number)]


def _size(suspension: StoredSuspension) -> int:
    """What holding ``suspension`` costs: its bytes and strings, and what every entry costs beside them."""
    strings = len(suspension.id) + len(suspension.session_id or "") + len(suspension.tool_call_id or "")
    return _ENTRY_BYTES + strings + len(suspension.record) + len(suspension.decision or b"")
