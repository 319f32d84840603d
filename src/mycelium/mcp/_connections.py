"""Where MCP connections are recorded: in memory, in SQLite so they survive a restart, or in
PostgreSQL so every replica of a server shares them.

A connection store keeps open connections in least-recently-used order and answers
atomically: open this connection within ``bound`` (evicting the least recently used
idle ones, or refusing when every one is busy), is this id an open connection of this
principal, and forget it. Principals are stored by their
:func:`~mycelium.mcp._principals.principal_key`, which names an actor and is never a
credential. Real clients rarely end their connections, so a bound that only refused
would lock users out: eviction is what keeps it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import anyio

from .._databases import PostgresTable, use_wal

if TYPE_CHECKING:
    import asyncpg

__all__ = ["ConnectionStore", "MemoryConnections", "PostgresConnections", "SqliteConnections"]

# Lower case, so the quoted name is the table an unquoted query names too; at most 48 characters,
# so the names of the sequence and the index made from it stay within PostgreSQL's 63.


@runtime_checkable
class ConnectionStore(Protocol):
    """Records which connections are open and whose they are."""

    async def open(
        self, connection_id: str, principal: str, *, bound: int, keep: Collection[str] = ()
    ) -> list[str] | None:
        """Record ``connection_id`` as open for ``principal``, keeping at most ``bound`` open.

        Returns the ids evicted to make room (least recently used first, never one in
        ``keep``), or ``None`` when there is no room: nothing is recorded then.
        """
        ...

    async def resume(self, connection_id: str, principal: str) -> bool:
        """Whether ``connection_id`` is open and was opened by ``principal``; if so it is now the most recent."""
        ...

    async def touch(self, connection_id: str) -> None:
        """Mark ``connection_id`` as just used."""
        ...

    async def close(self, connection_id: str) -> None:
        """Forget ``connection_id``. Idempotent."""
        ...

    async def aclose(self) -> None:
        """Release the store's resources."""
        ...


class MemoryConnections:
    """Connections kept in this process only: a restart forgets them."""

    def __init__(self) -> None:
        self._open: OrderedDict[str, str] = OrderedDict()  # least recently used first

    async def open(
        self, connection_id: str, principal: str, *, bound: int, keep: Collection[str] = ()
    ) -> list[str] | None:
        """Record the connection, evicting least recently used idle ones beyond ``bound``."""
        if connection_id in self._open:
            return None
        excess = len(self._open) + 1 - bound
        evicted = [known for known in self._open if known not in keep][: max(excess, 0)]
        if len(evicted) < excess:
            return None
        for known in evicted:
            del self._open[known]
        self._open[connection_id] = principal
        return evicted

    async def resume(self, connection_id: str, principal: str) -> bool:
        """Whether the connection is open and ``principal``'s."""
        if self._open.get(connection_id) != principal:
            return False
        self._open.move_to_end(connection_id)
        return True

    async def touch(self, connection_id: str) -> None:
        """Make the connection the most recently used."""
        if connection_id in self._open:
            self._open.move_to_end(connection_id)

    async def close(self, connection_id: str) -> None:
        """Forget the connection."""
        self._open.pop(connection_id, None)

    async def aclose(self) -> None:
        """Nothing to release."""


class SqliteConnections:
    """Connections kept in a SQLite file (or ``":memory:"``), so a restarted server resumes them.

    The table is created on first use. Each answer is one statement in its own
    transaction, run in a worker thread so a slow disk never holds the event loop.
    """

    def __init__(self, path: str | Path) -> None:
        self._path = str(path)
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None, timeout=10)
        self._lock = threading.Lock()
        with self._lock:
            use_wal(self._db)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS mcp_connections ("
                " id TEXT PRIMARY KEY, principal TEXT NOT NULL, used_at REAL NOT NULL)"
            )

    async def open(
        self, connection_id: str, principal: str, *, bound: int, keep: Collection[str] = ()
    ) -> list[str] | None:
        """Record the connection, evicting least recently used idle ones beyond ``bound``, in one transaction."""

        def open_() -> list[str] | None:
            with self._lock:
                db = self._db
                db.execute("BEGIN IMMEDIATE")  # the count and the insert see one state, also across processes
                try:
                    if db.execute("SELECT 1 FROM mcp_connections WHERE id = ?", (connection_id,)).fetchone():
                        db.execute("ROLLBACK")
                        return None
                    rows = db.execute("SELECT id FROM mcp_connections ORDER BY used_at, rowid").fetchall()
                    excess = len(rows) + 1 - bound
                    evicted = [row[0] for row in rows if row[0] not in keep][: max(excess, 0)]
                    if len(evicted) < excess:
                        db.execute("ROLLBACK")
                        return None
                    db.executemany("DELETE FROM mcp_connections WHERE id = ?", [(known,) for known in evicted])
                    db.execute(
                        "INSERT INTO mcp_connections (id, principal, used_at) VALUES (?, ?, ?)",
                        (connection_id, principal, time.time()),
                    )
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
                return evicted

        return await anyio.to_thread.run_sync(open_)

    async def resume(self, connection_id: str, principal: str) -> bool:
        """Whether the connection is recorded as open for ``principal``; if so, mark it used."""
        changed = await self._run(
            "UPDATE mcp_connections SET used_at = ? WHERE id = ? AND principal = ?",
            (time.time(), connection_id, principal),
        )
        return changed == 1

    async def touch(self, connection_id: str) -> None:
        """Mark the connection used."""
        await self._run("UPDATE mcp_connections SET used_at = ? WHERE id = ?", (time.time(), connection_id))

    async def close(self, connection_id: str) -> None:
        """Forget the connection."""
        await self._run("DELETE FROM mcp_connections WHERE id = ?", (connection_id,))

    async def ping(self) -> None:
        """Read the table once, so a file that cannot be read raises; for health checks.

        A caller that stops waiting (a check's timeout) is let go at once; the read finishes in its thread.
        """

        def read() -> None:
            with self._lock:
                self._db.execute("SELECT 1 FROM mcp_connections LIMIT 1").fetchall()

        await anyio.to_thread.run_sync(read, abandon_on_cancel=True)

    async def aclose(self) -> None:
        """Close the database file."""
        with self._lock:
            self._db.close()

    async def _run(self, sql: str, parameters: tuple[object, ...]) -> int:
        def run() -> int:
            with self._lock:
                return self._db.execute(sql, parameters).rowcount

        return await anyio.to_thread.run_sync(run)


