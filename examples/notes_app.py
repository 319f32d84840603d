"""A notes app kept in SQLite, served to agents over MCP: ``mycelium serve examples/notes_app.py``.

The agent gets one tool, ``execute``; the programs it writes call the operations below
(``await notes.search(text="launch")``, ``await notes.tags.add(note_id=1, tag="urgent")``),
and every call crosses back here, where its input is validated and its output encoded.

Data lives in ``notes.db`` under ``$MYCELIUM_DATA_DIR`` (default ``./.mycelium-data/notes``),
created and seeded on first run only. Every write is its own committed transaction, so
stopping the server (Ctrl-C) loses nothing. ``python examples/notes_app.py`` serves it too.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from mycelium import Module
from mycelium.mcp import McpAuthority, McpCatalog, Principal, create_mcp_catalog
from mycelium.sandbox.monty import MontySandbox

logger = logging.getLogger("notes_app")

DATA_DIR_ENV = "MYCELIUM_DATA_DIR"
DEFAULT_DATA_DIR = Path(".mycelium-data") / "notes"
SCHEMA_VERSION = 1

INSTRUCTIONS = (
    "A personal notes app. Read with notes.list, notes.search and notes.get; write with notes.create "
    "and notes.update; notes.delete asks the user to confirm first. Tags live under notes.tags "
    "(list, add, remove). Gather independent calls with asyncio.gather and return only what you need."
)

Title = Annotated[str, Field(min_length=1, max_length=200, description="A short title.")]
Body = Annotated[str, Field(max_length=20_000, description="The note's text (plain text or Markdown).")]
Tag = Annotated[
    str,
    Field(
        min_length=1,
        max_length=40,
        pattern=r"^[a-z0-9][a-z0-9_-]*$",
        description="A lowercase word: letters, digits, '-' or '_'.",
    ),
]
NoteId = Annotated[int, Field(ge=1, description="The note's id.")]
Limit = Annotated[int, Field(ge=1, le=100, description="At most this many notes.")]


class Note(BaseModel):
    """One note, with its tags."""

    id: int
    title: str
    body: str
    tags: list[str] = Field(description="Sorted alphabetically.")
    updated_at: str = Field(description="When the note last changed (ISO 8601, UTC).")


class NoteSummary(BaseModel):
    """A note without its body, as lists and searches return it."""

    id: int
    title: str
    tags: list[str]
    updated_at: str


class Deleted(BaseModel):
    """The outcome of a delete: ``deleted`` is false when no note had this id."""

    id: int
    deleted: bool


class TagCount(BaseModel):
    """A tag and how many notes carry it."""

    tag: str
    notes: int


SEED: list[tuple[str, str, list[str]]] = [
    ("Launch checklist", "Static fire, then range safety sign-off, then the go/no-go poll.", ["launch", "rocket"]),
    ("Launch party ideas", "Rooftop, or the hangar if it rains. Ask about the projector.", ["launch", "party"]),
    ("Groceries", "Oat milk, coffee beans, lemons.", ["home"]),
    ("Retro: first launch", "Telemetry dropped for 4 s at max-q; the checklist lacked a comms check.", ["rocket"]),
]


def data_dir() -> Path:
    """Where the app keeps its data: ``$MYCELIUM_DATA_DIR``, else ``./.mycelium-data/notes``."""
    configured = os.environ.get(DATA_DIR_ENV)
    return Path(configured) if configured else DEFAULT_DATA_DIR


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _like(text: str) -> str:
    """A LIKE pattern matching ``text`` literally (``%`` and ``_`` in the text are not wildcards)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class NotesStore:
    """The notes database: one SQLite file, one short connection per operation call.

    A connection per call keeps sync operations safe in worker threads (several run at
    once when a program gathers calls) and leaves no handle to close at shutdown.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def open(cls, folder: Path) -> NotesStore:
        """Open the store in ``folder``, creating the folder, the schema and the seed notes on first use."""
        folder.mkdir(parents=True, exist_ok=True)
        store = cls(folder / "notes.db")
        # WAL lets reads run while a write commits; the mode is stored in the file, so once is enough.
        with closing(sqlite3.connect(store.path, timeout=10)) as db:
            db.execute("PRAGMA journal_mode=WAL")
        with store.transaction(write=True) as db:
            # Checked inside the write transaction: two servers starting at once seed only once.
            (version,) = db.execute("PRAGMA user_version").fetchone()
            if version == 0:
                # One statement at a time: executescript() would commit the open transaction first.
                db.execute(
                    "CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL,"
                    " updated_at TEXT NOT NULL)"
                )
                db.execute(
                    "CREATE TABLE tags (note_id INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (note_id, tag))"
                    " WITHOUT ROWID"
                )
                db.execute("CREATE INDEX tags_by_tag ON tags (tag)")
                for title, body, tags in SEED:
                    store._insert(db, title, body, tags)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            elif version != SCHEMA_VERSION:
                raise RuntimeError(f"{store.path}: schema version {version}, this app knows {SCHEMA_VERSION}")
        return store

    @contextmanager
    def transaction(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction on a fresh connection: committed on success, rolled back on error."""
        db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        try:
            # IMMEDIATE takes the write lock up front, so concurrent writers queue instead of deadlocking.
            db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    @staticmethod
    def _insert(db: sqlite3.Connection, title: str, body: str, tags: list[str]) -> int:
        cursor = db.execute("INSERT INTO notes (title, body, updated_at) VALUES (?, ?, ?)", (title, body, _now()))
        note_id = cursor.lastrowid
        assert note_id is not None
        db.executemany("INSERT OR IGNORE INTO tags VALUES (?, ?)", [(note_id, tag) for tag in tags])
        return note_id

    @staticmethod
    def _tags(db: sqlite3.Connection, note_id: int) -> list[str]:
        return [tag for (tag,) in db.execute("SELECT tag FROM tags WHERE note_id = ? ORDER BY tag", (note_id,))]

    def _note(self, db: sqlite3.Connection, note_id: int) -> Note | None:
        row = db.execute("SELECT id, title, body, updated_at FROM notes WHERE id = ?", (note_id,)).fetchone()
        if row is None:
            return None
        return Note(id=row[0], title=row[1], body=row[2], tags=self._tags(db, note_id), updated_at=row[3])

    def _summaries(self, db: sqlite3.Connection, sql: str, *parameters: object) -> list[NoteSummary]:
        return [
            NoteSummary(id=note_id, title=title, tags=self._tags(db, note_id), updated_at=updated_at)
            for note_id, title, updated_at in db.execute(sql, parameters).fetchall()
        ]

    def list(self, tag: str | None, limit: int) -> list[NoteSummary]:
        """The most recently changed notes, optionally only those with ``tag``."""
        with self.transaction(write=False) as db:
            if tag is None:
                return self._summaries(
                    db, "SELECT id, title, updated_at FROM notes ORDER BY updated_at DESC, id DESC LIMIT ?", limit
                )
            return self._summaries(
                db,
                "SELECT id, title, updated_at FROM notes JOIN tags ON tags.note_id = notes.id WHERE tag = ?"
                " ORDER BY updated_at DESC, id DESC LIMIT ?",
                tag,
                limit,
            )

    def search(self, text: str, limit: int) -> list[NoteSummary]:
        """Notes whose title or body contains ``text`` (case-insensitive for ASCII), oldest first."""
        pattern = _like(text)
        with self.transaction(write=False) as db:
            return self._summaries(
                db,
                "SELECT id, title, updated_at FROM notes"
                " WHERE title LIKE ? ESCAPE '\\' OR body LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?",
                pattern,
                pattern,
                limit,
            )

    def get(self, note_id: int) -> Note | None:
        """The note with this id, or ``None``."""
        with self.transaction(write=False) as db:
            return self._note(db, note_id)

    def create(self, title: str, body: str, tags: list[str]) -> Note:
        """Store a new note and return it."""
        with self.transaction(write=True) as db:
            note = self._note(db, self._insert(db, title, body, tags))
        assert note is not None
        return note

    def update(self, note_id: int, title: str | None, body: str | None) -> Note | None:
        """Change the given fields of a note; ``None`` when there is no such note."""
        with self.transaction(write=True) as db:
            db.execute(
                "UPDATE notes SET title = coalesce(?, title), body = coalesce(?, body), updated_at = ? WHERE id = ?",
                (title, body, _now(), note_id),
            )
            return self._note(db, note_id)

    def delete(self, note_id: int) -> Deleted:
        """Delete a note and its tags."""
        with self.transaction(write=True) as db:
            db.execute("DELETE FROM tags WHERE note_id = ?", (note_id,))
            deleted = db.execute("DELETE FROM notes WHERE id = ?", (note_id,)).rowcount > 0
        return Deleted(id=note_id, deleted=deleted)

    def tag_counts(self) -> list[TagCount]:
        """Every tag in use, with its number of notes."""
        with self.transaction(write=False) as db:
            rows = db.execute("SELECT tag, count(*) FROM tags GROUP BY tag ORDER BY tag").fetchall()
        return [TagCount(tag=tag, notes=count) for tag, count in rows]

    def set_tag(self, note_id: int, tag: str, *, present: bool) -> Note | None:
        """Add or remove one tag; ``None`` when there is no such note."""
        with self.transaction(write=True) as db:
            if db.execute("SELECT 1 FROM notes WHERE id = ?", (note_id,)).fetchone() is None:
                return None
            if present:
                changed = db.execute("INSERT OR IGNORE INTO tags VALUES (?, ?)", (note_id, tag)).rowcount
            else:
                changed = db.execute("DELETE FROM tags WHERE note_id = ? AND tag = ?", (note_id, tag)).rowcount
            if changed:
                db.execute("UPDATE notes SET updated_at = ? WHERE id = ?", (_now(), note_id))
            return self._note(db, note_id)


