"""The suspension store contract, held by every store: memory, SQLite and a real PostgreSQL (pgserver).

A store keeps sealed records it never reads; what it owes the runtime is atomicity: one
decision per suspension, one claim per suspension (also across processes and
connections), a tombstone in place of what was claimed until it would have expired, and
a bound per session that concurrent puts cannot pass. Processes race on a start line
written to their stdin once each has connected, never on sleeps.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import aclosing, closing
from pathlib import Path

import anyio
import pytest

from mycelium.suspensions import (
    MemorySuspensions,
    PostgresSuspensions,
    SqliteSuspensions,
    StoredSuspension,
    SuspensionLimitReached,
    SuspensionStore,
)
from mycelium.suspensions._memory import _ENTRY_BYTES, _size
from mycelium.suspensions._sqlite import HELD
from mycelium.suspensions._store import MAX_FOUND
from tests.support import release_0_1_0
from tests.support.paths import ROOT, worker
from tests.support.racing import race
from tests.support.store_worker import TOMBSTONE, encode, open_store

WORKER = worker("store_worker")
EXPIRED = -1.0  # seconds from now


def suspension(
    suspension_id: str = "s-1",
    *,
    session: str | None = "session-1",
    call: str | None = "call-1",
    expires_in: float = 3600.0,
    record: bytes = b"sealed",
) -> StoredSuspension:
    return StoredSuspension(suspension_id, session, call, time.time() + expires_in, record)


async def claim(store: SuspensionStore, suspension_id: str, *, now: float | None = None) -> StoredSuspension | None:
    """Claim ``suspension_id`` as a resume does, leaving :data:`TOMBSTONE` in its place."""
    return await store.claim(suspension_id, now=time.time() if now is None else now, tombstone=TOMBSTONE)


def tombstone_of(stored: StoredSuspension) -> StoredSuspension:
    """What a store holds of ``stored`` once it is claimed."""
    return dataclasses.replace(stored, record=TOMBSTONE, claimed=True)


def describe(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """How to reach one shared store, for this process and for a worker process."""
    if kind == "sqlite":
        return {"kind": "sqlite", "path": str(tmp_path / "suspensions.sqlite")}
    uri = request.getfixturevalue("postgres_uri")  # only PostgreSQL tests start the server
    return {"kind": "postgres", "dsn": uri, "table": request.getfixturevalue("postgres_table")}


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SuspensionStore]:
    made = MemorySuspensions() if request.param == "memory" else open_store(describe(request.param, request, tmp_path))
    yield made
    await made.aclose()


@pytest.fixture(params=["sqlite", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """A store other processes can open too."""
    return describe(request.param, request, tmp_path)


async def test_every_store_meets_the_protocol(store: SuspensionStore) -> None:
    assert isinstance(store, SuspensionStore)


async def test_a_stored_suspension_reads_back_as_it_was_stored(store: SuspensionStore) -> None:
    with_call = suspension("with-call")
    bare = suspension("bare", session=None, call=None)
    await store.put(with_call, max_per_session=5)
    await store.put(bare, max_per_session=5)
    assert await store.get("with-call") == with_call
    assert await store.get("bare") == bare
    assert await store.get("absent") is None


@pytest.mark.parametrize("record", [b"", b"\x00", bytes(range(256))])
async def test_the_store_keeps_records_and_decisions_byte_for_byte(store: SuspensionStore, record: bytes) -> None:
    stored = suspension(record=record)
    await store.put(stored, max_per_session=5)
    assert await store.decide(stored.id, record + b"\x00", now=time.time())
    taken = await claim(store, stored.id)
    assert taken is not None
    assert (taken.record, taken.decision) == (record, record + b"\x00")


async def test_a_claim_returns_the_suspension_and_leaves_its_tombstone(store: SuspensionStore) -> None:
    stored = suspension()
    await store.put(stored, max_per_session=5)
    assert await claim(store, stored.id) == stored
    assert await store.get(stored.id) == tombstone_of(stored)
    assert await store.find("session-1", "call-1") == [tombstone_of(stored)]


async def test_a_tombstone_is_never_claimed_or_decided_again(store: SuspensionStore) -> None:
    stored = suspension()
    await store.put(stored, max_per_session=5)
    await claim(store, stored.id)
    assert await claim(store, stored.id) is None
    assert not await store.decide(stored.id, b"approved", now=time.time())
    assert await store.get(stored.id) == tombstone_of(stored)  # neither changed it


async def test_a_tombstone_keeps_its_decision(store: SuspensionStore) -> None:
    await store.put(suspension(), max_per_session=5)
    assert await store.decide("s-1", b"approved", now=time.time())
    await claim(store, "s-1")
    tombstone = await store.get("s-1")
    assert tombstone is not None
    assert (tombstone.claimed, tombstone.decision) == (True, b"approved")


@pytest.mark.parametrize("size", [1, 300 * 1024, 2 * 1024 * 1024])
async def test_a_record_comes_back_whole_whatever_its_size(store: SuspensionStore, size: int) -> None:
    # SQLite reads a small record on the event loop and a large one in its thread: both whole.
    stored = suspension(record=bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    await store.put(stored, max_per_session=5)
    assert await store.get(stored.id) == stored
    assert await store.find("session-1", "call-1") == [stored]
    assert await store.get("missing") is None


async def test_a_tombstone_holds_its_id_so_it_is_never_stored_again(store: SuspensionStore) -> None:
    stored = suspension()
    await store.put(stored, max_per_session=5)
    await claim(store, stored.id)
    with pytest.raises(ValueError, match=stored.id):
        await store.put(stored, max_per_session=5)
    assert await store.get(stored.id) == tombstone_of(stored)


async def test_tombstones_do_not_count_against_the_bound(store: SuspensionStore) -> None:
    for number in range(2):
        await store.put(suspension(f"claimed-{number}"), max_per_session=2)
        await claim(store, f"claimed-{number}")
    await store.put(suspension("live-0"), max_per_session=2)
    await store.put(suspension("live-1"), max_per_session=2)
    with pytest.raises(SuspensionLimitReached):
        await store.put(suspension("live-2"), max_per_session=2)


async def test_a_tombstone_is_purged_once_its_suspension_would_have_expired(store: SuspensionStore) -> None:
    stored = suspension()
    await store.put(stored, max_per_session=5)
    await claim(store, stored.id)
    assert await store.purge_expired(now=stored.expires_at - 1) == 0
    assert await store.get(stored.id) == tombstone_of(stored)
    assert await store.purge_expired(now=stored.expires_at) == 1
    assert await store.get(stored.id) is None
    assert await store.find("session-1", "call-1") == []


async def test_restoring_a_tombstone_gives_the_suspension_back_to_be_claimed_again(store: SuspensionStore) -> None:
    stored = suspension()
    await store.put(stored, max_per_session=5)
    assert await store.decide(stored.id, b"approved", now=time.time())
    taken = await claim(store, stored.id)
    assert taken is not None
    assert await store.restore(taken)
    assert await store.get(stored.id) == taken
    assert await claim(store, stored.id) == taken


async def test_restoring_a_tombstone_stores_the_suspension_as_given(store: SuspensionStore) -> None:
    stored = suspension()
    await store.put(stored, max_per_session=5)
    await claim(store, stored.id)
    given = dataclasses.replace(
        stored, session_id=None, expires_at=stored.expires_at + 10, record=b"other", claimed=True
    )
    assert await store.restore(given)
    assert await store.get(stored.id) == dataclasses.replace(given, claimed=False)


async def test_restoring_what_is_no_tombstone_changes_nothing(store: SuspensionStore) -> None:
    stored = suspension()
    await store.put(stored, max_per_session=5)
    assert not await store.restore(dataclasses.replace(stored, record=b"other"))
    assert not await store.restore(suspension("absent"))
    assert await store.get(stored.id) == stored
    assert await store.get("absent") is None


async def test_a_restored_suspension_counts_against_the_bound_again(store: SuspensionStore) -> None:
    await store.put(suspension("s-0"), max_per_session=1)
    taken = await claim(store, "s-0")
    assert taken is not None
    await store.put(suspension("s-1"), max_per_session=1)  # the tombstone made room
    assert await store.restore(taken)  # given back over the bound: it was stored within it
    with pytest.raises(SuspensionLimitReached):
        await store.put(suspension("s-2"), max_per_session=2)


async def test_an_expired_suspension_is_never_claimed_but_still_found_until_purged(store: SuspensionStore) -> None:
    expired = suspension("expired", expires_in=EXPIRED)
    await store.put(expired, max_per_session=5)
    assert await store.get("expired") == expired  # get still reports it
    assert await store.find("session-1", "call-1") == [expired]  # so a replay of its call is refused, not rerun
    assert await claim(store, "expired") is None
    assert await store.get("expired") == expired  # no tombstone: nothing was claimed
    await store.purge_expired(now=time.time())
    assert await store.find("session-1", "call-1") == []


async def test_a_suspension_expires_at_its_expiry_time(store: SuspensionStore) -> None:
    stored = suspension()
    await store.put(stored, max_per_session=5)
    assert await claim(store, stored.id, now=stored.expires_at) is None
    assert not await store.decide(stored.id, b"yes", now=stored.expires_at)
    assert await claim(store, stored.id, now=stored.expires_at - 1) == stored


async def test_find_gives_the_suspensions_of_one_call_newest_first(store: SuspensionStore) -> None:
    for stored in (
        suspension("expired", expires_in=EXPIRED),
        suspension("older"),
        suspension("newer"),
        suspension("other-call", call="call-2"),
        suspension("other-session", session="session-2"),
    ):
        await store.put(stored, max_per_session=5)
    assert [found.id for found in await store.find("session-1", "call-1")] == ["newer", "older", "expired"]
    await claim(store, "newer")
    found = [(found.id, found.claimed) for found in await store.find("session-1", "call-1")]
    assert found == [("newer", True), ("older", False), ("expired", False)]
    assert await store.find("session-3", "call-1") == []


async def test_find_gives_at_most_max_found(store: SuspensionStore) -> None:
    for number in range(MAX_FOUND + 3):
        await store.put(suspension(f"s{number:02}"), max_per_session=MAX_FOUND + 3)
    found = await store.find("session-1", "call-1")
    assert [stored.id for stored in found] == [f"s{number:02}" for number in range(MAX_FOUND + 2, 2, -1)]


async def test_no_session_is_apart_from_every_real_session(store: SuspensionStore) -> None:
    await store.put(suspension("none", session=None), max_per_session=1)
    await store.put(suspension("real", session="None"), max_per_session=1)  # not full: the other is sessionless
    with pytest.raises(SuspensionLimitReached):
        await store.put(suspension("none-2", session=None), max_per_session=1)
    assert [(found.id, found.session_id) for found in await store.find(None, "call-1")] == [("none", None)]
    assert [found.id for found in await store.find("None", "call-1")] == ["real"]


async def test_a_suspension_is_decided_once(store: SuspensionStore) -> None:
    await store.put(suspension(), max_per_session=5)
    assert await store.decide("s-1", b"approved", now=time.time())
    assert not await store.decide("s-1", b"declined", now=time.time())
    taken = await claim(store, "s-1")
    assert taken is not None
    assert taken.decision == b"approved"


async def test_an_expired_or_absent_suspension_is_not_decided(store: SuspensionStore) -> None:
    await store.put(suspension("expired", expires_in=EXPIRED), max_per_session=5)
    assert not await store.decide("expired", b"approved", now=time.time())
    assert not await store.decide("absent", b"approved", now=time.time())
    expired = await store.get("expired")
    assert expired is not None
    assert expired.decision is None


async def test_undecided_lists_only_waiting_suspensions_of_every_session_oldest_first(store: SuspensionStore) -> None:
    for suspension_id, session in (("first", "session-1"), ("second", "session-2"), ("third", None)):
        await store.put(suspension(suspension_id, session=session), max_per_session=5)
    for suspension_id in ("decided", "claimed"):
        await store.put(suspension(suspension_id), max_per_session=5)
    await store.put(suspension("expired", expires_in=EXPIRED), max_per_session=5)
    assert await store.decide("decided", b"approved", now=time.time())
    assert await claim(store, "claimed") is not None
    listed = await store.undecided(now=time.time(), limit=10)
    assert [(found.id, found.session_id) for found in listed] == [
        ("first", "session-1"),
        ("second", "session-2"),
        ("third", None),
    ]


async def test_undecided_gives_at_most_its_limit(store: SuspensionStore) -> None:
    for n in range(4):
        await store.put(suspension(f"s-{n}", session=f"session-{n}"), max_per_session=5)
    assert [found.id for found in await store.undecided(now=time.time(), limit=2)] == ["s-0", "s-1"]


async def test_purge_removes_and_counts_only_expired_suspensions(store: SuspensionStore) -> None:
    now = time.time()
    for suspension_id, expires_at in (("long-gone", now - 10), ("just-gone", now), ("kept", now + 10)):
        await store.put(StoredSuspension(suspension_id, "session-1", None, expires_at, b"r"), max_per_session=5)
    assert await store.purge_expired(now=now) == 2
    assert [await store.get(name) is not None for name in ("long-gone", "just-gone", "kept")] == [False, False, True]
    assert await store.purge_expired(now=now) == 0


async def test_a_full_session_refuses_the_next_suspension_and_stores_nothing(store: SuspensionStore) -> None:
    for number in range(3):
        await store.put(suspension(f"s-{number}"), max_per_session=3)
    with pytest.raises(SuspensionLimitReached):
        await store.put(suspension("s-3"), max_per_session=3)
    assert await store.get("s-3") is None
    await store.put(suspension("elsewhere", session="session-2"), max_per_session=3)  # other sessions unaffected
    await claim(store, "s-0")
    await store.put(suspension("s-3"), max_per_session=3)  # a claim makes room: a tombstone is not counted


async def test_expired_suspensions_do_not_count_against_the_bound(store: SuspensionStore) -> None:
    for number in range(2):
        await store.put(suspension(f"expired-{number}", expires_in=EXPIRED), max_per_session=2)
    await store.put(suspension("live-0"), max_per_session=2)
    await store.put(suspension("live-1"), max_per_session=2)
    with pytest.raises(SuspensionLimitReached):
        await store.put(suspension("live-2"), max_per_session=2)


async def test_the_memory_store_holds_at_most_its_bytes_whatever_the_sessions_and_stores_nothing_past_them() -> None:
    store = MemorySuspensions(max_bytes=10_000 + 3 * _ENTRY_BYTES)  # three entries and 10,000 bytes
    for number in range(2):  # sessions that came and went, each well within its own bound
        await store.put(suspension(f"s-{number}", session=f"session-{number}", record=bytes(4_000)), max_per_session=5)
    with pytest.raises(SuspensionLimitReached):
        await store.put(suspension("s-2", session="session-2", record=bytes(4_000)), max_per_session=5)
    assert await store.get("s-2") is None
    await store.put(suspension("small", session="session-2", record=bytes(200)), max_per_session=5)


async def test_the_memory_store_makes_room_as_suspensions_are_claimed_or_expire() -> None:
    store = MemorySuspensions(max_bytes=9_000 + 2 * _ENTRY_BYTES)  # two entries and 9,000 bytes
    await store.put(suspension("claimed", record=bytes(5_000)), max_per_session=5)
    await store.put(suspension("expiring", expires_in=EXPIRED, record=bytes(3_500)), max_per_session=5)
    await claim(store, "claimed")  # its tombstone is all that is left of it
    await store.put(suspension("next", record=bytes(6_000)), max_per_session=5)  # the expired one made way
    assert await store.get("expiring") is None
    assert await store.decide("next", bytes(100), now=time.time())  # a decision is held too
    tombstone, held = tombstone_of(suspension("claimed", record=bytes(5_000))), suspension("next", record=bytes(6_000))
    room = 9_000 + 2 * _ENTRY_BYTES - _size(tombstone) - _size(held)
    over = suspension("over", record=bytes(room - 50 - _size(suspension("over", record=b""))))
    with pytest.raises(SuspensionLimitReached):
        await store.put(over, max_per_session=5)  # it would fit with 50 bytes to spare but for the decision's 100


async def test_the_memory_store_counts_what_each_suspension_costs_beside_its_record() -> None:
    store = MemorySuspensions(max_bytes=100_000)
    held = 0
    with contextlib.suppress(SuspensionLimitReached):
        for number in range(1_000):
            await store.put(suspension(f"s-{number}", session=f"session-{number}", record=b""), max_per_session=5)
            held += 1
    assert held < 200  # a thousand empty records are not free: each costs its entry


@pytest.mark.parametrize("max_bytes", [0, -1, 1.5, "1"])
def test_the_memory_store_refuses_a_bound_that_is_no_positive_int(max_bytes: object) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        MemorySuspensions(max_bytes=max_bytes)  # type: ignore[arg-type]


async def test_an_id_already_stored_is_refused(store: SuspensionStore) -> None:
    first = suspension("same")
    await store.put(first, max_per_session=5)
    with pytest.raises(ValueError, match="same"):
        await store.put(suspension("same", session="session-2", record=b"other"), max_per_session=5)
    assert await store.get("same") == first


async def test_of_twenty_concurrent_claims_of_one_suspension_exactly_one_wins(store: SuspensionStore) -> None:
    stored = suspension()
    await store.put(stored, max_per_session=5)
    taken: list[StoredSuspension | None] = []

    async def claim_one() -> None:
        taken.append(await claim(store, "s-1"))

    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(claim_one)
    assert len(taken) == 20
    assert [result for result in taken if result is not None] == [stored]
    assert await store.get(stored.id) == tombstone_of(stored)


async def test_claims_racing_from_two_connections_win_each_suspension_exactly_once(shared: dict[str, str]) -> None:
    stored = {suspension_id: suspension(suspension_id) for suspension_id in (f"s-{number}" for number in range(20))}
    ids = list(stored)
    won: list[str] = []

    async def claim_one(store: SuspensionStore, suspension_id: str) -> None:
        if await claim(store, suspension_id) is not None:
            won.append(suspension_id)

    async with aclosing(open_store(shared)) as first, aclosing(open_store(shared)) as second:
        for kept in stored.values():
            await first.put(kept, max_per_session=20)
        await second.get("connect now, so the race starts at the claims")
        async with anyio.create_task_group() as group:
            for suspension_id in ids:
                group.start_soon(claim_one, first, suspension_id)
                group.start_soon(claim_one, second, suspension_id)
        assert sorted(won) == sorted(ids)
        assert [await second.get(suspension_id) for suspension_id in ids] == [
            tombstone_of(kept) for kept in stored.values()
        ]


async def test_closing_a_store_twice_is_harmless(store: SuspensionStore) -> None:
    await store.aclose()
    await store.aclose()


async def test_a_closed_store_refuses_to_be_used(shared: dict[str, str]) -> None:
    store = open_store(shared)
    await store.get("s-1")
    await store.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await store.get("s-1")


async def claim_in_two_processes(shared: dict[str, str], ids: list[str]) -> list[list[str]]:
    """The ids each of two worker processes won when both claimed all of them at once."""
    return await race([*WORKER, "claim", json.dumps(shared), *ids], cwd=ROOT)


async def test_two_processes_claiming_the_same_suspensions_win_each_exactly_once(shared: dict[str, str]) -> None:
    stored = {suspension_id: suspension(suspension_id) for suspension_id in (f"s-{number}" for number in range(50))}
    ids = list(stored)
    async with aclosing(open_store(shared)) as store:
        for kept in stored.values():
            await store.put(kept, max_per_session=50)
        first, second = await claim_in_two_processes(shared, ids)
        assert sorted(first + second) == sorted(ids)
        assert [await store.get(suspension_id) for suspension_id in ids] == [
            tombstone_of(kept) for kept in stored.values()
        ]


async def test_a_suspension_stored_by_one_process_is_read_by_another(shared: dict[str, str]) -> None:
    stored = suspension(session=None, record=b"\x00sealed\xff")
    await anyio.run_process([*WORKER, "put", json.dumps(shared), encode(stored)], stderr=None, cwd=ROOT)
    async with aclosing(open_store(shared)) as store:
        assert await store.get(stored.id) == stored
        assert await store.find(None, "call-1") == [stored]


async def test_puts_racing_from_two_stores_never_pass_the_bound(shared: dict[str, str]) -> None:
    refused = 0

    async def put(store: SuspensionStore, suspension_id: str) -> None:
        nonlocal refused
        try:
            await store.put(suspension(suspension_id), max_per_session=5)
        except SuspensionLimitReached:
            refused += 1

    # Two stores are two connections (two pools): their first use also races to make the table.
    async with aclosing(open_store(shared)) as first, aclosing(open_store(shared)) as second:
        ids = [f"s-{number}" for number in range(20)]
        async with anyio.create_task_group() as group:
            for number, suspension_id in enumerate(ids):
                group.start_soon(put, (first, second)[number % 2], suspension_id)
        assert refused == 15
        assert sum([await first.get(suspension_id) is not None for suspension_id in ids]) == 5


# -- stores made by earlier releases ------------------------------------------------------------


def sqlite_columns(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as db:
        return [column for _, column, *_ in db.execute("PRAGMA table_info(suspensions)")]


async def test_a_sqlite_file_of_release_0_1_0_gains_the_claimed_column_in_place(tmp_path: Path) -> None:
    path = tmp_path / "suspensions.sqlite"
    shutil.copyfile(release_0_1_0.SQLITE, path)
    assert "claimed" not in sqlite_columns(path)
    async with aclosing(SqliteSuspensions(path)) as store:
        (kept,) = await store.find(None, release_0_1_0.TOOL_CALL_ID)
        assert not kept.claimed
        assert await claim(store, kept.id) == kept
        assert await store.get(kept.id) == tombstone_of(kept)
    assert sqlite_columns(path)[-1] == "claimed"
    async with aclosing(SqliteSuspensions(path)) as again:  # opening it again changes nothing more
        assert await again.get(kept.id) == tombstone_of(kept)
    assert sqlite_columns(path).count("claimed") == 1


async def test_two_connections_opening_a_release_0_1_0_sqlite_file_at_once_both_use_it(tmp_path: Path) -> None:
    path = tmp_path / "suspensions.sqlite"
    shutil.copyfile(release_0_1_0.SQLITE, path)
    found: list[list[StoredSuspension]] = []

    async def use(store: SuspensionStore) -> None:
        found.append(await store.find(None, release_0_1_0.TOOL_CALL_ID))

    # Each store opens its own connection in a thread of its own: both add the column, or see it added.
    async with aclosing(SqliteSuspensions(path)) as first, aclosing(SqliteSuspensions(path)) as second:
        async with anyio.create_task_group() as group:
            group.start_soon(use, first)
            group.start_soon(use, second)
    assert [len(each) for each in found] == [1, 1]
    assert sqlite_columns(path).count("claimed") == 1


async def test_a_postgres_table_of_release_0_1_0_gains_the_claimed_column_in_place(
    postgres_uri: str, postgres_table: str
) -> None:
    import asyncpg

    old = suspension(session=None)
    connection = await asyncpg.connect(postgres_uri)
    try:
        await connection.execute(release_0_1_0.POSTGRES_TABLE.format(table=postgres_table))
        await connection.execute(
            f"INSERT INTO {postgres_table} ({release_0_1_0.POSTGRES_COLUMNS}) VALUES ($1, '', $2, $3, $4, NULL)",
            old.id,
            old.tool_call_id,
            old.expires_at,
            old.record,
        )
        # Two stores are two pools: their first use races to alter the table.
        async with (
            aclosing(PostgresSuspensions(postgres_uri, table=postgres_table)) as first,
            aclosing(PostgresSuspensions(postgres_uri, table=postgres_table)) as second,
        ):
            found: list[StoredSuspension | None] = []

            async def use(store: SuspensionStore) -> None:
                found.append(await store.get(old.id))

            async with anyio.create_task_group() as group:
                group.start_soon(use, first)
                group.start_soon(use, second)
            assert found == [old, old]
            assert await claim(first, old.id) == old
            assert await second.get(old.id) == tombstone_of(old)
        columns = await connection.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position",
            postgres_table,
        )
        assert [column["column_name"] for column in columns][-1] == "claimed"
    finally:
        await connection.close()


def test_a_sqlite_store_names_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "suspensions.sqlite"
    with pytest.raises(ValueError, match=re.escape(str(path))):
        SqliteSuspensions(path)


async def test_a_sqlite_file_is_made_on_first_use(tmp_path: Path) -> None:
    path = tmp_path / "suspensions.sqlite"
    async with aclosing(SqliteSuspensions(path)) as store:
        assert not path.exists()
        await store.put(suspension(), max_per_session=1)
    assert path.exists()


@pytest.mark.parametrize("table", ["", "Suspensions", "s; DROP TABLE x", "public.s", '"s"', "1s", "s" * 49])
def test_a_postgres_table_must_be_a_plain_identifier(table: str) -> None:
    with pytest.raises(ValueError, match="plain"):
        PostgresSuspensions("postgresql://unused", table=table)


async def test_a_pool_given_to_the_postgres_store_stays_the_callers(postgres_uri: str, postgres_table: str) -> None:
    import asyncpg

    pool = await asyncpg.create_pool(postgres_uri, min_size=1, max_size=2)
    try:
        store = PostgresSuspensions(pool=pool, table=postgres_table)
        await store.put(suspension(), max_per_session=1)
        await store.aclose()
        assert await pool.fetchval(f"SELECT count(*) FROM {postgres_table}") == 1
    finally:
        await pool.close()


def test_the_postgres_store_imports_without_asyncpg_and_says_how_to_install_it() -> None:
    script = """
