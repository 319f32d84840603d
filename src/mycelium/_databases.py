"""What the SQL stores share: SQLite's switch to WAL, and a PostgreSQL table behind a pool made on first use.

The connection records of the MCP server and the suspensions of a runtime are different
tables with different contracts; what they share is how they reach their database, and it
is written once here.
"""

from __future__ import annotations

import abc
import re
import sqlite3
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    import asyncpg

__all__ = ["PostgresTable", "use_wal"]

_TABLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,47}")


def use_wal(db: sqlite3.Connection) -> None:
    """Put the file in WAL mode, so readers never wait for a writer."""
    try:
        db.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError:
        # The switch fails at once, without the busy wait, while another connection holds the file (two
        # processes making it at the same moment): wait for it as an exclusive transaction does, then switch.
        db.execute("BEGIN EXCLUSIVE")
        db.execute("COMMIT")
        db.execute("PRAGMA journal_mode=WAL")


class PostgresTable(abc.ABC):
    """A store in one PostgreSQL table: a ``dsn`` (``None`` reads the ``PG*`` environment variables)
    or a ``pool`` of the caller's; a pool made here is made on first use and closed by :meth:`aclose`,
    the caller's is left to them. The table is made on first use, by :meth:`_create_table`."""

    def __init__(self, dsn: str | None, pool: asyncpg.Pool | None, table: str) -> None:
        if not isinstance(table, str) or not _TABLE_NAME.fullmatch(table):
            raise ValueError(f"table must be a plain lower-case identifier of at most 48 characters, not {table!r}")
        if dsn is not None and pool is not None:
            raise ValueError("give a dsn or a pool, not both")
        self._dsn = dsn
        self._pool = pool
        self._owns_pool = pool is None
        self._table = f'"{table}"'
        self._name = table
        self._ready = False
        self._closed = False
        self._opening = anyio.Lock()

    async def aclose(self) -> None:
        """Close the pool if this store made it."""
        async with self._opening:
            self._closed = True
            if self._owns_pool and self._pool is not None:
                await self._pool.close()
            self._pool = None

    async def _connected(self) -> asyncpg.Pool:
        """The pool, made and with the table made on the first call."""
        async with self._opening:
            if self._closed:
                raise RuntimeError(f"the {type(self).__name__} store is closed")
            if self._pool is None:
                self._pool = await self._create_pool()
            if not self._ready:
                await self._create_table(self._pool)
                self._ready = True
            return self._pool

    async def _create_pool(self) -> asyncpg.Pool:
        try:
            import asyncpg
        except ImportError as error:
            raise ImportError(
                f"{type(self).__name__} needs asyncpg: pip install 'mycelium-codemode[postgres]'"
            ) from error
        pool: asyncpg.Pool = await asyncpg.create_pool(self._dsn, min_size=1, max_size=10)
        return pool

    @abc.abstractmethod
    async def _create_table(self, pool: asyncpg.Pool) -> None:
        """Make the table (and what it needs) if it is not there; safe when several processes do it at once."""