def build_modules(store: NotesStore) -> list[Module]:
    """The app's operations over ``store``: ``notes.*``, with tags under the nested ``notes.tags``."""
    # Sync functions: Mycelium runs each in a worker thread, so SQLite never blocks the event loop.
    notes = Module(id="example-notes", name="notes", description="Personal notes, kept in SQLite.")

    @notes.operation("list", access="read")
    def list_notes(tag: Tag | None = None, limit: Limit = 20) -> list[NoteSummary]:
        """The most recently changed notes, newest first, optionally only those with a tag."""
        return store.list(tag, limit)

    @notes.operation(access="read")
    def search(
        text: Annotated[str, Field(min_length=1, max_length=200, description="Text to look for.")], limit: Limit = 20
    ) -> list[NoteSummary]:
        """Notes whose title or body contains the text (ASCII letters match either case)."""
        return store.search(text, limit)

    @notes.operation(access="read")
    def get(id: NoteId) -> Note | None:
        """One note with its body and tags, or null when no note has this id."""
        return store.get(id)

    @notes.operation(access="write")
    def create(title: Title, body: Body = "", tags: Annotated[list[Tag], Field(max_length=20)] = []) -> Note:  # noqa: B006 - pydantic copies defaults
        """Create a note and return it, with its new id."""
        return store.create(title, body, sorted(set(tags)))

    @notes.operation(access="write")
    def update(id: NoteId, title: Title | None = None, body: Body | None = None) -> Note | None:
        """Change a note's title and/or body; returns the note, or null when no note has this id."""
        return store.update(id, title, body)

    @notes.operation(access="write", confirm=True)
    def delete(id: NoteId) -> Deleted:
        """Delete a note for good. The user is asked to confirm first."""
        return store.delete(id)

    @notes.operation("tags.list", access="read")
    def list_tags() -> list[TagCount]:
        """Every tag in use and how many notes carry it, alphabetically."""
        return store.tag_counts()

    @notes.operation("tags.add", access="write")
    def add_tag(note_id: NoteId, tag: Tag) -> Note | None:
        """Tag a note; returns the note, or null when no note has this id."""
        return store.set_tag(note_id, tag, present=True)

    @notes.operation("tags.remove", access="write")
    def remove_tag(note_id: NoteId, tag: Tag) -> Note | None:
        """Remove a tag from a note; returns the note, or null when no note has this id."""
        return store.set_tag(note_id, tag, present=False)

    return [notes]


def create_catalog(folder: Path | None = None) -> McpCatalog:
    """The catalog ``mycelium serve`` serves: every principal it admits may read and write notes.

    ``folder`` defaults to :func:`data_dir`. The modules are built once, so every load
    returns the same objects and the catalog reuses their runtime.
    """
    store = NotesStore.open(folder if folder is not None else data_dir())
    logger.info("notes are kept in %s", store.path.resolve())
    modules = build_modules(store)
    authority = McpAuthority(
        grants={module.id: "write" for module in modules}, sources=modules, instructions=INSTRUCTIONS
    )

    def load(principal: Principal) -> McpAuthority:
        # A demo with one trusted user. A real host looks the principal up here, on every
        # execution, so a revoked grant applies to the next one.
        return authority

    return create_mcp_catalog(load=load, sandbox=MontySandbox())


if __name__ == "__main__":
    import sys

    from mycelium.cli import main

    # `python examples/notes_app.py [--port 9000 ...]` is `mycelium serve examples/notes_app.py [...]`.
    main(["serve", f"{__file__}:create_catalog", *sys.argv[1:]])
