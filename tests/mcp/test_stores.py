"""Connection stores: a bound kept by least-recently-used eviction, principal-bound resume, durable records.

Every store holds the same contract; the SQLite file and a real PostgreSQL (pgserver) hold it
across processes too. Processes race on a start line written to their stdin once each is
ready, never on sleeps.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from mycelium.mcp import ConnectionStore, MemoryConnections, PostgresConnections, SqliteConnections
from tests.support.connections_worker import open_connections
from tests.support.paths import ROOT, worker
from tests.support.racing import race

WORKER = worker("connections_worker")

Factory = Callable[[Path], ConnectionStore]
STORES: dict[str, Factory] = {
    "memory": lambda path: MemoryConnections(),
    "sqlite-file": lambda path: SqliteConnections(path / "c.sqlite"),
    "sqlite-memory": lambda path: SqliteConnections(":memory:"),
}


def describe(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """How to reach one shared store, for this process and for a worker process."""
    if kind == "sqlite":
        return {"kind": "sqlite", "path": str(tmp_path / "c.sqlite")}
    uri = request.getfixturevalue("postgres_uri")  # only PostgreSQL tests start the server
    return {"kind": "postgres", "dsn": uri, "table": request.getfixturevalue("postgres_table")}


@pytest.fixture(params=[*STORES, "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ConnectionStore]:
    if request.param == "postgres":
        made = open_connections(describe("postgres", request, tmp_path))
    else:
        made = STORES[request.param](tmp_path)
    yield made
    await made.aclose()


@pytest.fixture(params=["sqlite", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """A store other processes can open too."""
    return describe(request.param, request, tmp_path)


async def test_every_store_meets_the_protocol(store: ConnectionStore) -> None:
    assert isinstance(store, ConnectionStore)


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


async def test_a_shared_store_keeps_the_bound_when_two_stores_open_at_once(shared: dict[str, str]) -> None:
    stores = [open_connections(shared) for _ in range(2)]
    opened: list[list[str] | None] = []

    async def open_many(store: ConnectionStore, prefix: str) -> None:
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


async def test_postgres_records_survive_a_new_store_on_the_same_table(postgres_uri: str, postgres_table: str) -> None:
    first = PostgresConnections(postgres_uri, table=postgres_table)
    await first.open("a", "p", bound=4)
    await first.aclose()
    second = PostgresConnections(postgres_uri, table=postgres_table)
    try:
        assert await second.resume("a", "p")
    finally:
        await second.aclose()


async def test_a_shared_store_keeps_the_bound_across_processes_that_start_at_once(shared: dict[str, str]) -> None:
    # Each process makes the table on its first use, after the start line: the makes race too.
    bound, per_process, processes = 5, 15, 3
    command = [*WORKER, json.dumps(shared), str(bound), str(per_process)]
    results = await race(command, processes=processes, cwd=ROOT)
    assert all(result["refused"] == 0 for result in results)  # each keeps only its previous one: room is made
    check = open_connections(shared)
    try:
        alive = [
            name
            for index in range(processes)
            for number in range(per_process)
            if await check.resume(name := f"{results[index]['prefix']}{number}", "p")
        ]
    finally:
        await check.aclose()
    assert len(alive) <= bound
    # Every connection opened is still open or was evicted exactly once.
    evicted = [name for result in results for name in result["evicted"]]
    assert len(evicted) == len(set(evicted)) == processes * per_process - len(alive)


def test_postgres_connections_refuse_a_table_name_that_is_not_a_plain_identifier() -> None:
    for name in ("Mixed", "has space", "x" * 49, 'quo"te', ""):
        with pytest.raises(ValueError, match="plain lower-case identifier"):
            PostgresConnections("postgresql://unused", table=name)
    with pytest.raises(ValueError, match="a dsn or a pool"):
        PostgresConnections("postgresql://unused", pool=object())  # type: ignore[arg-type]


async def test_a_closed_postgres_store_refuses_to_answer(postgres_uri: str, postgres_table: str) -> None:
    store = PostgresConnections(postgres_uri, table=postgres_table)
    await store.ping()
    await store.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await store.resume("a", "p")


async def test_ping_raises_when_the_database_does_not_answer(postgres_uri: str, postgres_table: str) -> None:
    import asyncpg

    database = f"gone_{postgres_table}"
    await _admin(postgres_uri, f'CREATE DATABASE "{database}"')
    store = PostgresConnections(_with_database(postgres_uri, database), table=postgres_table)
    try:
        await store.ping()
        await _admin(postgres_uri, f'DROP DATABASE "{database}" WITH (FORCE)')
        with pytest.raises(asyncpg.InvalidCatalogNameError):
            await store.ping()
    finally:
        await store.aclose()


async def _admin(uri: str, sql: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(uri)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


def _with_database(uri: str, database: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(uri)
    return urlunsplit(parts._replace(path=f"/{database}"))
