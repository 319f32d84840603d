"""The storage contract for suspended runs.

A store keeps sealed records and a few plain columns to find them by. It never reads a
record: sealing (an HMAC under the host's key) and everything inside belong to the
runtime, which refuses a record whose seal does not match. What a store guarantees is
atomicity: deciding a suspension sets its decision once, and claiming one takes it in
one step, so two resumes of the same suspension (in one process or in two) end with
exactly one of them holding it.

A claimed suspension is not forgotten: its row stays, marked claimed, as a *tombstone*
until the suspension would have expired, so a retry of a resume, or of the tool call
that paused, is told the run already went on instead of finding nothing and starting
the program again. The tombstone's record is a small one the runtime seals for it (who
the suspension was, without the paused state), so it costs the store a few hundred
bytes and the program's text, not the snapshot.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, runtime_checkable

__all__ = [
    "COLUMNS",
    "MAX_FOUND",
    "StoredSuspension",
    "SuspensionLimitReached",
    "SuspensionStore",
    "from_row",
    "to_row",
]


MAX_FOUND = 16
"""The most suspensions :meth:`SuspensionStore.find` returns for one tool call."""


@dataclass(frozen=True)
class StoredSuspension:
    """One suspended run as a store holds it."""

    id: str
    """Unique, unguessable, chosen by the runtime."""
    session_id: str | None
    """The host session the run belongs to (``None`` for a session-free host)."""
    tool_call_id: str | None
    """The tool call the run answers, so re-invoking the same call can find it."""
    expires_at: float
    """Unix time (seconds) after which it can no longer be claimed."""
    record: bytes
    """The sealed record. Opaque to the store."""
    decision: bytes | None = None
    """The sealed decision a person made, once :meth:`SuspensionStore.decide` set it."""
    claimed: bool = False
    """A tombstone: the suspension was claimed (resumed or discarded), and ``record`` is the
    small one :meth:`SuspensionStore.claim` was given for it. Never claimed or decided again."""

    def __post_init__(self) -> None:
        # Stores keep "no session" apart from every session; session ids are never empty.
        if self.session_id == "":
            raise ValueError("StoredSuspension.session_id must be a non-empty string or None")
        # A store orders and compares expiry times: a NaN would compare false with every time.
        if not math.isfinite(self.expires_at):
            raise ValueError(f"StoredSuspension.expires_at must be a finite time, got {self.expires_at!r}")


class SuspensionLimitReached(Exception):
    """The session already holds as many suspensions as the store allows; nothing was stored."""


@runtime_checkable
class SuspensionStore(Protocol):
    """Keeps suspended runs until they expire, and the tombstones of claimed ones as long.

    Every method is safe to call concurrently.
    """

    async def put(self, suspension: StoredSuspension, *, max_per_session: int) -> None:
        """Store ``suspension``.

        Raises :class:`SuspensionLimitReached` (storing nothing) when its session already
        holds ``max_per_session`` suspensions that have not expired and are not claimed.
        Raises ``ValueError`` for an id already stored, a tombstone's too.
        """
        ...

    async def get(self, suspension_id: str) -> StoredSuspension | None:
        """The stored suspension or its tombstone, expired or not; ``None`` when there is neither."""
        ...

    async def find(self, session_id: str | None, tool_call_id: str) -> list[StoredSuspension]:
        """This session's suspensions of one tool call and their tombstones, newest stored first,
        expired ones too (until they are purged); at most :data:`MAX_FOUND` of them."""
        ...

    async def undecided(self, *, now: float, limit: int) -> list[StoredSuspension]:
        """Suspensions of every session that are unexpired, undecided and unclaimed, oldest stored
        first; at most ``limit`` of them. What an approval screen lists."""
        ...

    async def decide(self, suspension_id: str, decision: bytes, *, now: float) -> bool:
        """Set the decision of an unexpired, undecided, unclaimed suspension in one atomic step.

        Returns ``False`` (changing nothing) when it is absent, expired, decided or claimed.
        """
        ...

    async def claim(self, suspension_id: str, *, now: float, tombstone: bytes) -> StoredSuspension | None:
        """Take an unexpired, unclaimed suspension, in one atomic step: return it as it was, and
        leave in its place its tombstone (``claimed``, its record replaced by ``tombstone``, the
        rest as it was) until it is purged.

        Of two concurrent claims of one id, exactly one gets it; the other gets ``None``, as
        does a claim of an absent, expired or claimed suspension (changing nothing).
        """
        ...

    async def restore(self, suspension: StoredSuspension) -> bool:
        """Turn the tombstone of ``suspension.id`` back into ``suspension`` (as given, but
        unclaimed), in one atomic step: a claim given up on gives the suspension back.

        Returns ``False`` (changing nothing) when no tombstone of that id is stored.
        """
        ...

    async def purge_expired(self, *, now: float) -> int:
        """Remove every suspension and tombstone that expired at or before ``now``; how many were removed."""
        ...

    async def aclose(self) -> None:
        """Release the store's resources (connections, threads). Idempotent."""
        ...


Row: TypeAlias = tuple[str, str, "str | None", float, bytes, "bytes | None", bool]

COLUMNS = "id, session, tool_call_id, expires_at, record, decision, claimed"
"""The columns an SQL store keeps, in the order of :func:`to_row`."""


def to_row(suspension: StoredSuspension) -> Row:
    """A suspension as an SQL row. No session is the empty string, which no session id is."""
    return (
        suspension.id,
        suspension.session_id or "",
        suspension.tool_call_id,
        suspension.expires_at,
        suspension.record,
        suspension.decision,
        suspension.claimed,
    )


def from_row(row: Sequence[Any]) -> StoredSuspension:
    """The suspension an SQL row (in :data:`COLUMNS` order) holds."""
    suspension_id, session, tool_call_id, expires_at, record, decision, claimed = row
    return StoredSuspension(
        suspension_id, session or None, tool_call_id, expires_at, bytes(record), decision, bool(claimed)
    )
