"""A small notes-and-calendar host, kept in SQLite, driven by the kind of program a model writes.

The program below runs in the Monty sandbox: it searches notes, reads the calendar for
each tagged project concurrently, and returns a summary. Every call crosses back to the
host, where its input is validated and its output encoded. Run it with `make run`.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import tempfile
import threading
from pathlib import Path

import anyio
from pydantic import BaseModel, Field

from mycelium import Module, Runtime
from mycelium.sandbox.monty import MontySandbox

PROGRAM = '''
import asyncio

found = await notes.search(text="launch")
projects = sorted({note["project"] for note in found})
calendars = await asyncio.gather(*[calendar.events(project=p) for p in projects])
print(f"{len(found)} notes across {len(projects)} projects")
summary = []
for project, events in zip(projects, calendars):
    count = sum(1 for note in found if note["project"] == project)
    summary.append({"project": project, "notes": count, "next_event": events[0]["title"] if events else None})
return {"projects": summary}
'''


class Note(BaseModel):
    id: int
    title: str
    project: str


class Event(BaseModel):
    title: str
    day: dt.date = Field(description="The day of the event (ISO date).")


def open_store(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False)
    db.executescript(
        """
        CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, project TEXT NOT NULL);
        CREATE TABLE events (title TEXT NOT NULL, project TEXT NOT NULL, day TEXT NOT NULL);
        INSERT INTO notes (title, project) VALUES
            ('launch checklist', 'rocket'), ('launch party ideas', 'party'),
            ('grocery list', 'home'), ('launch retro', 'rocket');
        INSERT INTO events VALUES
            ('static fire', 'rocket', '2026-12-01'), ('venue visit', 'party', '2026-12-03');
        """
    )
    return db


def build_modules(db: sqlite3.Connection) -> list[Module]:
    # Sync operations run in worker threads, concurrently when the guest gathers calls.
    lock = threading.Lock()

    def query(sql: str, *parameters: object) -> list[tuple[object, ...]]:
        with lock:
            return db.execute(sql, parameters).fetchall()

    notes = Module(id="example-notes", name="notes", description="Personal notes")
    calendar = Module(id="example-calendar", name="calendar", description="Project calendar")

    @notes.operation(access="read")
    def search(text: str, limit: int = 20) -> list[Note]:
        """Find notes whose title contains the text."""
        rows = query("SELECT id, title, project FROM notes WHERE title LIKE ? ORDER BY id LIMIT ?", f"%{text}%", limit)
        return [Note.model_validate(dict(zip(("id", "title", "project"), row, strict=True))) for row in rows]

    @calendar.operation(access="read")
    def events(project: str) -> list[Event]:
        """Upcoming events of one project, soonest first."""
        rows = query("SELECT title, day FROM events WHERE project = ? ORDER BY day", project)
        return [Event.model_validate({"title": title, "day": day}) for title, day in rows]

    return [notes, calendar]


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = open_store(Path(folder) / "notes.db")
        try:
            async with Runtime(modules=build_modules(db), sandbox=MontySandbox()) as runtime:
                async with runtime.lease() as lease:
                    result = await lease.execute_tool.run(PROGRAM, tool_call_id="example-notes")
        finally:
            db.close()
    for line in result.logs:
        print(f"[guest] {line}")
    print(result.text)
    if result.is_error:
        raise SystemExit(1)


if __name__ == "__main__":
    anyio.run(main)
