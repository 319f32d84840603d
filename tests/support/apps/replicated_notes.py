"""A notes app that several ``mycelium serve`` replicas serve at once, for tests/deployment.

Every write lands in one SQLite file the replicas share (``$REPLICATED_NOTES_DB``), one row a
write with the replica that ran it (``$REPLICATED_NOTES_REPLICA``): a test counts there, outside
every replica's memory, how many times a write really happened, and which replica ran it.

- ``notes.add(text)``: a write that needs no approval.
- ``notes.publish(text)``: a write a person approves first (``confirm=True``).
- ``notes.count(text)``: how many writes of ``text`` happened, by any replica (a read).
- ``notes.hold(gate)``: waits until the test opens the gate, a FIFO named ``gate`` in the folder
  ``$REPLICATED_NOTES_GATES`` (a read): the test knows where the program is while it waits. A
  hold cancelled while it waits (its run stopped) is written down as a ``hold-cancelled`` of ``gate``.

Paused runs keep the app's own bound on how many one session may hold: a deployment test
leaves hundreds of one principal's approvals pending at once (``mycelium serve`` admits
one principal, the token's).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import anyio
import anyio.to_thread
from pydantic import BaseModel

from mycelium import Module
from mycelium.mcp import McpAuthority, McpCatalog, Principal, create_mcp_catalog
from mycelium.sandbox.monty import MontySandbox
from mycelium.suspensions import Suspensions

DB_ENV = "REPLICATED_NOTES_DB"
GATES_ENV = "REPLICATED_NOTES_GATES"
REPLICA_ENV = "REPLICATED_NOTES_REPLICA"
MAX_PENDING_PER_SESSION = 512
"""Room for the deployment tests' 200 pending approvals of the one principal ``serve`` admits."""


class Written(BaseModel):
    """One write: its row in the shared file and the replica that ran it."""

    id: int
    replica: str


@contextmanager
def _transaction(path: Path) -> Iterator[sqlite3.Connection]:
    """One write transaction on a fresh connection (several replicas write the same file)."""
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    finally:
        db.close()


def open_writes(path: Path) -> None:
    """Create the shared file's table once (every replica calls it; it is idempotent)."""
    with closing(sqlite3.connect(path, timeout=30)) as db:
        db.execute("PRAGMA journal_mode=WAL")
    with _transaction(path) as db:
        db.execute(
            "CREATE TABLE IF NOT EXISTS writes (id INTEGER PRIMARY KEY, op TEXT NOT NULL, text TEXT NOT NULL,"
            " replica TEXT NOT NULL)"
        )


def writes_of(path: Path, text: str, op: str | None = None) -> list[tuple[str, str]]:
    """(op, replica) of every write of ``text`` (of ``op`` only, if given), oldest first."""
    with closing(sqlite3.connect(path, timeout=30)) as db:
        rows = db.execute("SELECT op, replica FROM writes WHERE text = ? ORDER BY id", (text,)).fetchall()
    return [(kind, replica) for kind, replica in rows if op is None or kind == op]


def build_module(path: Path, replica: str) -> Module:
    notes = Module(id="replicated-notes", name="notes", description="Notes whose writes every replica shares.")

    def write(op: str, text: str) -> Written:
        with _transaction(path) as db:
            cursor = db.execute("INSERT INTO writes (op, text, replica) VALUES (?, ?, ?)", (op, text, replica))
        assert cursor.lastrowid is not None
        return Written(id=cursor.lastrowid, replica=replica)

    @notes.operation(access="write")
    def add(text: str) -> Written:
        """Write ``text`` (no approval needed)."""
        return write("add", text)

    @notes.operation(access="write", confirm=True)
    def publish(text: str) -> Written:
        """Write ``text`` once a person approves."""
        return write("publish", text)

    @notes.operation(access="read")
    def count(text: str) -> int:
        """How many writes of ``text`` happened, on any replica."""
        return len(writes_of(path, text))

    @notes.operation(access="read")
    async def hold(gate: str) -> str:
        """Wait until the test opens the FIFO ``gate``; return what it wrote."""
        if not gate.isidentifier():
            raise ValueError("a gate is named by an identifier")
        fifo = Path(os.environ[GATES_ENV]) / gate
        try:
            return await anyio.to_thread.run_sync(fifo.read_text, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            write("hold-cancelled", gate)
            raise

    return notes


def create_catalog() -> McpCatalog:
    """The catalog each replica serves: its principal may read and write the shared notes."""
    path = Path(os.environ[DB_ENV])
    open_writes(path)
    module = build_module(path, os.environ.get(REPLICA_ENV, "?"))

    def load(principal: Principal) -> McpAuthority:
        return McpAuthority(grants={"replicated-notes": "write"}, sources=[module], instructions="Shared notes.")

    return create_mcp_catalog(
        load=load, sandbox=MontySandbox(), suspensions=Suspensions(max_per_session=MAX_PENDING_PER_SESSION)
    )
