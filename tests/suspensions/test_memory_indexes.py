"""The memory store answers from indexes; they must answer as a read of every suspension would.

A state machine drives one :class:`MemorySuspensions` and a plain model of the store (a dict
in storage order, every question answered by reading all of it) with the same operations,
and compares every answer, refusal and the bytes counted. Expiry times are picked from a few
fixed points around the time the machine starts, and the ``now`` of each operation is a test
clock that the machine moves forward in steps of its own, so that what has expired is decided
by the test, not by how long it runs (a store may read its clock as one that never goes back).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from mycelium.suspensions import MemorySuspensions, StoredSuspension, SuspensionLimitReached
from mycelium.suspensions._memory import _ENTRY_BYTES, _PURGE_BATCH, _size
from mycelium.suspensions._store import MAX_FOUND
from tests.support.turns import turns_during

T = TypeVar("T")

IDS = [f"s-{number}" for number in range(12)]
SESSIONS = [None, "session-a", "session-b"]
CALLS = [None, "call-1", "call-2"]
EXPIRIES = [-100.0, 100.0, 200.0, 300.0]  # seconds from the start; put reads the clock, which is near 0
STEPS = [0.0, 50.0, 100.0, 150.0]  # how far the test clock moves at a time
MAX_PER_SESSION = 3
MAX_BYTES = 6_000


class Model:
    """The store as its contract says, answered by reading every suspension."""

    def __init__(self) -> None:
        self.held: dict[str, StoredSuspension] = {}

    def put(self, suspension: StoredSuspension, now: float) -> None:
        held = sum(
            1
            for known in self.held.values()
            if known.session_id == suspension.session_id and known.expires_at > now and not known.claimed
        )
        if held >= MAX_PER_SESSION:
            raise SuspensionLimitReached
        if suspension.id in self.held:
            raise ValueError
        # Expired suspensions make room, the earliest expired first (in storage order at one
        # time), and no more of them than the room needed.
        expired = sorted((known for known in self.held.values() if known.expires_at <= now), key=expiry)
        while expired and self.size() + _size(suspension) > MAX_BYTES:
            del self.held[expired.pop(0).id]
        if self.size() + _size(suspension) > MAX_BYTES:
            raise SuspensionLimitReached
        self.held[suspension.id] = suspension

    def find(self, session_id: str | None, tool_call_id: str) -> list[StoredSuspension]:
        key = (session_id, tool_call_id)
        return [s for s in reversed(self.held.values()) if (s.session_id, s.tool_call_id) == key][:MAX_FOUND]

    def undecided(self, now: float, limit: int) -> list[StoredSuspension]:
        waiting = [s for s in self.held.values() if s.expires_at > now and s.decision is None and not s.claimed]
        return waiting[:limit]

    def decide(self, suspension_id: str, decision: bytes, now: float) -> bool:
        known = self.held.get(suspension_id)
        if known is None or known.expires_at <= now or known.decision is not None or known.claimed:
            return False
        self.held[suspension_id] = dataclasses.replace(known, decision=decision)
        return True

    def claim(self, suspension_id: str, now: float) -> StoredSuspension | None:
        known = self.held.get(suspension_id)
        if known is None or known.expires_at <= now or known.claimed:
            return None
        self.held[suspension_id] = dataclasses.replace(known, record=b"tombstone", claimed=True)
        return known

    def restore(self, suspension: StoredSuspension) -> bool:
        known = self.held.get(suspension.id)
        if known is None or not known.claimed:
            return False
        self.held[suspension.id] = dataclasses.replace(suspension, claimed=False)
        return True

    def purge(self, now: float) -> int:
        expired = [known.id for known in self.held.values() if known.expires_at <= now]
        for suspension_id in expired:
            del self.held[suspension_id]
        return len(expired)

    def size(self) -> int:
        return sum(map(_size, self.held.values()))


def expiry(suspension: StoredSuspension) -> float:
    return suspension.expires_at


class MemoryStoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.start = time.time()
        self.store = MemorySuspensions(max_bytes=MAX_BYTES)
        self.model = Model()
        self.now = self.start  # the test clock
        self.claimed: dict[str, StoredSuspension] = {}  # what each claim returned, to restore

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    @rule(
        suspension_id=st.sampled_from(IDS),
        session=st.sampled_from(SESSIONS),
        call=st.sampled_from(CALLS),
        expiry=st.sampled_from(EXPIRIES),
        record=st.integers(0, 2_000),
    )
    def put(self, suspension_id: str, session: str | None, call: str | None, expiry: float, record: int) -> None:
        suspension = StoredSuspension(suspension_id, session, call, self.start + expiry, bytes(record))
        expected = outcome(lambda: self.model.put(suspension, time.time()))
        assert outcome(lambda: self.run(self.store.put(suspension, max_per_session=MAX_PER_SESSION))) == expected

    @rule(session=st.sampled_from(SESSIONS), call=st.sampled_from(CALLS[1:]))
    def find(self, session: str | None, call: str) -> None:
        assert self.run(self.store.find(session, call)) == self.model.find(session, call)

    @rule(step=st.sampled_from(STEPS))
    def advance(self, step: float) -> None:
        self.now += step

    @rule(limit=st.integers(0, 5))
    def undecided(self, limit: int) -> None:
        assert self.run(self.store.undecided(now=self.now, limit=limit)) == self.model.undecided(self.now, limit)

    @rule(suspension_id=st.sampled_from(IDS), decision=st.integers(0, 500))
    def decide(self, suspension_id: str, decision: int) -> None:
        expected = self.model.decide(suspension_id, bytes(decision), self.now)
        assert self.run(self.store.decide(suspension_id, bytes(decision), now=self.now)) == expected

    @rule(suspension_id=st.sampled_from(IDS))
    def claim(self, suspension_id: str) -> None:
        expected = self.model.claim(suspension_id, self.now)
        claimed = self.run(self.store.claim(suspension_id, now=self.now, tombstone=b"tombstone"))
        assert claimed == expected
        if claimed is not None:
            self.claimed[suspension_id] = claimed

    @rule(suspension_id=st.sampled_from(IDS), expiry=st.sampled_from([None, *EXPIRIES]))
    def restore(self, suspension_id: str, expiry: float | None) -> None:
        given = self.claimed.get(suspension_id)
        if given is None:
            given = StoredSuspension(suspension_id, "session-a", "call-1", self.start + EXPIRIES[1], b"never claimed")
        if expiry is not None:  # restored as given: even with another expiry than it had
            given = dataclasses.replace(given, expires_at=self.start + expiry)
        assert self.run(self.store.restore(given)) == self.model.restore(given)

    @rule()
    def purge(self) -> None:
        assert self.run(self.store.purge_expired(now=self.now)) == self.model.purge(self.now)

    @invariant()
    def everything_held_reads_back_and_is_counted(self) -> None:
        for suspension_id in IDS:
            assert self.run(self.store.get(suspension_id)) == self.model.held.get(suspension_id)
        assert self.store._bytes == self.model.size()

    def teardown(self) -> None:
        self.loop.close()


def outcome(action: Any) -> object:
    """What an action returned, or the type of what it raised."""
    try:
        return action()
    except (SuspensionLimitReached, ValueError) as exc:
        return type(exc)


MemoryStoreMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=60, deadline=None, derandomize=True
)
TestMemoryStoreMachine = MemoryStoreMachine.TestCase


class Watched(float):
    """An expiry time that counts how often a store compares it."""

    compared = 0

    def __gt__(self, other: object) -> bool:
        Watched.compared += 1
        return float(self) > other  # type: ignore[operator]

    def __le__(self, other: object) -> bool:
        Watched.compared += 1
        return float(self) <= other  # type: ignore[operator]


async def test_a_memory_store_answers_for_one_session_without_reading_the_others() -> None:
    store = MemorySuspensions()
    later = time.time() + 3600
    for number in range(10_000):  # sessions that came and went, each leaving a pause
        others = StoredSuspension(f"other-{number}", f"session-{number}", "call", Watched(later), b"")
        await store.put(others, max_per_session=20)
    await store.claim("other-0", now=time.time(), tombstone=b"")
    Watched.compared = 0
    for number in range(3):
        await store.put(StoredSuspension(f"mine-{number}", "mine", "call", later, b""), max_per_session=3)
    with pytest.raises(SuspensionLimitReached):
        await store.put(StoredSuspension("mine-3", "mine", "call", later, b""), max_per_session=3)
    assert [found.id for found in await store.find("mine", "call")] == ["mine-2", "mine-1", "mine-0"]
    assert await store.purge_expired(now=time.time()) == 0
    assert [found.id for found in await store.undecided(now=time.time(), limit=2)] == ["other-1", "other-2"]
    # The purge looks at the earliest expiry and the listing at what it gives: not at the 10,000 held.
    assert Watched.compared < 10


async def test_a_purge_lets_other_tasks_run_between_its_batches() -> None:
    store = MemorySuspensions()
    for pause in expired_pauses(3 * _PURGE_BATCH):
        await store.put(pause, max_per_session=1)
    purged, turns = await turns_during(lambda: store.purge_expired(now=time.time()))
    assert purged == 3 * _PURGE_BATCH
    assert turns >= 2  # between the batches, not only once it was done


def expired_pauses(count: int) -> list[StoredSuspension]:
    """Small pauses, each of a session of its own, that expired a second ago."""
    expired = time.time() - 1
    return [StoredSuspension(f"s-{number}", f"session-{number}", None, expired, b"") for number in range(count)]


async def test_a_large_pause_makes_room_among_many_small_expired_ones_a_batch_per_loop_turn() -> None:
    small = expired_pauses(3 * _PURGE_BATCH)
    store = MemorySuspensions(max_bytes=sum(map(_size, small)))
    for pause in small:
        await store.put(pause, max_per_session=1)
    large = StoredSuspension("large", "session", None, time.time() + 3600, bytes(store._bytes - 2 * _ENTRY_BYTES))
    _, turns = await turns_during(lambda: store.put(large, max_per_session=1))
    assert await store.get("large") == large
    assert turns >= 2


async def test_a_listing_past_many_expired_pauses_lets_the_loop_turn_and_lists_the_live_ones() -> None:
    store = MemorySuspensions()
    for pause in expired_pauses(3 * _PURGE_BATCH):
        await store.put(pause, max_per_session=1)
    later = time.time() + 3600
    for number in range(2):
        await store.put(StoredSuspension(f"live-{number}", "session", None, later, b""), max_per_session=2)
    listed, turns = await turns_during(lambda: store.undecided(now=time.time(), limit=5))
    assert [pause.id for pause in listed] == ["live-0", "live-1"]
    assert turns >= 2


async def test_a_full_store_drops_only_the_expired_suspensions_it_needs_the_earliest_first() -> None:
    now = time.time()
    entries = [
        StoredSuspension(f"s-{number}", f"session-{number}", "call", now - 10 + number, bytes(1_000))
        for number in range(3)
    ]
    store = MemorySuspensions(max_bytes=sum(map(_size, entries)) + 100)  # room for the three, not for a fourth
    for entry in reversed(entries):  # stored latest expiry first: the order of expiry decides, not of storage
        await store.put(entry, max_per_session=1)
    await store.put(StoredSuspension("new", "session-new", "call", now + 3600, bytes(1_000)), max_per_session=1)
    assert [await store.get(entry.id) for entry in entries] == [None, entries[1], entries[2]]


@pytest.mark.parametrize("expires_at", [math.nan, math.inf, -math.inf])
def test_a_suspension_must_expire_at_a_finite_time(expires_at: float) -> None:
    with pytest.raises(ValueError, match="expires_at"):
        StoredSuspension("s-1", "session-1", "call", expires_at, b"")
