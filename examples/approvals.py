"""Decisions that take time: a run pauses at a confirmation and resumes after a restart.

The program adds three contacts, then deletes one, which a person must approve. Nobody
answers at once, so the run is suspended and kept in a SQLite file; the process that ran
it closes. A new runtime (as after a restart) shows the pending call, the person
approves it, and the program continues from where it stopped: the three contacts are
not added again.

Run: python examples/approvals.py
"""

from __future__ import annotations

import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

import anyio

from mycelium import Access, Module, Runtime, SqliteSuspensions, Suspensions, defer
from mycelium.sandbox.monty import MontySandbox

PROGRAM = """
added = [await crm.contacts.add(name=name) for name in ["Ada", "Grace", "Edsger"]]
removed = await crm.contacts.delete(id=1)
print("delete answered:", removed)
return {"added": added, "removed": removed, "left": await crm.contacts.count()}
"""


def crm_module(database: Path) -> Module:
    """Contacts in a SQLite table; deleting one needs a person's approval."""
    crm = Module(id="crm-v1", name="crm", description="Contacts")

    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(database)
        connection.execute("CREATE TABLE IF NOT EXISTS contacts (id INTEGER PRIMARY KEY, name TEXT)")
        return connection

    @crm.operation("contacts.add", access="write")
    def add(name: str) -> int:
        """Add a contact; returns its id."""
        with closing(connect()) as db, db:
            return db.execute("INSERT INTO contacts (name) VALUES (?)", (name,)).lastrowid or 0

    @crm.operation("contacts.delete", access="write", confirm=True)
    def delete(id: int) -> bool:
        """Delete a contact by id."""
        with closing(connect()) as db, db:
            return db.execute("DELETE FROM contacts WHERE id = ?", (id,)).rowcount == 1

    @crm.operation("contacts.count", access="read")
    def count() -> int:
        """How many contacts there are."""
        with closing(connect()) as db:
            return int(db.execute("SELECT count(*) FROM contacts").fetchone()[0])

    return crm


def make_runtime(folder: Path, sandbox: MontySandbox, store: SqliteSuspensions) -> Runtime:
    """The host as it starts: the same modules, store file and key every time."""
    return Runtime(
        modules=[crm_module(folder / "crm.db")],
        sandbox=sandbox,
        access=Access(confirm=defer),  # a person answers later, in another channel
        suspensions=Suspensions(store=store, key=b"a host secret of 32 bytes or so"),
    )


async def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        async with MontySandbox() as sandbox:
            store = SqliteSuspensions(folder / "suspensions.db")
            async with make_runtime(folder, sandbox, store) as first:
                async with first.lease() as lease:
                    paused = await lease.execute_tool.run(PROGRAM, tool_call_id="call-1")
            await store.aclose()
            assert paused.suspension is not None
            print("model reads:", paused.text.split(" (suspension")[0])

            store = SqliteSuspensions(folder / "suspensions.db")  # a new process would do exactly this
            async with make_runtime(folder, sandbox, store) as restarted:
                pending = await restarted.suspension(paused.suspension.id)
                assert pending is not None
                print(f"person is asked: {pending.path} {pending.arguments}")
                result = await restarted.resume(pending.id, approved=True)
                for line in result.logs:
                    print("program printed:", line)
                print("result:", result.text)
            await store.aclose()


if __name__ == "__main__":
    anyio.run(main)
