"""Suspensions kept in a SQLite file, so a restarted process, or another one on the same machine, resumes them."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

from .._databases import use_wal
from ._store import COLUMNS, MAX_FOUND, StoredSuspension, SuspensionLimitReached, from_row, to_row

__all__ = ["SqliteSuspensions"]

T = TypeVar("T")

# A run without a session is stored under the empty string: real session ids are never empty.
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS suspensions (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    tool_call_id TEXT,
    expires_at REAL NOT NULL,
    record BLOB NOT NULL,
    decision BLOB,
    claimed INTEGER NOT NULL DEFAULT 0
)""",
    "CREATE INDEX IF NOT EXISTS suspensions_by_call ON suspensions (session, tool_call_id)",
)
_HELD_INDEX = "CREATE INDEX IF NOT EXISTS suspensions_held ON suspensions (session, expires_at) WHERE claimed = 0"
"""What put counts: a session's unclaimed rows only. Without it the count reads every row the session
ever stored, tombstones included, and each pause gets slower as they pile up. Made once the columns are."""
HELD = "SELECT count(*) FROM suspensions WHERE session = ? AND expires_at > ? AND claimed = 0"
"""How many pauses a session holds, as ``put`` counts them (the held index answers it)."""
_MAYBE_FOUND = "SELECT 1 FROM suspensions WHERE session = ? AND tool_call_id = ? LIMIT 1"
_SMALL_ONE = f"SELECT {COLUMNS} FROM suspensions WHERE id = ? AND length(record) <= ?"
_ON_LOOP_BYTES = 256 * 1024
"""The largest record read on the event loop (well under a millisecond); a larger one is read in the thread."""
_ADDED_COLUMNS = {"claimed": "claimed INTEGER NOT NULL DEFAULT 0"}
"""Columns added since release 0.1.0, by name: a file made before gets them when opened."""


