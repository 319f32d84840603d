"""Suspension stores as release 0.1.0 made them, for the tests that open them with today's code.

:data:`SQLITE` is a real file that release wrote (see ``tests/suspensions/data/make_0_1_0_store.py``,
whose constants these repeat): one suspension, the program :data:`CODE` paused by Monty at
its ``crm.delete`` under tool call :data:`TOOL_CALL_ID`, sealed under :data:`KEY`, expiring
in a hundred years. :data:`POSTGRES_TABLE` is that release's PostgreSQL table.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

from tests.support.paths import ROOT

SQLITE = ROOT / "tests" / "suspensions" / "data" / "suspensions-0.1.0.sqlite"
KEY = b"the 0.1.0 store fixture's key"
TOOL_CALL_ID = "t-0.1.0"
CODE = """
made = await crm.create(title="before the pause")
gone = await crm.delete(id=made["id"])
return [made, gone]
"""
FINISHED = [{"id": 1}, {"deleted": 1}]
"""What the paused program returns once its delete is approved."""

POSTGRES_TABLE = (
    "CREATE TABLE {table} ("
    " stored bigint GENERATED ALWAYS AS IDENTITY,"
    " id text PRIMARY KEY,"
    " session text NOT NULL,"
    " tool_call_id text,"
    " expires_at double precision NOT NULL,"
    " record bytea NOT NULL,"
    " decision bytea)"
)
"""The PostgreSQL table of release 0.1.0, as its ``PostgresSuspensions`` made it (format in ``table``)."""
POSTGRES_COLUMNS = "id, session, tool_call_id, expires_at, record, decision"


def stored_row() -> tuple[Any, ...]:
    """The one row of :data:`SQLITE`, in :data:`POSTGRES_COLUMNS` order."""
    with closing(sqlite3.connect(SQLITE)) as db:
        (row,) = db.execute(f"SELECT {POSTGRES_COLUMNS} FROM suspensions").fetchall()
    return tuple(row)
