"""Suspensions kept in this process only: the default, and gone when the process ends."""

from __future__ import annotations

import dataclasses
import time

from ._store import MAX_FOUND, StoredSuspension, SuspensionLimitReached

__all__ = ["MemorySuspensions"]


DEFAULT_MAX_BYTES = 256 * 1024 * 1024
_ENTRY_BYTES = 512
"""What one held suspension costs beside its own bytes and strings (its object, the dict's entry; measured
at about 300-500 bytes on CPython 3.11), so many small ones cannot hold twice the bound."""


class MemorySuspensions:
    """Suspensions in a dict of this process.

    What it holds is this process's memory, so it holds at most ``max_bytes`` (256 MiB) in all,
    whatever the sessions (each suspension counted as its records, decision and ids, and 512
    bytes for the entry itself): the per-session bound alone lets
    sessions that come and go (connections opened, paused, closed) pile up paused runs until
    they expire. A pause that would pass it is refused as a full session's is, and nothing is
    stored; expired suspensions are dropped first to make room.

    Every method runs to completion without awaiting, so on one event loop each is
    atomic: no other task sees a half-made change.
    """

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if type(max_bytes) is not int or max_bytes < 1:
            raise ValueError(f"MemorySuspensions max_bytes must be an int of at least 1, got {max_bytes!r}")
        self._max_bytes = max_bytes
        self._held: dict[str, StoredSuspension] = {}  # in the order they were stored
        self._bytes = 0  # the records and decisions of everything in _held

    async def put(self, suspension: StoredSuspension, *, max_per_session: int) -> None:
        """Store ``suspension`` unless its session is full, the store is, or its id is taken."""
        now = time.time()
        held = sum(
            1
            for known in self._held.values()
            if known.session_id == suspension.session_id and known.expires_at > now and not known.claimed
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
        self._keep(suspension)

    async def get(self, suspension_id: str) -> StoredSuspension | None:
        """The suspension or its tombstone, expired or not, if it is held."""
        return self._held.get(suspension_id)

    async def find(self, session_id: str | None, tool_call_id: str) -> list[StoredSuspension]:
        """This session's suspensions of the tool call and their tombstones, newest first, expired ones too."""
        found = [
            known
            for known in reversed(self._held.values())
            if known.session_id == session_id and known.tool_call_id == tool_call_id
        ]
        return found[:MAX_FOUND]

    async def undecided(self, *, now: float, limit: int) -> list[StoredSuspension]:
        """Unexpired, undecided, unclaimed suspensions of every session, oldest first, at most ``limit``."""
        waiting = (
            known
            for known in self._held.values()
            if known.expires_at > now and known.decision is None and not known.claimed
        )
        return [known for _, known in zip(range(limit), waiting, strict=False)]

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
        expired = [known.id for known in self._held.values() if known.expires_at <= now]
        for suspension_id in expired:
            self._bytes -= _size(self._held.pop(suspension_id))
        return len(expired)

    async def aclose(self) -> None:
        """Nothing to release."""

    def _keep(self, suspension: StoredSuspension) -> None:
        """Hold ``suspension`` in place of what was held under its id, counting the bytes of both."""
        replaced = self._held.get(suspension.id)
        if replaced is not None:
            self._bytes -= _size(replaced)
        self._held[suspension.id] = suspension
        self._bytes += _size(suspension)


def _size(suspension: StoredSuspension) -> int:
    """What holding ``suspension`` costs: its bytes and strings, and what every entry costs beside them."""
    strings = len(suspension.id) + len(suspension.session_id or "") + len(suspension.tool_call_id or "")
    return _ENTRY_BYTES + strings + len(suspension.record) + len(suspension.decision or b"")