class SqliteSuspensions:
    """Suspensions in a SQLite file, shared by every process that opens it.

    The file and its table are made on first use; the folder must exist. A file made by an
    earlier release gets the columns it lacks then, in place. Each answer is
    one statement or one ``BEGIN IMMEDIATE`` transaction, so it is atomic across
    processes too, and runs in a worker thread so a busy file never holds the event loop
    (but for two small reads tried on the loop first without waiting: whether a tool call has
    any row at all, and a record of at most 256 KiB; see :meth:`_on_loop`).

    Another process holding the file makes a statement wait at most ``busy_timeout_ms``
    (5 s). A caller that stops waiting sooner (the runtime's ``store_timeout_ms``, or its
    run's deadline) is let go at once; the statement still finishes in its thread, so a
    change given up on may still land (the runtime treats its outcome as unknown).
    """

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 5_000) -> None:
        self._path = Path(path)
        if not self._path.parent.is_dir():
            raise ValueError(f"cannot keep suspensions in {str(self._path)!r}: its folder does not exist")
        if type(busy_timeout_ms) is not int or busy_timeout_ms < 0:
            raise ValueError(f"SqliteSuspensions busy_timeout_ms must be an int of at least 0, got {busy_timeout_ms!r}")
        self._busy_timeout_s = busy_timeout_ms / 1000
        self._lock = threading.Lock()  # one connection, used by one thread at a time
        self._db: sqlite3.Connection | None = None
        # A second connection for the small reads tried on the event loop (see _on_loop), never waiting.
        self._probe_lock = threading.Lock()
        self._probe: sqlite3.Connection | None = None
        self._closed = False

    async def put(self, suspension: StoredSuspension, *, max_per_session: int) -> None:
        """Store ``suspension`` unless its session is full or its id is taken, in one transaction."""
        session = suspension.session_id or ""

        def put(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")  # the count and the insert see one state, also across processes
            with db:  # commits, or rolls back on any exception
                (held,) = db.execute(HELD, (session, time.time())).fetchone()
                if held >= max_per_session:
                    raise SuspensionLimitReached(f"the session already holds {held} suspensions")
                try:
                    db.execute(f"INSERT INTO suspensions ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", to_row(suspension))
                except sqlite3.IntegrityError as error:
                    raise ValueError(f"suspension {suspension.id!r} is already stored") from error

        await self._run(put)

    async def get(self, suspension_id: str) -> StoredSuspension | None:
        """The suspension or its tombstone, expired or not, if it is stored."""
        row = self._on_loop(_SMALL_ONE, (suspension_id, _ON_LOOP_BYTES))
        if row:  # else none is stored, or it is a large one, or the loop could not ask: the thread reads it
            return from_row(row)
        return await self._one(f"SELECT {COLUMNS} FROM suspensions WHERE id = ?", (suspension_id,))

    async def find(self, session_id: str | None, tool_call_id: str) -> list[StoredSuspension]:
        """This session's suspensions of the tool call and their tombstones, newest first, expired ones too."""
        if self._on_loop(_MAYBE_FOUND, (session_id or "", tool_call_id)) == ():
            return []  # the common answer: a new tool call never paused
        rows = await self._run(
            lambda db: db.execute(
                f"SELECT {COLUMNS} FROM suspensions WHERE session = ? AND tool_call_id = ?"
                " ORDER BY rowid DESC LIMIT ?",  # a new row's rowid is above every stored one
                (session_id or "", tool_call_id, MAX_FOUND),
            ).fetchall()
        )
        return [from_row(row) for row in rows]

    async def undecided(self, *, now: float, limit: int) -> list[StoredSuspension]:
        """Unexpired, undecided, unclaimed suspensions of every session, oldest first, at most ``limit``."""
        rows = await self._run(
            lambda db: db.execute(
                f"SELECT {COLUMNS} FROM suspensions WHERE expires_at > ? AND decision IS NULL AND claimed = 0"
                " ORDER BY rowid LIMIT ?",
                (now, limit),
            ).fetchall()
        )
        return [from_row(row) for row in rows]

    async def decide(self, suspension_id: str, decision: bytes, *, now: float) -> bool:
        """Set the decision of an unexpired, undecided, unclaimed suspension with one conditional update."""
        changed = await self._run(
            lambda db: (
                db.execute(
                    "UPDATE suspensions SET decision = ?"
                    " WHERE id = ? AND expires_at > ? AND decision IS NULL AND claimed = 0",
                    (decision, suspension_id, now),
                ).rowcount
            )
        )
        return changed == 1

    async def claim(self, suspension_id: str, *, now: float, tombstone: bytes) -> StoredSuspension | None:
        """Return the suspension if it is stored, unexpired and unclaimed, leaving its tombstone, in one
        transaction."""

        def claim(db: sqlite3.Connection) -> StoredSuspension | None:
            # RETURNING gives the row as updated, and the caller needs the record it replaces: read, then update.
            db.execute("BEGIN IMMEDIATE")
            with db:
                row = db.execute(
                    f"SELECT {COLUMNS} FROM suspensions WHERE id = ? AND expires_at > ? AND claimed = 0",
                    (suspension_id, now),
                ).fetchone()
                if row is None:
                    return None
                db.execute("UPDATE suspensions SET record = ?, claimed = 1 WHERE id = ?", (tombstone, suspension_id))
            return from_row(row)

        return await self._run(claim)

    async def restore(self, suspension: StoredSuspension) -> bool:
        """Turn the tombstone of ``suspension.id`` back into ``suspension`` with one conditional update."""
        suspension_id, *columns, _ = to_row(suspension)
        changed = await self._run(
            lambda db: (
                db.execute(
                    "UPDATE suspensions SET session = ?, tool_call_id = ?, expires_at = ?, record = ?, decision = ?,"
                    " claimed = 0 WHERE id = ? AND claimed = 1",
                    (*columns, suspension_id),
                ).rowcount
            )
        )
        return changed == 1

    async def purge_expired(self, *, now: float) -> int:
        """Remove the suspensions and tombstones that expired at or before ``now``."""
        return await self._run(lambda db: db.execute("DELETE FROM suspensions WHERE expires_at <= ?", (now,)).rowcount)

    async def aclose(self) -> None:
        """Close the database file."""

        def close() -> None:
            with self._lock:
                self._closed = True
                if self._db is not None:
                    self._db.close()
                    self._db = None
            with self._probe_lock:
                if self._probe is not None:
                    self._probe.close()
                    self._probe = None

        await anyio.to_thread.run_sync(close)

    def _on_loop(self, sql: str, parameters: tuple[object, ...]) -> tuple[object, ...] | None:
        """The first row of a small read, asked on the event loop without waiting: ``()`` when
        there is none, ``None`` when it cannot say at once (then the thread's answer is awaited).

        Every execute of a runtime with suspensions asks whether its tool call paused before,
        and every resume reads its record; a thread's round trip costs more than either. Only
        an index lookup or a record of at most ``_ON_LOOP_BYTES`` is read here.
        """
        if self._db is None or not self._probe_lock.acquire(blocking=False):
            return None  # not opened yet (the thread makes the file), or in use elsewhere
        try:
            if self._closed:
                return None  # the thread's answer says the store is closed
            if self._probe is None:
                # timeout=0: a file another process holds answers "busy" at once instead of waiting.
                self._probe = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None, timeout=0)
            row: tuple[object, ...] | None = self._probe.execute(sql, parameters).fetchone()
        except sqlite3.Error:
            return None
        finally:
            self._probe_lock.release()
        return () if row is None else row

    async def _one(self, sql: str, parameters: tuple[object, ...]) -> StoredSuspension | None:
        row = await self._run(lambda db: db.execute(sql, parameters).fetchone())
        if row is None:
            return None
        return from_row(row)

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def run() -> T:
            with self._lock:
                if self._closed:
                    raise RuntimeError("the suspension store is closed")
                if self._db is None:
                    self._db = self._open()
                return work(self._db)

        # A caller that stops waiting is let go at once; the statement finishes in its thread.
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)

    def _open(self) -> sqlite3.Connection:
        # Autocommit unless a transaction is begun explicitly; wait up to 10 s for another process's write.
        db = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None, timeout=self._busy_timeout_s)
        try:
            use_wal(db)
            _make_schema(db)
        except BaseException:
            db.close()
            raise
        return db


def _make_schema(db: sqlite3.Connection) -> None:
    """Make the table, or add to a table an earlier release made the columns it lacks."""
    # One write transaction: of two processes opening an old file at once, one adds a column, the other sees it.
    db.execute("BEGIN IMMEDIATE")
    with db:
        for statement in _SCHEMA:
            db.execute(statement)
        present = {column for _, column, *_ in db.execute("PRAGMA table_info(suspensions)")}
        for name, definition in _ADDED_COLUMNS.items():
            if name not in present:
                db.execute(f"ALTER TABLE suspensions ADD COLUMN {definition}")
        db.execute(_HELD_INDEX)
