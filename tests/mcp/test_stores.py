"""Connection stores: a bound kept by least-recently-used eviction, principal-bound resume, durable records."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from mycelium.mcp import ConnectionStore, MemoryConnections, SqliteConnections

Factory = Callable[[Path], ConnectionStore]
STORES: dict[str, Factory] = {
    "memory": lambda path: MemoryConnections(),
    "sqlite-file": lambda path: SqliteConnections(path / "c.sqlite"),
    "sqlite-memory": lambda path: SqliteConnections(":memory:"),
}


@pytest.fixture(params=list(STORES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ConnectionStore]:
    made = STORES[request.param](tmp_path)
    yield made
    await made.aclose()


async def test_opening_within_the_bound_evicts_nothing(store: ConnectionStore) -> None:
    assert await store.open("a", "p", bound=2) == []
    assert await store.open("b", "p", bound=2) == []


async def test_opening_past_the_bound_evicts_the_least_recently_used_not_kept(store: ConnectionStore) -> None:
    for name in "abc":
        assert await store.open(name, "p", bound=3) == []
    await store.touch("a")
    assert await store.open("d", "p", bound=3, keep={"b"}) == ["c"]
    assert [await store.resume(name, "p") for name in "abcd"] == [True, True, False, True]


async def test_when_every_record_is_kept_nothing_opens_and_nothing_is_evicted(store: ConnectionStore) -> None:
    await store.open("a", "p", bound=1)
    assert await store.open("b", "p", bound=1, keep={"a"}) is None
    assert await store.resume("a", "p")
    assert not await store.resume("b", "p")


async def test_an_id_already_open_is_not_opened_again(store: ConnectionStore) -> None:
    await store.open("a", "p", bound=4)
    assert await store.open("a", "q", bound=4) is None
    assert await store.resume("a", "p")
    assert not await store.resume("a", "q")


async def test_resume_answers_only_for_the_principal_that_opened_it(store: ConnectionStore) -> None:
    await store.open("a", '["member","alice","owner"]', bound=4)
    assert await store.resume("a", '["member","alice","owner"]')
    assert not await store.resume("a", '["agent","alice"]')
    assert not await store.resume("unknown", '["member","alice","owner"]')


async def test_close_forgets_and_is_idempotent(store: ConnectionStore) -> None:
    await store.open("a", "p", bound=4)
    await store.close("a")
    await store.close("a")
    assert not await store.resume("a", "p")
    assert await store.open("a", "p", bound=1) == []


async def test_sqlite_records_survive_a_new_store_on_the_same_file(tmp_path: Path) -> None:
    first = SqliteConnections(tmp_path / "deep" / "c.sqlite")
    await first.open("a", "p", bound=4)
    await first.aclose()
    second = SqliteConnections(tmp_path / "deep" / "c.sqlite")
    try:
        assert await second.resume("a", "p")
    finally:
        await second.aclose()


async def test_sqlite_keeps_the_bound_when_two_stores_open_at_once(tmp_path: Path) -> None:
    stores = [SqliteConnections(tmp_path / "c.sqlite") for _ in range(2)]
    opened: list[list[str] | None] = []

    async def open_many(store: SqliteConnections, prefix: str) -> None:
        for i in range(20):
            opened.append(await store.open(f"{prefix}{i}", "p", bound=5, keep={f"{prefix}{i - 1}"}))

    async with anyio.create_task_group() as group:
        for index, store in enumerate(stores):
            group.start_soon(open_many, store, f"s{index}-")
    alive = [
        name for prefix in ("s0-", "s1-") for i in range(20) if await stores[0].resume(name := f"{prefix}{i}", "p")
    ]
    assert len(alive) <= 5
    for store in stores:
        await store.aclose()
