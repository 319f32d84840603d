"""Approvals over MCP 2026-07-28, end to end over HTTP: round trip, pending approvals, free slots.

A server child process (``create_mcp`` over ``create_mcp_catalog`` on the real Monty
sandbox, uvicorn on 127.0.0.1, one bearer token) serves a module of two operations:
``ping`` and ``remove`` (``confirm=True``). Its paused runs wait in the store named on the
command line: this process's memory, a SQLite file, or a PostgreSQL the script starts with
pgserver in a temp folder. The client sends raw 2026-07-28 requests (the JSON an SDK client
sends; no client library in the timing).

- **round trip**: a program makes one ``ping``, then calls ``remove``. The first request
  pauses it and answers input-required; the retry carries the sealed ``requestState`` and the
  approval, and answers the program's result. Timed from the first byte out to the last byte
  of the result in, per store, with p50 and p99; beside it the floor, the same program without
  the confirmation (one request, no pause), measured in the same rounds.
- **pending approvals**: ``--pending`` programs paused and never answered. Per store: the
  store's bytes per pending approval (the SQLite file with its WAL, or the PostgreSQL
  table's total relation size) and the server's RSS growth per pending approval. While they
  wait, the server's sandbox slots are free: the plain execute's p50 is measured before and
  during, and printed side by side.

    .venv/bin/python bench/approvals.py                  # about 90 s on the 2-core build machine
    .venv/bin/python bench/approvals.py --quick          # about 30 s

Target (issue 22): the round trip under 20 ms at the median on PostgreSQL. The bench
reports; it exits 0 unless a run does not end as expected.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from pydantic import BaseModel
from stats import percentile
from suspend import postgres

TOKEN = "bench-token-0123456789abcdef"
RING = "bench-key-" + "0123456789abcdef" * 3
MODERN = "2026-07-28"
CONFIRMED = "a = await shop.ping(n=1)\nb = await shop.remove(id=7)\nreturn [a['n'], b['id']]"
PLAIN = "a = await shop.ping(n=1)\nb = await shop.ping(n=7)\nreturn [a['n'], b['n']]"
STORES = ("memory", "sqlite", "postgres")
TABLE = "bench_approvals"


# --------------------------------------------------------------------------------------
# The server child
# --------------------------------------------------------------------------------------


class Number(BaseModel):
    n: int


class Key(BaseModel):
    id: int


async def serve(store_kind: str, where: str, capacity: int) -> None:
    """Serve the shop on an ephemeral port; print ``ready``, then answer ``rss`` and ``quit`` on stdin."""
    import uvicorn

    from mycelium import ExecutionOptions, Module, operation
    from mycelium.mcp import Agent, McpAuthority, SecretKeys, bearer_tokens, create_mcp, create_mcp_catalog
    from mycelium.sandbox.monty import MontySandbox
    from mycelium.suspensions import MemorySuspensions, PostgresSuspensions, SqliteSuspensions, Suspensions

    async def ping(request: Number) -> dict[str, int]:
        return {"n": request.n}

    async def remove(request: Key) -> dict[str, int]:
        return {"id": request.id}

    shop = Module(
        id="bench-shop",
        name="shop",
        operations={
            "ping": operation(input=Number, execute=ping, access="read"),
            "remove": operation(input=Key, execute=remove, access="write", confirm=True),
        },
    )
    ring = SecretKeys.of(RING)
    key, _ = ring.suspension_keys()
    kept = (
        MemorySuspensions()
        if store_kind == "memory"
        else SqliteSuspensions(where)
        if store_kind == "sqlite"
        else PostgresSuspensions(where, table=TABLE)
    )
    suspensions = Suspensions(store=kept, key=key, max_per_session=1_000_000)
    authority = McpAuthority(grants={"bench-shop": "write"}, sources=[shop])
    catalog = create_mcp_catalog(
        load=lambda principal: authority,
        sandbox=MontySandbox(),
        execution=ExecutionOptions(sandbox_capacity=capacity),
        suspensions=suspensions,
    )
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as `mycelium serve` listens
    listener.bind(("127.0.0.1", 0))
    async with catalog:
        server = create_mcp(
            catalog=catalog, authenticate=bearer_tokens({TOKEN: Agent("bench-agent")}), secret_keys=ring
        )
        web = uvicorn.Server(uvicorn.Config(server.asgi, log_level="warning", access_log=False, lifespan="on"))
        serving = asyncio.create_task(web.serve(sockets=[listener]))
        while not web.started:
            if serving.done():
                await serving
                raise SystemExit("the server stopped before it started")
            await asyncio.sleep(0.01)
        print(json.dumps({"event": "ready", "port": listener.getsockname()[1]}), flush=True)
        loop = asyncio.get_running_loop()
        while True:
            line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
            if line == "rss":
                print(json.dumps({"event": "rss", "rss": resident()}), flush=True)
            elif line in ("quit", ""):
                break
        web.should_exit = True
        await serving


def resident() -> int:
    """This process's resident set, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


