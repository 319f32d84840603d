"""Suspensions kept in PostgreSQL, so every server instance of a host shares them.

Needs asyncpg: ``pip install 'mycelium-codemode[postgres]'``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .._databases import PostgresTable
from ._store import COLUMNS, MAX_FOUND, StoredSuspension, SuspensionLimitReached, from_row, to_row

if TYPE_CHECKING:
    import asyncpg

__all__ = ["PostgresSuspensions"]

# Lower case, so the quoted name (quoted, a reserved word still works) is the table an unquoted query names;
# at most 48 characters, so the index name made from it stays within PostgreSQL's 63.
_CLAIMED = "claimed boolean NOT NULL DEFAULT false"
"""The column added since release 0.1.0: a table made before gets it when first used."""


class PostgresSuspensions(PostgresTable):
    """Suspensions in a PostgreSQL table, shared by every process that uses it.

    Give a ``dsn`` (``None`` reads the ``PG*`` environment variables) or a ``pool`` of
    your own; a pool made here is closed by :meth:`aclose`, yours is left to you. The
    table is made on first use; a table an earlier release made gets the columns it lacks
    then, in place. A run without a session is stored under the empty string: real
    session ids are never empty.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: asyncpg.Pool | None = None,
        table: str = "mycelium_suspensions",
    ) -> None:
        super().__init__(dsn, pool, table)
        self._index = f'"{table}_by_call"'
        self._held_index = f'"{table}_held"'
        self.held_query = f"SELECT count(*) FROM {self._table} WHERE session = $1 AND expires_at > $2 AND NOT claimed"
        """How many pauses a session holds, as :meth:`put` counts them (the held index answers it)."""

    async def put(self, suspension: StoredSuspension, *, max_per_session: int) -> None:
        """Store ``suspension`` unless its session is full or its id is taken, in one transaction."""
        pool = await self._connected()
        import asyncpg  # present: the pool was made

        session = suspension.session_id or ""
        async with pool.acquire() as connection, connection.transaction():
            # Two puts for one session queue here, so both cannot pass the count; other sessions never wait.
            await connection.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", f"{self._table}:{session}"
            )
            held = await connection.fetchval(self.held_query, session, time.time())
            if held >= max_per_session:
                raise SuspensionLimitReached(f"the session already holds {held} suspensions")
            try:
                await connection.execute(
                    f"INSERT INTO {self._table} ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)", *to_row(suspension)
                )
            except asyncpg.UniqueViolationError as error:
                raise ValueError(f"suspension {suspension.id!r} is already stored") from error

    async def get(self, suspension_id: str) -> StoredSuspension | None:
        """The suspension or its tombstone, expired or not, if it is stored."""
        return await self._one(f"SELECT {COLUMNS} FROM {self._table} WHERE id = $1", suspension_id)

    async def find(self, session_id: str | None, tool_call_id: str) -> list[StoredSuspension]:
        """This session's suspensions of the tool call and their tombstones, newest first, expired ones too."""
        pool = await self._connected()
        rows = await pool.fetch(
            f"SELECT {COLUMNS} FROM {self._table} WHERE session = $1 AND tool_call_id = $2"
            " ORDER BY stored DESC LIMIT $3",
            session_id or "",
            tool_call_id,
            MAX_FOUND,
        )
        return [from_row(row) for row in rows]

    async def undecided(self, *, now: float, limit: int) -> list[StoredSuspension]:
        """Unexpired, undecided, unclaimed suspensions of every session, oldest first, at most ``limit``."""
        pool = await self._connected()
        rows = await pool.fetch(
            f"SELECT {COLUMNS} FROM {self._table} WHERE expires_at > $1 AND decision IS NULL AND NOT claimed"
            " ORDER BY stored LIMIT $2",
            now,
            limit,
        )
        return [from_row(row) for row in rows]

    async def decide(self, suspension_id: str, decision: bytes, *, now: float) -> bool:
        """Set the decision of an unexpired, undecided, unclaimed suspension with one conditional update."""
        pool = await self._connected()
        changed = await pool.fetchval(
            f"UPDATE {self._table} SET decision = $2"
            " WHERE id = $1 AND expires_at > $3 AND decision IS NULL AND NOT claimed RETURNING true",
            suspension_id,
            decision,
            now,
        )
        return changed is not None

    async def claim(self, suspension_id: str, *, now: float, tombstone: bytes) -> StoredSuspension | None:
        """Return the suspension if it is stored, unexpired and unclaimed, leaving its tombstone, in one
        transaction."""
        pool = await self._connected()
        async with pool.acquire() as connection, connection.transaction():
            # RETURNING gives the row as updated, and the caller needs the record it replaces: read, then
            # update. A second claim waits at FOR UPDATE, then finds the row claimed and gets nothing.
            row = await connection.fetchrow(
                f"SELECT {COLUMNS} FROM {self._table} WHERE id = $1 AND expires_at > $2 AND NOT claimed FOR UPDATE",
                suspension_id,
                now,
            )
            if row is None:
                return None
            await connection.execute(
                f"UPDATE {self._table} SET record = $2, claimed = true WHERE id = $1", suspension_id, tombstone
            )
        return from_row(row)

    async def restore(self, suspension: StoredSuspension) -> bool:
        """Turn the tombstone of ``suspension.id`` back into ``suspension`` with one conditional update."""
        pool = await self._connected()
        suspension_id, *columns, _ = to_row(suspension)
        changed = await pool.fetchval(
            f"UPDATE {self._table} SET session = $2, tool_call_id = $3, expires_at = $4, record = $5, decision = $6,"
            " claimed = false WHERE id = $1 AND claimed RETURNING true",
            suspension_id,
            *columns,
        )
        return changed is not None

    async def purge_expired(self, *, now: float) -> int:
        """Remove the suspensions and tombstones that expired at or before ``now``."""
        pool = await self._connected()
        removed: int = await pool.fetchval(
            f"WITH removed AS (DELETE FROM {self._table} WHERE expires_at <= $1 RETURNING 1)"
            " SELECT count(*) FROM removed",
            now,
        )
        return removed

    async def _one(self, sql: str, *arguments: Any) -> StoredSuspension | None:
        pool = await self._connected()
        row = await pool.fetchrow(sql, *arguments)
        if row is None:
            return None
        return from_row(row)

    async def _create_table(self, pool: asyncpg.Pool) -> None:
        async with pool.acquire() as connection, connection.transaction():
            # Two processes creating or altering one table at once can collide in the catalog; the lock
            # makes them take turns, so the second finds the table and its columns made.
            await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", self._table)
            await connection.execute(
                f"CREATE TABLE IF NOT EXISTS {self._table} ("
                " stored bigint GENERATED ALWAYS AS IDENTITY,"
                " id text PRIMARY KEY,"
                " session text NOT NULL,"
                " tool_call_id text,"
                " expires_at double precision NOT NULL,"
                " record bytea NOT NULL,"
                " decision bytea,"
                f" {_CLAIMED})"
            )
            # ALTER TABLE locks the table against every query even when the column is there; so only
            # a table an earlier release made (without it) is altered.
            present = await connection.fetchval(
                "SELECT count(*) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'claimed'"
                " AND NOT attisdropped",
                self._table,
            )
            if not present:
                await connection.execute(f"ALTER TABLE {self._table} ADD COLUMN IF NOT EXISTS {_CLAIMED}")
            await connection.execute(
                f"CREATE INDEX IF NOT EXISTS {self._index} ON {self._table} (session, tool_call_id)"
            )
            # What put counts: a session's unclaimed rows only, so a table full of tombstones does not
            # make every pause slower (without it the count reads every row the session ever stored).
            await connection.execute(
                f"CREATE INDEX IF NOT EXISTS {self._held_index} ON {self._table} (session, expires_at)"
                " WHERE NOT claimed"
            )
