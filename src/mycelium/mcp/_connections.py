"""Where MCP connections are recorded: in memory, or in SQLite so they survive a restart.

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
from typing import Protocol, runtime_checkable

import anyio

__all__ = ["ConnectionStore", "MemoryConnections", "SqliteConnections"]


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
            self._db.execute("PRAGMA journal_mode=WAL")
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

    async def aclose(self) -> None:
        """Close the database file."""
        with self._lock:
            self._db.close()

    async def _run(self, sql: str, parameters: tuple[object, ...]) -> int:
        def run() -> int:
            with self._lock:
                return self._db.execute(sql, parameters).rowcount

        return await anyio.to_thread.run_sync(run)
