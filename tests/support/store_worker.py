"""A second process for the suspension store tests: it opens a store described on its command line.

``python -m tests.support.store_worker claim STORE ID...`` opens the store, prints ``ready``, waits for a line
on stdin, claims every id at once (leaving :data:`TOMBSTONE` in its place) and prints the ids it won as JSON.
``python -m tests.support.store_worker put STORE SUSPENSION`` stores one suspension given as JSON (record in hex).
STORE is JSON: ``{"kind": "sqlite", "path": ...}`` or ``{"kind": "postgres", "dsn": ..., "table": ...}``.
"""

from __future__ import annotations

import json
import sys
import time

import anyio

from mycelium.suspensions import PostgresSuspensions, SqliteSuspensions, StoredSuspension, SuspensionStore

TOMBSTONE = b"claimed"
"""The record a test's claim leaves in place of what it claimed."""


def open_store(described: dict[str, str]) -> SuspensionStore:
    """The store ``described`` names: this is how the tests and this worker reach the same one."""
    if described["kind"] == "sqlite":
        return SqliteSuspensions(described["path"])
    return PostgresSuspensions(described["dsn"], table=described["table"])


def encode(suspension: StoredSuspension) -> str:
    """``suspension``, undecided, as the ``put`` command takes it."""
    fields = {
        "id": suspension.id,
        "session_id": suspension.session_id,
        "tool_call_id": suspension.tool_call_id,
        "expires_at": suspension.expires_at,
        "record": suspension.record.hex(),
    }
    return json.dumps(fields)


async def claim(store: SuspensionStore, ids: list[str]) -> None:
    await store.get("connect now, so the race starts at the claims")
    print("ready", flush=True)
    sys.stdin.readline()
    won: list[str] = []

    async def claim_one(suspension_id: str) -> None:
        if await store.claim(suspension_id, now=time.time(), tombstone=TOMBSTONE) is not None:
            won.append(suspension_id)

    async with anyio.create_task_group() as group:
        for suspension_id in ids:
            group.start_soon(claim_one, suspension_id)
    print(json.dumps(won), flush=True)


async def main(*arguments: str) -> None:
    command, described, *rest = arguments
    store = open_store(json.loads(described))
    try:
        if command == "claim":
            await claim(store, rest)
        else:
            fields = json.loads(rest[0])
            await store.put(
                StoredSuspension(**fields | {"record": bytes.fromhex(fields["record"])}), max_per_session=10
            )
    finally:
        await store.aclose()


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