class PostgresConnections(PostgresTable):
    """Connections kept in a PostgreSQL table, shared by every server process that uses it.

    Give a ``dsn`` (``None`` reads the ``PG*`` environment variables) or a ``pool`` of your
    own; a pool made here is closed by :meth:`aclose`, yours is left to you. Needs asyncpg
    (``pip install 'mycelium-codemode[postgres]'``). The table, and a sequence that orders
    uses, are made on first use, also when several processes start at once. Opening a
    connection is one transaction that takes the table's lock for opening, so the bound
    holds across every process; resuming, touching and closing are one statement each.
    Recency comes from the sequence, never from a clock, so replicas whose clocks disagree
    still evict the least recently used.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: asyncpg.Pool | None = None,
        table: str = "mycelium_connections",
    ) -> None:
        super().__init__(dsn, pool, table)
        self._used = f'"{table}_used"'
        self._index = f'"{table}_by_use"'

    async def open(
        self, connection_id: str, principal: str, *, bound: int, keep: Collection[str] = ()
    ) -> list[str] | None:
        """Record the connection, evicting least recently used idle ones beyond ``bound``, in one transaction."""
        pool = await self._connected()
        async with pool.acquire() as connection, connection.transaction():
            # Every open of every process queues here, so no two of them count the same rows.
            await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", f"{self._table}:open")
            if await connection.fetchval(f"SELECT 1 FROM {self._table} WHERE id = $1", connection_id):
                return None
            held: int = await connection.fetchval(f"SELECT count(*) FROM {self._table}")
            excess = held + 1 - bound
            evicted: list[str] = []
            if excess > 0:
                rows = await connection.fetch(
                    f"SELECT id FROM {self._table} WHERE NOT (id = ANY($1::text[])) ORDER BY used LIMIT $2",
                    list(keep),
                    excess,
                )
                evicted = [row["id"] for row in rows]
                if len(evicted) < excess:
                    return None
                await connection.execute(f"DELETE FROM {self._table} WHERE id = ANY($1::text[])", evicted)
            await connection.execute(
                f"INSERT INTO {self._table} (id, principal, used) VALUES ($1, $2, nextval('{self._used}'))",
                connection_id,
                principal,
            )
            return evicted

    async def resume(self, connection_id: str, principal: str) -> bool:
        """Whether the connection is recorded as open for ``principal``; if so, mark it used."""
        pool = await self._connected()
        changed = await pool.fetchval(
            f"UPDATE {self._table} SET used = nextval('{self._used}') WHERE id = $1 AND principal = $2 RETURNING true",
            connection_id,
            principal,
        )
        return changed is not None

    async def touch(self, connection_id: str) -> None:
        """Mark the connection used."""
        pool = await self._connected()
        await pool.execute(f"UPDATE {self._table} SET used = nextval('{self._used}') WHERE id = $1", connection_id)

    async def close(self, connection_id: str) -> None:
        """Forget the connection."""
        pool = await self._connected()
        await pool.execute(f"DELETE FROM {self._table} WHERE id = $1", connection_id)

    async def ping(self) -> None:
        """One trivial query, so a database that does not answer raises; for health checks."""
        pool = await self._connected()
        await pool.fetchval("SELECT 1")

    async def _create_table(self, pool: asyncpg.Pool) -> None:
        async with pool.acquire() as connection, connection.transaction():
            # Two processes creating one table at once can collide in the catalog; the lock makes them take turns.
            await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", f"{self._table}:create")
            await connection.execute(f"CREATE SEQUENCE IF NOT EXISTS {self._used}")
            await connection.execute(
                f"CREATE TABLE IF NOT EXISTS {self._table} ("
                " id text PRIMARY KEY,"
                " principal text NOT NULL,"
                " used bigint NOT NULL)"
            )
            await connection.execute(f"CREATE INDEX IF NOT EXISTS {self._index} ON {self._table} (used)")
