"""A runtime's opt-in to pausing runs at deferred decisions, and the seal on everything it stores.

What is stored is sealed: an HMAC-SHA256 under the host's ``key`` covers the sandbox's
state and everything the runtime needs to continue (identity, the next ordinal, the
revision the run was offered, the pending calls and their arguments). A record changed
in the store is refused; a decision is sealed to the one suspension it decides. The
newest key seals; it and every one of ``previous_keys`` open, so a key can be rotated
without refusing what was sealed before. Every
store operation is bounded in time, and a failing or silent store is
:class:`StoreUnavailable`, never a guess.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import anyio.lowlevel

from .._framing import frame, unframe
from .._options import check_int
from . import _records
from ._memory import MemorySuspensions
from ._records import PausedCall, Suspension, SuspensionRecord
from ._store import StoredSuspension, SuspensionLimitReached, SuspensionStore
from ._waiting import CHECK_EVERY_S, DecisionWaiters

__all__ = ["NO_SUSPENSIONS", "StoreUnavailable", "Suspensions", "required"]

T = TypeVar("T")

MIB = 1024 * 1024
UNSEAL_ON_LOOP_BYTES = 64 * 1024
"""A stored record larger than this is unsealed off the event loop: hashing it and decoding its
header (many short log lines, a many-keyed argument) could hold the loop for milliseconds. Less
takes about a millisecond at worst; a typical record is a few KiB."""
_MAC_BYTES = 32
_MIN_KEY_BYTES = 16
_RECORD_MAGIC = b"MYCSUSP1"
_DECISIONS = {True: b"approved", False: b"declined"}
NO_SUSPENSIONS = "this runtime keeps no suspensions: give it Runtime(suspensions=Suspensions(...))"


class StoreUnavailable(Exception):
    """The suspension store failed or did not answer in time; the cause is chained."""


@dataclass(frozen=True)
class Suspensions:
    """A runtime's opt-in to pausing runs at deferred decisions.

    - ``store``: where suspensions are kept (:class:`~mycelium.MemorySuspensions` by
      default; ``SqliteSuspensions`` survives a restart, ``PostgresSuspensions`` is shared by
      several servers).
    - ``key``: the HMAC key that seals what is stored, at least 16 bytes. Required for a
      store that outlives the process (every process that resumes needs the same key); a
      memory store gets a random one.
    - ``previous_keys``: older keys, each at least 16 bytes, that still open what they
      sealed (records and decisions) but seal nothing new. To rotate, give every process
      the new ``key`` with the old one here, then drop the old one once ``expires_after_ms``
      has passed: by then everything it sealed has expired.
    - ``expires_after_ms``: how long a suspension waits for its decision (24 hours).
    - ``max_per_session``: how many suspensions one session may hold at once (20). When
      it is full, a deferred call is refused as ``confirmation-unavailable`` and the run
      goes on; so it is when a paused run's state is over ``max_state_bytes`` (16 MiB).
    - ``store_timeout_ms``: how long one store operation may take (10 s, and never past the
      run's deadline). A store that fails or takes longer ends the run with an ``unknown``
      failure: whether it kept the pause is not known, so the run does not go on.
    """

    store: SuspensionStore = field(default_factory=MemorySuspensions)
    key: bytes | None = field(default=None, repr=False)
    previous_keys: tuple[bytes, ...] = field(default=(), repr=False)
    expires_after_ms: int = 86_400_000
    max_per_session: int = 20
    max_state_bytes: int = 16 * MIB
    store_timeout_ms: int = 10_000
    _waiters: DecisionWaiters = field(default_factory=DecisionWaiters, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.store, SuspensionStore):
            raise ValueError(f"Suspensions.store must implement SuspensionStore, got {type(self.store).__name__}")
        check_int("Suspensions.expires_after_ms", self.expires_after_ms)
        check_int("Suspensions.max_per_session", self.max_per_session)
        check_int("Suspensions.max_state_bytes", self.max_state_bytes)
        check_int("Suspensions.store_timeout_ms", self.store_timeout_ms)
        if self.key is None:
            if not isinstance(self.store, MemorySuspensions):
                raise ValueError(
                    "Suspensions.key is required with a store that outlives this process: every process "
                    "that resumes a suspension must seal and check it with the same key"
                )
            object.__setattr__(self, "key", secrets.token_bytes(32))
        elif not isinstance(self.key, bytes) or len(self.key) < _MIN_KEY_BYTES:
            raise ValueError("Suspensions.key must be bytes, at least 16 of them")
        # Named by position only: an error message must never quote a key.
        if not isinstance(self.previous_keys, tuple):
            raise ValueError(
                f"Suspensions.previous_keys must be a tuple of keys, got {type(self.previous_keys).__name__}"
            )
        for index, older in enumerate(self.previous_keys):
            if not isinstance(older, bytes) or len(older) < _MIN_KEY_BYTES:
                raise ValueError(f"Suspensions.previous_keys[{index}] must be bytes, at least 16 of them")

    async def stored(self, operation: Callable[[], Awaitable[T]], *, until: float | None = None) -> T:
        """Run one store operation within ``store_timeout_ms`` (and by ``until``, on anyio's clock).

        Raises :class:`StoreUnavailable` for any failure of the store (its own error, or
        taking too long); :class:`~mycelium.suspensions.SuspensionLimitReached` passes through.
        """
        within = self.store_timeout_ms / 1000
        if until is not None:
            within = max(0.0, min(within, until - anyio.current_time()))
        try:
            with anyio.fail_after(within):
                return await operation()
        except SuspensionLimitReached:
            raise
        except Exception as exc:
            raise StoreUnavailable(f"the suspension store failed: {type(exc).__name__}") from exc

    def new_id(self) -> str:
        """A fresh, unguessable suspension id."""
        return f"susp-{secrets.token_hex(16)}"

    async def seal(self, record: SuspensionRecord) -> StoredSuspension:
        """The stored form of ``record``, sealed under the key in a worker thread.

        Always there: how long encoding takes depends on the program's arguments and output,
        and measuring them first would cost as much on the loop as sealing them. A pause
        is rare, and the thread's round trip costs about 0.1 ms.
        """
        return await anyio.to_thread.run_sync(self._seal, record)

    def tombstone(self, record: SuspensionRecord) -> bytes:
        """The sealed record a store keeps in place of ``record`` once it is claimed (see
        :meth:`SuspensionRecord.tombstone`); small, so it is sealed on the event loop."""
        return self._seal(record.tombstone()).record

    async def unseal(self, stored: StoredSuspension) -> SuspensionRecord | None:
        """The record inside ``stored``, or ``None`` when its seal or its columns do not match it.

        Checking the seal hashes the whole record: a large one is checked off the event loop.
        """
        if len(stored.record) > UNSEAL_ON_LOOP_BYTES:
            return await anyio.to_thread.run_sync(self._unseal, stored)
        return self._unseal(stored)

    async def of_call(
        self, session_id: str | None, tool_call_id: str, code: str
    ) -> tuple[StoredSuspension, SuspensionRecord | None] | None:
        """The newest suspension of this session's tool call whose record is ``code``'s, expired,
        claimed (a tombstone) or not.

        Its record is ``None`` when the seal fails (such a suspension is refused, never taken for
        another program's). Raises :class:`StoreUnavailable` when the store fails.
        """
        found = await self.stored(lambda: self.store.find(session_id, tool_call_id))
        for index, stored in enumerate(found):
            if index:
                await anyio.lowlevel.checkpoint()  # records unsealed on the loop: let it turn between them
            record = await self.unseal(stored)
            if record is None or record.runs(code):  # else: another program under the same tool call id
                return stored, record
        return None

    async def waiting(self, session_id: str | None, tool_call_id: str, code: str) -> Suspension | None:
        """The unexpired suspension this session's tool call of ``code`` waits in, if any (see :meth:`of_call`)."""
        paused = await self.of_call(session_id, tool_call_id, code)
        record = paused[1] if paused is not None else None
        return record.suspension() if record is not None and _waits(record) else None

    async def pending(self, suspension_id: object, session_id: str | None) -> Suspension | None:
        """The unexpired, unclaimed suspension ``suspension_id`` of ``session_id``; ``None`` when there
        is none for that session, or its record fails its seal."""
        record = await self._pending_record(suspension_id, session_id)
        return record.suspension() if record is not None else None

    async def undecided(self, limit: int) -> list[Suspension]:
        """Up to ``limit`` suspensions of any session that wait for a person's decision, oldest first,
        for an approval screen. A handed-off run (nobody decides it) and a record failing its seal
        are left out. Raises :class:`StoreUnavailable` when the store fails."""
        found = await self.stored(lambda: self.store.undecided(now=_records.now(), limit=limit))
        waiting = []
        for index, stored in enumerate(found):
            if index:
                await anyio.lowlevel.checkpoint()  # records unsealed on the loop: let it turn between them
            record = await self.unseal(stored)
            if record is not None and _waits(record) and not record.handed_off:
                waiting.append(record.suspension())
        return waiting

    async def decide(self, suspension_id: str, approved: bool, session_id: str | None) -> bool:
        """Record a person's decision on an undecided, unexpired, unclaimed suspension of ``session_id``;
        whether it was. A handed-off run waits for nobody's decision: none is recorded for it."""
        record = await self._pending_record(suspension_id, session_id)
        if record is None or record.handed_off:
            return False
        sealed = self.seal_decision(suspension_id, approved)
        decided = await self.stored(lambda: self.store.decide(suspension_id, sealed, now=_records.now()))
        if decided:
            self._waiters.wake(suspension_id)
        return decided

    async def decide_as_approver(self, suspension_id: object, approved: bool) -> bool:
        """Record the decision of a person who decides for every session (an approval page) on an
        undecided, unexpired, unclaimed suspension; whether it was recorded (``False`` also for an
        id that names none)."""
        if not isinstance(suspension_id, str):
            return False
        stored = await self.stored(lambda: self.store.get(suspension_id))
        record = await self.unseal(stored) if stored is not None else None
        if record is None:
            return False
        return await self.decide(suspension_id, approved, record.session_id)

    async def discard(self, suspension_id: str, session_id: str | None) -> bool:
        """Drop an unexpired, unclaimed suspension of ``session_id`` unresumed; whether this call dropped it.

        Dropping is a claim: its tombstone stays, so a retry of its resume or tool call runs nothing.
        """
        record = await self._pending_record(suspension_id, session_id)
        if record is None:
            return False
        tombstone = self.tombstone(record)
        claimed = await self.stored(lambda: self.store.claim(suspension_id, now=_records.now(), tombstone=tombstone))
        if claimed is not None:
            self._waiters.wake(suspension_id)
        return claimed is not None

    async def until_decided(self, suspension_id: str, *, within_s: float) -> bool:
        """Wait up to ``within_s`` seconds until ``suspension_id`` no longer waits for a decision; whether
        it stopped waiting (decided, resumed, discarded, expired or gone) in that time.

        A decision recorded through this object ends the wait at once; one recorded by another
        process sharing the store is found within a second (the store is read once a second, one
        read shared by every waiter of the suspension). A store that fails or does not answer in
        time counts as still waiting: the caller learns nothing it could act on.
        """
        started = anyio.current_time()
        deadline = started + within_s

        def read() -> Awaitable[bool]:
            return self._still_waits(suspension_id, deadline)

        with self._waiters.watching(suspension_id) as watch:
            # A look the other waiters took within the last second is as good as one of this waiter's own.
            since = started - CHECK_EVERY_S
            # A read gets at least one check's time, so a last look just before the deadline can answer.
            while await watch.still_waits(since, max(deadline, anyio.current_time() + CHECK_EVERY_S), read):
                now = anyio.current_time()
                if now >= deadline:
                    return False
                woken = watch.woken
                # Every waiter looks again at the same moment, so one read answers them all.
                due = max(watch.read_at + CHECK_EVERY_S, now)
                with anyio.move_on_after(min(due, deadline) - now):
                    await woken.wait()
                if woken.is_set():
                    since = anyio.current_time()
                elif anyio.current_time() >= deadline:
                    return False  # the shared look is at most a second old: no look of its own
                else:
                    since = due
        return True

    async def _still_waits(self, suspension_id: str, deadline: float) -> bool:
        """Whether the store says ``suspension_id`` still waits for a decision (or could not say)."""
        until = max(deadline, anyio.current_time() + CHECK_EVERY_S)
        try:
            stored = await self.stored(lambda: self.store.get(suspension_id), until=until)
        except StoreUnavailable:
            return True
        if stored is None:
            return False
        return stored.decision is None and not stored.claimed and stored.expires_at > _records.now()

    async def purge_expired(self) -> int:
        """Remove expired suspensions from the store; how many were removed."""
        return await self.stored(lambda: self.store.purge_expired(now=_records.now()))

    def seal_decision(self, suspension_id: str, approved: bool) -> bytes:
        """A decision bound to one suspension."""
        word = _DECISIONS[approved]
        return word + self._mac(suspension_id.encode() + b":" + word)

    def open_decision(self, suspension_id: str, sealed: bytes | None) -> bool | None:
        """The decision sealed for ``suspension_id``; ``None`` when there is none or it is not one of ours."""
        if sealed is None:
            return None
        for approved, word in _DECISIONS.items():
            if sealed.startswith(word) and self._opens(sealed[len(word) :], suspension_id.encode() + b":" + word):
                return approved
        return None

    async def _pending_record(self, suspension_id: object, session_id: str | None) -> SuspensionRecord | None:
        if not isinstance(suspension_id, str):
            return None
        stored = await self.stored(lambda: self.store.get(suspension_id))
        record = await self.unseal(stored) if stored is not None else None
        if record is None or record.session_id != session_id or not _waits(record):
            return None
        return record

    def _seal(self, record: SuspensionRecord) -> StoredSuspension:
        header = {
            "id": record.id,
            "session_id": record.session_id,
            "tool_call_id": record.tool_call_id,
            "execution_id": record.execution_id,
            "code": record.code,
            "created_at": record.created_at,
            "expires_at": record.expires_at,
            "spent_ms": record.spent_ms,
            "next_ordinal": record.next_ordinal,
            "sources": dict(record.sources),
            "modules": dict(record.modules),
            "calls": [call.__dict__ for call in record.calls],
            "logs": list(record.logs),
            "resumed": record.resumed,
            "claimed": record.claimed,
            "requester": record.requester,
        }
        body = frame(_RECORD_MAGIC, header, record.state)
        return StoredSuspension(
            id=record.id,
            session_id=record.session_id,
            tool_call_id=record.tool_call_id,
            expires_at=record.expires_at,
            record=body + self._mac(body),
            claimed=record.claimed,
        )

    def _unseal(self, stored: StoredSuspension) -> SuspensionRecord | None:
        blob = stored.record
        body, mac = blob[:-_MAC_BYTES], blob[-_MAC_BYTES:]
        if len(blob) <= _MAC_BYTES or not self._opens(mac, body):
            return None
        try:
            header, state = unframe(_RECORD_MAGIC, body)
            record = SuspensionRecord(
                id=header["id"],
                session_id=header["session_id"],
                tool_call_id=header["tool_call_id"],
                execution_id=header["execution_id"],
                code=header["code"],
                created_at=header["created_at"],
                expires_at=header["expires_at"],
                spent_ms=header["spent_ms"],
                next_ordinal=header["next_ordinal"],
                sources=header["sources"],
                modules=header["modules"],
                calls=tuple(PausedCall(**call) for call in header["calls"]),
                logs=tuple(str(line) for line in header["logs"]),
                state=state,
                resumed=header["resumed"] is True,
                # Records sealed before tombstones existed say nothing of it: they were all unclaimed.
                claimed=header.get("claimed", False) is True,
                requester=_text_or_none(header.get("requester")),  # records of earlier releases name nobody
            )
        except (ValueError, TypeError, KeyError):
            return None  # sealed by us yet unreadable: a record of another version
        # The columns a store searches by must say what the sealed record says.
        columns = (stored.id, stored.session_id, stored.tool_call_id, stored.expires_at, stored.claimed)
        sealed = (record.id, record.session_id, record.tool_call_id, record.expires_at, record.claimed)
        if columns != sealed or not (record.calls or record.claimed):
            return None
        return record

    def _mac(self, data: bytes) -> bytes:
        """The seal of ``data`` under the newest key."""
        assert self.key is not None  # set in __post_init__
        return hmac.new(self.key, data, hashlib.sha256).digest()

    def _opens(self, mac: bytes, data: bytes) -> bool:
        """Whether ``mac`` seals ``data`` under any key of the ring (the newest tried first)."""
        assert self.key is not None  # set in __post_init__
        return any(
            hmac.compare_digest(mac, hmac.new(key, data, hashlib.sha256).digest())
            for key in (self.key, *self.previous_keys)
        )


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _waits(record: SuspensionRecord) -> bool:
    """Whether ``record`` still waits for its decision: unclaimed and unexpired."""
    return not record.claimed and record.expires_at > _records.now()


def required(suspensions: Suspensions | None) -> Suspensions:
    """``suspensions``, or the ``ValueError`` a host gets for asking a runtime that keeps none."""
    if suspensions is None:
        raise ValueError(NO_SUSPENSIONS)
    return suspensions
