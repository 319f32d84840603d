"""A worker process for the connection store tests: it opens a store described on its command line.

``python -m tests.support.connections_worker STORE BOUND COUNT`` prints ``ready`` before it
touches the store, waits for a line on stdin, then opens COUNT connections within BOUND (each
keeping the one it opened before, as a server keeps the connections it holds) and prints, as
JSON, its prefix, the ids it evicted and how many opens were refused. STORE is JSON:
``{"kind": "sqlite", "path": ...}`` or ``{"kind": "postgres", "dsn": ..., "table": ...}``.
"""

from __future__ import annotations

import json
import os
import sys

import anyio

from mycelium.mcp import ConnectionStore, PostgresConnections, SqliteConnections


def open_connections(described: dict[str, str]) -> ConnectionStore:
    """The store ``described`` names: this is how the tests and this worker reach the same one."""
    if described["kind"] == "sqlite":
        return SqliteConnections(described["path"])
    return PostgresConnections(described["dsn"], table=described["table"])


async def main(described: str, bound: str, count: str) -> None:
    prefix = f"w{os.getpid()}-"
    evicted: list[str] = []
    refused = 0
    print("ready", flush=True)
    sys.stdin.readline()
    store = open_connections(json.loads(described))
    try:
        for number in range(int(count)):
            opened = await store.open(f"{prefix}{number}", "p", bound=int(bound), keep={f"{prefix}{number - 1}"})
            if opened is None:
                refused += 1
            else:
                evicted.extend(opened)
    finally:
        await store.aclose()
    print(json.dumps({"prefix": prefix, "evicted": evicted, "refused": refused}), flush=True)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
