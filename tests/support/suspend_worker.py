"""The host the suspend tests run, in this process or in another one: notes in a SQLite file, a shared store.

Every operation that runs leaves one row in the file's journal (its name, argument,
ordinal and execution id), so a test counts what ran, whichever process ran it.

As a script it is a second process of the same host:

- ``python -m tests.support.suspend_worker run STORE DB TOOL_CALL_ID CODE`` executes CODE and prints its outcome;
- ``python -m tests.support.suspend_worker resume STORE DB ID`` resumes suspension ID, approved, and prints the outcome;
- ``python -m tests.support.suspend_worker race STORE DB ID`` gets ready (store connected, sandbox started), prints
  ``ready``, waits for a line on stdin, then resumes ID, approved, and prints the outcome.

STORE is JSON, as ``suspensions/store_worker.py`` reads it; an outcome is one JSON line
(see :func:`outcome`). The host's sandbox is :data:`SANDBOX_VARIABLE`'s (``monty``, the
in-process adapter, unless it says ``isolated``): a worker process inherits it from its test.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from mycelium import (
    Access,
    CapabilitySource,
    ExecutionOptions,
    InvocationContext,
    Module,
    Runtime,
    Session,
    Suspensions,
    ToolResult,
    defer,
    operation,
)
from mycelium._operations import AccessLabel
from mycelium.sandbox import Sandbox
from mycelium.sandbox.isolated import IsolatedSandbox
from mycelium.sandbox.monty import MontySandbox
from mycelium.suspensions import SuspensionStore
from tests.support.store_worker import open_store

SANDBOX_VARIABLE = "MYCELIUM_TEST_SANDBOX"
"""The environment variable that names the sandbox the suspend tests' host runs."""
KEY = b"the suspend tests' shared key"
"""Every process that resumes a suspension seals and checks it with the same key."""


class Note(BaseModel):
    title: str


class NoteId(BaseModel):
    id: int


class Crm:
    """Notes in a SQLite file that every process can open; each operation that runs is journalled."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with self._db() as db:
            db.executescript(
                # AUTOINCREMENT: a deleted note's id is never given again, so ids do not depend on timing.
                "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL);"
                "CREATE TABLE IF NOT EXISTS journal ("
                " seq INTEGER PRIMARY KEY, op TEXT NOT NULL, arg TEXT NOT NULL,"
                " ordinal INTEGER, execution_id TEXT NOT NULL)"
            )

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=10)) as db, db:  # commits, then closes
            yield db

    def create(self, note: Note, context: InvocationContext) -> dict[str, int]:
        """Add a note."""
        with self._db() as db:
            made = db.execute("INSERT INTO notes (title) VALUES (?)", (note.title,)).lastrowid
            self._journal(db, "create", note.title, context)
        assert made is not None
        return {"id": made}

    def delete(self, target: NoteId, context: InvocationContext) -> dict[str, int]:
        """Delete a note: a person confirms each call."""
        with self._db() as db:
            db.execute("DELETE FROM notes WHERE id = ?", (target.id,))
            self._journal(db, "delete", str(target.id), context)
        return {"deleted": target.id}

    def _journal(self, db: sqlite3.Connection, op: str, arg: str, context: InvocationContext) -> None:
        db.execute(
            "INSERT INTO journal (op, arg, ordinal, execution_id) VALUES (?, ?, ?, ?)",
            (op, arg, context.operation_ordinal, context.execution_id),
        )

    def module(self, *, name: str = "crm", create_access: AccessLabel = "write") -> Module:
        """The notes as the guest's ``crm`` namespace (``name`` and the create label vary for revision tests)."""
        return Module(
            id="crm",
            name=name,
            operations={
                "create": operation(input=Note, execute=self.create, access=create_access, description="Add a note."),
                "delete": operation(input=NoteId, execute=self.delete, confirm=True, description="Delete a note."),
            },
        )

    def journal(self) -> list[tuple[str, str, int | None, str]]:
        """Every operation that ran, in order: (name, argument, ordinal, execution id)."""
        with self._db() as db:
            return list(db.execute("SELECT op, arg, ordinal, execution_id FROM journal ORDER BY seq"))

    def ran(self, op: str) -> int:
        """How many times ``op`` ran."""
        return sum(1 for entry in self.journal() if entry[0] == op)

    def titles(self) -> list[str]:
        """The notes still there."""
        with self._db() as db:
            return [title for (title,) in db.execute("SELECT title FROM notes ORDER BY id")]


def host(
    crm: Crm,
    store: SuspensionStore,
    *,
    extra: Sequence[Module] = (),
    access: Access | None = None,
    session: Session | None = None,
    sources: Sequence[CapabilitySource] = (),
    execution: ExecutionOptions | None = None,
    **limits: int,
) -> Runtime:
    """The host every process runs: the notes (unless ``sources`` bring them) and ``extra`` modules,
    every confirmation deferred (unless ``access`` says otherwise), suspensions in ``store`` bounded
    by ``limits``."""
    return Runtime(
        modules=[*([] if sources else [crm.module()]), *extra],
        sources=sources,
        sandbox=chosen_sandbox(),
        access=access or Access(confirm=defer),
        session=session,
        execution=execution,
        suspensions=Suspensions(store=store, key=KEY, **limits),
    )


def chosen_sandbox() -> Sandbox:
    """The sandbox :data:`SANDBOX_VARIABLE` names for this test."""
    return IsolatedSandbox() if os.environ.get(SANDBOX_VARIABLE) == "isolated" else MontySandbox()


def outcome(result: ToolResult) -> dict[str, Any]:
    """What a worker reports of a result: enough for a test to check it from another process."""
    suspension = result.suspension
    return {
        "value": result.value,
        "is_error": result.is_error,
        "failure": result.failure.to_dict() if result.failure is not None else None,
        "suspension": None
        if suspension is None
        else {
            "id": suspension.id,
            "execution_id": suspension.execution_id,
            "operation_ordinal": suspension.operation_ordinal,
            "arguments": suspension.arguments,
        },
        "logs": list(result.logs),
    }


async def main(*arguments: str) -> None:
    command, described, db, *rest = arguments
    store = open_store(json.loads(described))
    try:
        async with host(Crm(Path(db)), store) as runtime:
            if command == "run":
                tool_call_id, code = rest
                async with runtime.lease() as lease:
                    result = await lease.execute_tool.run(code, tool_call_id=tool_call_id)
            else:
                (suspension_id,) = rest
                if command == "race":
                    # Connected and started before the line, so the two processes race at the resume itself.
                    await runtime.suspension(suspension_id)
                    async with runtime.lease() as lease:
                        await lease.execute_tool.run("None")
                    print("ready", flush=True)
                    sys.stdin.readline()
                result = await runtime.resume(suspension_id, approved=True)
            print(json.dumps(outcome(result)), flush=True)
    finally:
        await store.aclose()


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