import sys
sys.modules["asyncpg"] = None  # as if it were not installed
import anyio
from mycelium.suspensions import PostgresSuspensions
try:
    anyio.run(PostgresSuspensions("postgresql://unused").get, "s-1")
except ImportError as error:
    print(error)
"""
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert "pip install 'mycelium-codemode[postgres]'" in finished.stdout


# -- counting a session's pauses ---------------------------------------------------------------


async def test_a_sqlite_store_counts_a_sessions_pauses_without_reading_its_tombstones(tmp_path: Path) -> None:
    # A file an earlier release made gets the index too, once it has the column the index needs.
    path = tmp_path / "suspensions.sqlite"
    shutil.copyfile(release_0_1_0.SQLITE, path)
    async with aclosing(SqliteSuspensions(path)) as store:
        await store.find(None, release_0_1_0.TOOL_CALL_ID)  # opens the file
    with closing(sqlite3.connect(path)) as db:
        plan = " ".join(str(step) for step in db.execute(f"EXPLAIN QUERY PLAN {HELD}", ("s", 0.0)))
    assert "USING INDEX suspensions_held" in plan


async def test_a_postgres_store_counts_a_sessions_pauses_without_reading_its_tombstones(
    postgres_uri: str, postgres_table: str
) -> None:
    import asyncpg

    async with aclosing(PostgresSuspensions(postgres_uri, table=postgres_table)) as store:
        await store.put(suspension(), max_per_session=5)  # makes the table
        connection = await asyncpg.connect(postgres_uri)
        try:
            # A table this small is read whole unless told otherwise: what matters is that the index can answer.
            await connection.execute("SET enable_seqscan = off")
            plan = "\n".join(row[0] for row in await connection.fetch(f"EXPLAIN {store.held_query}", "s", 0.0))
        finally:
            await connection.close()
    assert f"{postgres_table}_held" in plan