# --------------------------------------------------------------------------------------
# The parent: the server's handle, the client, the measures
# --------------------------------------------------------------------------------------


@dataclass
class Server:
    """A server child: where it listens, and one JSON line back per command."""

    kind: str
    where: str
    process: asyncio.subprocess.Process
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def read(self, event: str) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            line = await self.process.stdout.readline()
            if not line:
                raise SystemExit(f"the {self.kind} server exited (code {await self.process.wait()})")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("event") == event:
                return message

    async def rss(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.write(b"rss\n")
        await self.process.stdin.drain()
        return int((await self.read("rss"))["rss"])

    async def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"quit\n")
        await self.process.stdin.drain()
        try:
            await asyncio.wait_for(self.process.wait(), 30)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


@asynccontextmanager
async def started(kind: str, where: str, capacity: int) -> AsyncIterator[Server]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--serve",
        kind,
        "--where",
        where,
        f"--capacity={capacity}",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    server = Server(kind, where, process)
    try:
        server.port = int((await asyncio.wait_for(server.read("ready"), 120))["port"])
        yield server
    finally:
        await server.stop()


HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": MODERN,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "execute",
}


def call(code: str, request_id: int, state: str | None = None) -> bytes:
    params: dict[str, Any] = {
        "name": "execute",
        "arguments": {"code": code},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        },
    }
    if state is not None:
        params["requestState"] = state
        params["inputResponses"] = {"approval": {"action": "accept", "content": {"approve": True}}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


class Unexpected(Exception):
    """A request that did not end as the bench expects."""


async def send(http: httpx2.AsyncClient, url: str, body: bytes) -> dict[str, Any]:
    response = await http.post(url, headers=HEADERS, content=body)
    if response.status_code != 200:
        raise Unexpected(f"HTTP {response.status_code}: {response.text[:300]}")
    message = json.loads(response.text)
    if "result" not in message:
        raise Unexpected(f"not a result: {response.text[:300]}")
    return dict(message["result"])


def answer_of(result: dict[str, Any]) -> object:
    if result.get("isError"):
        raise Unexpected(f"execute failed: {result['content'][0]['text'][:300]}")
    return json.loads(result["content"][0]["text"])


async def pause(http: httpx2.AsyncClient, url: str, request_id: int) -> str:
    """Run the confirmed program to its pause; the sealed requestState."""
    result = await send(http, url, call(CONFIRMED, request_id))
    if result.get("resultType") != "input_required":
        raise Unexpected(f"did not pause: {json.dumps(result)[:300]}")
    return str(result["requestState"])


async def round_trip(http: httpx2.AsyncClient, url: str, request_id: int) -> float:
    started_at = time.perf_counter()
    state = await pause(http, url, request_id)
    if answer_of(await send(http, url, call(CONFIRMED, request_id, state))) != [1, 7]:
        raise Unexpected("the resumed program returned something else")
    return (time.perf_counter() - started_at) * 1000


async def plain(http: httpx2.AsyncClient, url: str, request_id: int) -> float:
    started_at = time.perf_counter()
    if answer_of(await send(http, url, call(PLAIN, request_id))) != [1, 7]:
        raise Unexpected("the plain program returned something else")
    return (time.perf_counter() - started_at) * 1000


def store_bytes(server: Server) -> int:
    """What the store holds on disk: the SQLite file and its WAL, or the PostgreSQL table (see ``table_bytes``)."""
    if server.kind != "sqlite":
        return 0
    return sum(
        Path(server.where + suffix).stat().st_size for suffix in ("", "-wal") if Path(server.where + suffix).exists()
    )


async def table_bytes(uri: str) -> int:
    import asyncpg

    connection = await asyncpg.connect(uri)
    try:
        return int(await connection.fetchval(f"SELECT pg_total_relation_size('{TABLE}')") or 0)
    finally:
        await connection.close()


@dataclass
class Measured:
    trips: list[float]
    floor: list[float]
    bytes_per_pending: float
    rss_per_pending: float
    plain_before: float
    plain_during: float


async def measure(server: Server, arguments: argparse.Namespace) -> Measured:
    ids = iter(range(1, 10**9))
    async with httpx2.AsyncClient(timeout=60) as http:
        for _ in range(arguments.warmup):
            await round_trip(http, server.url, next(ids))
            await plain(http, server.url, next(ids))
        trips, floor = [], []
        for _ in range(arguments.rounds):
            trips.append(await round_trip(http, server.url, next(ids)))
            floor.append(await plain(http, server.url, next(ids)))
        plain_before = statistics.median([await plain(http, server.url, next(ids)) for _ in range(50)])
        before_bytes = await table_bytes(server.where) if server.kind == "postgres" else store_bytes(server)
        before_rss = await server.rss()
        for _ in range(arguments.pending):
            await pause(http, server.url, next(ids))
        after_rss = await server.rss()
        after_bytes = await table_bytes(server.where) if server.kind == "postgres" else store_bytes(server)
        plain_during = statistics.median([await plain(http, server.url, next(ids)) for _ in range(50)])
    count = max(1, arguments.pending)
    return Measured(
        trips,
        floor,
        (after_bytes - before_bytes) / count,
        (after_rss - before_rss) / count,
        plain_before,
        plain_during,
    )


async def main(arguments: argparse.Namespace) -> None:
    results: dict[str, Measured] = {}
    with tempfile.TemporaryDirectory(prefix="mycelium-approvals-") as scratch:
        folder = Path(scratch)
        async with AsyncExitStack() as stack:
            uri = await stack.enter_async_context(postgres(folder / "postgres"))
            where = {"memory": "", "sqlite": str(folder / "approvals.db"), "postgres": uri}
            for kind in STORES:
                async with started(kind, where[kind], arguments.capacity) as server:
                    results[kind] = await measure(server, arguments)
    cores, slots = os.cpu_count(), arguments.capacity
    print(f"Approvals over MCP 2026-07-28, HTTP on 127.0.0.1, {cores} cores, sandbox capacity {slots}")
    print(f"\nround trip: pause (input-required) + retry (resume, result); {arguments.rounds} rounds per store (ms)")
    print(f"{'store':<10} {'p50':>8} {'p99':>8}   {'floor p50':>9} {'floor p99':>9}   {'ratio':>6}")
    for kind, measured in results.items():
        p50, floor_p50 = statistics.median(measured.trips), statistics.median(measured.floor)
        print(
            f"{kind:<10} {p50:8.2f} {percentile(measured.trips, 0.99):8.2f}   {floor_p50:9.2f} "
            f"{percentile(measured.floor, 0.99):9.2f}   {p50 / floor_p50:6.2f}"
        )
    print("(floor: the same program without the confirmation, one request)")
    print(f"\n{arguments.pending} approvals pending on one replica, never answered")
    print(f"{'store':<10} {'store B/pending':>16} {'server RSS B/pending':>21} {'plain p50 before':>17} {'during':>8}")
    for kind, measured in results.items():
        stored = f"{measured.bytes_per_pending:16,.0f}" if kind != "memory" else f"{'(in RSS)':>16}"
        print(
            f"{kind:<10} {stored} {measured.rss_per_pending:21,.0f} {measured.plain_before:17.2f} "
            f"{measured.plain_during:8.2f}"
        )
    print(
        f"(every pending approval left its sandbox slot free: {arguments.pending} of them on {arguments.capacity} "
        "slots, and the plain execute still ran)"
    )
    target = statistics.median(results["postgres"].trips)
    print(f"\ntarget (round trip under 20 ms p50 on PostgreSQL): {target:.2f} ms, {'met' if target < 20 else 'MISSED'}")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--pending", type=int, default=1_000, help="approvals left pending per store")
    parser.add_argument("--capacity", type=int, default=4, help="the server's sandbox slots")
    parser.add_argument("--quick", action="store_true", help="100 rounds, 300 pending")
    parser.add_argument("--serve", choices=STORES, help=argparse.SUPPRESS)
    parser.add_argument("--where", default="", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.rounds, arguments.pending = 100, 300
    if arguments.serve:
        asyncio.run(serve(arguments.serve, arguments.where, arguments.capacity))
    else:
        asyncio.run(main(arguments))


if __name__ == "__main__":
    cli()
