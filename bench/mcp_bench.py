"""The work behind ``bench/mcp.py``: the 20 tools, both servers, the load generator and the report.

Run it through ``bench/mcp.py`` (see its docstring). A server runs in a child process
started as ``bench/mcp.py --serve <side>``: it prints one JSON line when it listens, then
answers commands on stdin with one JSON line each (``mark`` starts a measured window:
garbage collected, peak RSS reset, loop-stall record cleared; ``report`` says what the
window saw; ``quit`` stops it).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import gc
import json
import os
import socket
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from loop_watch import LoopWatch, StallStacks
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import BaseModel, Field
from stats import percentile

from mycelium import Access, ExecutionOptions, Module, Runtime, Session, SharedSandbox
from mycelium.mcp import Agent, McpAuthority, create_mcp_catalog
from mycelium.sandbox.isolated import IsolatedSandbox
from mycelium.sandbox.monty import MontySandbox

ENTRY = Path(__file__).resolve().parent / "mcp.py"
TOKEN = "bench-token-0123456789abcdef"
MODULE_ID = "bench-store"
GRANTS = {MODULE_ID: "write"}
SIDES = ("fastmcp", "ours")
# What is measured: a server driven in one protocol era. Ours is driven in both, from one server process.
LANES = ("fastmcp", "ours", "ours-2026")
SERVER_OF = {"fastmcp": "fastmcp", "ours": "ours", "ours-2026": "ours"}
MODE_OF = {"fastmcp": "legacy", "ours": "legacy", "ours-2026": "2026-07-28"}
LABEL = {"fastmcp": "FastMCP", "ours": "ours 2025-11-25", "ours-2026": "ours 2026-07-28"}
SERVER_LABEL = {"fastmcp": "FastMCP", "ours": "ours"}
CONCURRENCY = (1, 4, 16)
WARMUP_SESSIONS = 4
TARGET_RPS_RATIO = 1.5
KIB = 1024
MIB = 1024 * KIB
IDLE_SECONDS = 1.0  # how long a server's idle CPU is measured before its window opens
STALL_TARGET_MS = 25.0  # issue 24: no collection (or anything else) holds our loop this long
FASTMCP_MAX_TOOL_CALLS = 10_000  # its default (50) would refuse the 100-call program; ours allows 10,000

# The same program on each side: ours calls the operation through its namespace, FastMCP's
# CodeMode through its one `call_tool` function.
ONE_CALL = {
    "ours": "return await store.get(key='k7')",
    "fastmcp": "return await call_tool('get', {'key': 'k7'})",
}
HUNDRED_CALLS = {
    side: (f"total = 0\nfor i in range(100):\n    item = await {call}\n    total += len(item['value'])\nreturn total")
    for side, call in (("ours", "store.get(key='k7')"), ("fastmcp", "call_tool('get', {'key': 'k7'})"))
}


# --------------------------------------------------------------------------------------
# The 20 tools: a small in-memory store, the same functions registered on both servers
# --------------------------------------------------------------------------------------


class Item(BaseModel):
    key: str
    value: str
    tags: list[str] = Field(default_factory=list)


class Count(BaseModel):
    count: int


class Found(BaseModel):
    found: bool


class Counter(BaseModel):
    name: str
    value: int


class StoreStats(BaseModel):
    items: int
    tags: int
    counters: int


class Echo(BaseModel):
    message: str


class Pong(BaseModel):
    value: str


ITEMS: dict[str, Item] = {
    f"k{index}": Item(key=f"k{index}", value=f"value number {index}", tags=["even" if index % 2 == 0 else "odd"])
    for index in range(50)
}
COUNTERS: dict[str, int] = {}


def _item(key: str) -> Item:
    try:
        return ITEMS[key]
    except KeyError:
        raise LookupError(f"no item {key!r}") from None


async def get(key: str) -> Item:
    """Get one item by key."""
    return _item(key)


async def put(key: str, value: str, tags: list[str] | None = None) -> Item:
    """Create or replace an item."""
    ITEMS[key] = Item(key=key, value=value, tags=tags or [])
    return ITEMS[key]


async def delete(key: str) -> Found:
    """Delete an item; says whether it existed."""
    return Found(found=ITEMS.pop(key, None) is not None)


async def exists(key: str) -> Found:
    """Whether an item exists."""
    return Found(found=key in ITEMS)


async def count() -> Count:
    """How many items the store holds."""
    return Count(count=len(ITEMS))


async def keys(prefix: str = "") -> list[str]:
    """The keys starting with a prefix, sorted."""
    return sorted(key for key in ITEMS if key.startswith(prefix))


async def list_items(prefix: str = "", limit: int = 20) -> list[Item]:
    """List items whose key starts with a prefix."""
    return [ITEMS[key] for key in sorted(ITEMS) if key.startswith(prefix)][:limit]


async def search(query: str, limit: int = 10) -> list[Item]:
    """Find items whose value contains the query."""
    return [item for item in ITEMS.values() if query in item.value][:limit]


async def tag(key: str, tag: str) -> Item:
    """Add a tag to an item."""
    item = _item(key)
    if tag not in item.tags:
        item.tags.append(tag)
    return item


async def untag(key: str, tag: str) -> Item:
    """Remove a tag from an item."""
    item = _item(key)
    item.tags = [each for each in item.tags if each != tag]
    return item


async def by_tag(tag: str) -> list[Item]:
    """The items carrying a tag."""
    return [item for item in ITEMS.values() if tag in item.tags]


async def tags() -> list[str]:
    """Every tag in use, sorted."""
    return sorted({each for item in ITEMS.values() for each in item.tags})


async def append(key: str, text: str) -> Item:
    """Append text to an item's value."""
    item = _item(key)
    item.value += text
    return item


async def rename(key: str, new_key: str) -> Item:
    """Move an item to a new key."""
    item = ITEMS.pop(key) if key in ITEMS else _item(key)
    ITEMS[new_key] = item = Item(key=new_key, value=item.value, tags=item.tags)
    return item


async def copy(key: str, new_key: str) -> Item:
    """Copy an item to a new key."""
    item = _item(key)
    ITEMS[new_key] = Item(key=new_key, value=item.value, tags=list(item.tags))
    return ITEMS[new_key]


async def increment(name: str, by: int = 1) -> Counter:
    """Add to a named counter."""
    COUNTERS[name] = COUNTERS.get(name, 0) + by
    return Counter(name=name, value=COUNTERS[name])


async def counter(name: str) -> Counter:
    """Read a named counter."""
    return Counter(name=name, value=COUNTERS.get(name, 0))


async def stats() -> StoreStats:
    """Sizes of the store."""
    return StoreStats(items=len(ITEMS), tags=len(await tags()), counters=len(COUNTERS))


async def echo(message: str) -> Echo:
    """Return the message."""
    return Echo(message=message)


async def ping() -> Pong:
    """Answer pong."""
    return Pong(value="pong")


# name -> (function, read-only?)
TOOLS: dict[str, tuple[Callable[..., Awaitable[Any]], bool]] = {
    "get": (get, True),
    "put": (put, False),
    "delete": (delete, False),
    "exists": (exists, True),
    "count": (count, True),
    "keys": (keys, True),
    "list": (list_items, True),
    "search": (search, True),
    "tag": (tag, False),
    "untag": (untag, False),
    "by_tag": (by_tag, True),
    "tags": (tags, True),
    "append": (append, False),
    "rename": (rename, False),
    "copy": (copy, False),
    "increment": (increment, False),
    "counter": (counter, True),
    "stats": (stats, True),
    "echo": (echo, True),
    "ping": (ping, True),
}
assert len(TOOLS) == 20

EXPECTED_ONE = ITEMS["k7"].model_dump(mode="json")
EXPECTED_HUNDRED = 100 * len(ITEMS["k7"].value)


def store_module() -> Module:
    """The 20 tools as one Mycelium module (guest name ``store``)."""
    module = Module(id=MODULE_ID, name="store", description="A small in-memory key-value store")
    for name, (function, read_only) in TOOLS.items():
        module.operation(name, access="read" if read_only else "write")(function)
    return module


# --------------------------------------------------------------------------------------
# Server child
# --------------------------------------------------------------------------------------


def emit(**fields: object) -> None:
    """One JSON line to the parent."""
    print(json.dumps(fields), flush=True)


def proc_status(pid: int | str = "self") -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` (peak RSS) of a process, in bytes."""
    found: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                found[name] = int(rest.split()[0]) * KIB
    return found


def reset_peak_rss() -> bool:
    """Start ``VmHWM`` afresh from the current RSS (Linux: write 5 to ``clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


def reaped() -> float:
    """CPU seconds of this process's children that have exited and been waited for (sandbox workers)."""
    times = os.times()
    return times.children_user + times.children_system


async def fastmcp_app(with_token: bool) -> tuple[Any, Callable[[], Awaitable[None]]]:
    """FastMCP with CodeMode over the 20 tools at ``/mcp``, checking a static bearer token if ``with_token``."""
    from fastmcp import FastMCP
    from fastmcp.experimental.transforms.code_mode import CodeMode, MontySandboxProvider
    from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

    verifier = StaticTokenVerifier({TOKEN: {"client_id": "bench", "scopes": []}}) if with_token else None
    server = FastMCP("bench", auth=verifier)
    for name, (function, _read_only) in TOOLS.items():
        server.tool(function, name=name)
    server.add_transform(CodeMode(sandbox_provider=MontySandboxProvider(), max_tool_calls=FASTMCP_MAX_TOOL_CALLS))

    async def close() -> None:
        return None

    return server.http_app(path="/mcp"), close


async def our_app(
    max_connections: int, capacity: int | None, gc_tuning: bool, sandbox: str
) -> tuple[Any, Callable[[], Awaitable[None]]]:
    """Mycelium's server over the same tools, ``bearer_tokens`` for one agent with write grants, on
    ``sandbox`` (``"monty"`` in process, or ``"isolated"`` as ``mycelium serve`` runs); with
    ``gc_tuning``, as ``mycelium serve`` runs (``freeze_loaded=True``)."""
    from mycelium.mcp import bearer_tokens, create_mcp

    authority = McpAuthority(grants=GRANTS, sources=[store_module()])
    catalog = create_mcp_catalog(
        load=lambda principal: authority,
        sandbox=IsolatedSandbox() if sandbox == "isolated" else MontySandbox(),
        execution=ExecutionOptions(sandbox_capacity=capacity),
        max_connections=max_connections,
    )
    # Entered here and left in close(), both from the serving task: a catalog's task group needs one task.
    running = AsyncExitStack()
    await running.enter_async_context(catalog)
    server = create_mcp(
        catalog=catalog, authenticate=bearer_tokens({TOKEN: Agent("bench-agent")}), freeze_loaded=gc_tuning
    )

    async def close() -> None:
        await server.close()
        await running.aclose()

    return server.asgi, close


async def serve(arguments: argparse.Namespace) -> None:
    """Serve ``arguments.serve`` on 127.0.0.1 (ephemeral port) and answer the parent's commands."""
    import uvicorn

    side, profile = arguments.serve, arguments.profile_file
    watch = LoopWatch()
    ticking = asyncio.create_task(watch.run())
    stacks = StallStacks(watch, arguments.stall_stacks) if arguments.stall_stacks else None
    if stacks is not None:
        stacks.start()
    if side == "fastmcp":
        app, close = await fastmcp_app(arguments.fastmcp_auth == "token")
    else:
        app, close = await our_app(
            arguments.max_connections, arguments.sandbox_capacity, not arguments.no_gc_tuning, arguments.sandbox
        )
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as `mycelium serve` listens
    listener.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    while not server.started:
        if serving.done():
            await serving  # raises what stopped it
            raise SystemExit(f"{side} server stopped before it started")
        await asyncio.sleep(0.01)
    profiler = cProfile.Profile() if profile else None
    window: dict[str, float] = collections.defaultdict(float)

    async def command(name: str) -> None:
        if name == "mark":
            # The idle cost (the ticker itself, housekeeping) is measured first, so that the
            # report can take it out of the CPU per execute.
            cpu, loop_cpu, started = time.process_time(), time.thread_time(), time.perf_counter()
            await asyncio.sleep(IDLE_SECONDS)
            elapsed = time.perf_counter() - started
            window["idle_cpu"] = (time.process_time() - cpu) / elapsed
            window["idle_loop_cpu"] = (time.thread_time() - loop_cpu) / elapsed
            gc.collect()
            window["objects"] = len(gc.get_objects())
            window["cpu"], window["loop_cpu"], window["workers"] = time.process_time(), time.thread_time(), reaped()
            window["peak_reset"] = reset_peak_rss()
            window["rss"] = proc_status()["VmRSS"]
            window["started"] = time.perf_counter()
            watch.reset()
            if stacks is not None:
                stacks.counts.clear()
            if profiler is not None:
                profiler.enable()
            emit(event="marked")
        elif name == "report":
            # The loop figures first: the collection below would otherwise count as a stall.
            worst, worst_cpu, most_cpu, p99 = watch.worst, watch.worst_cpu, watch.most_cpu, watch.percentile(0.99)
            worst_process_cpu = watch.worst_process_cpu
            gc_worst, gc_generation, gc_worst_cpu = watch.gc_worst, watch.gc_generation, watch.gc_worst_cpu
            gc_most_cpu, gc_count, gc_total_cpu = watch.gc_most_cpu, watch.gc_count, watch.gc_total_cpu
            gc_generations = [asdict(generation) for generation in watch.gc_by_generation]
            cpu, loop_cpu = time.process_time() - window["cpu"], time.thread_time() - window["loop_cpu"]
            workers = reaped() - window["workers"]
            seconds = time.perf_counter() - window["started"]
            gc.collect()
            status = proc_status()
            emit(
                event="report",
                cpu_s=cpu,
                loop_cpu_s=loop_cpu,
                idle_cpu_s=window["idle_cpu"] * seconds,
                idle_loop_cpu_s=window["idle_loop_cpu"] * seconds,
                workers_cpu_s=workers,
                objects_start=window["objects"],
                objects_end=len(gc.get_objects()),
                frozen=gc.get_freeze_count(),
                rss_start=window["rss"],
                rss_end=status["VmRSS"],
                peak=status["VmHWM"],
                peak_reset=window["peak_reset"],
                stall_worst_ms=worst,
                stall_worst_cpu_ms=worst_cpu,
                stall_worst_process_cpu_ms=worst_process_cpu,
                stall_most_cpu_ms=most_cpu,
                stall_p99_ms=p99,
                gc_worst_ms=gc_worst,
                gc_worst_cpu_ms=gc_worst_cpu,
                gc_most_cpu_ms=gc_most_cpu,
                gc_generation=gc_generation,
                gc_count=gc_count,
                gc_total_cpu_ms=gc_total_cpu,
                gc_generations=gc_generations,
                stall_stacks=stacks.top(8) if stacks is not None else [],
            )
            watch.reset()
        elif name == "quit":
            server.should_exit = True

    loop = asyncio.get_running_loop()

    def read_commands() -> None:
        for line in sys.stdin:
            asyncio.run_coroutine_threadsafe(command(line.strip()), loop).result()
        loop.call_soon_threadsafe(setattr, server, "should_exit", True)

    threading.Thread(target=read_commands, daemon=True).start()
    emit(event="ready", port=listener.getsockname()[1], pid=os.getpid())
    await serving
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    ticking.cancel()
    await close()


# --------------------------------------------------------------------------------------
# Parent: the servers' handles, the clients, the load
# --------------------------------------------------------------------------------------


@dataclass
class ServerProcess:
    """A server child: its URL, and one JSON line back per command."""

    side: str
    process: asyncio.subprocess.Process
    port: int = 0
    executes: int = 0
    lines: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @classmethod
    async def start(cls, side: str, arguments: argparse.Namespace) -> ServerProcess:
        extra = ["--profile-file", str(Path(arguments.profile) / f"{side}.prof")] if arguments.profile else []
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ENTRY),
            "--serve",
            side,
            f"--max-connections={arguments.max_connections}",
            *([f"--sandbox-capacity={arguments.sandbox_capacity}"] if arguments.sandbox_capacity else []),
            f"--fastmcp-auth={arguments.fastmcp_auth}",
            f"--stall-stacks={arguments.stall_stacks}",
            *(["--no-gc-tuning"] if arguments.no_gc_tuning else []),
            f"--sandbox={arguments.sandbox}",
            *extra,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        handle = cls(side, process)
        ready = await asyncio.wait_for(handle.read("ready"), 120)
        handle.port = int(ready["port"])
        return handle

    async def read(self, event: str) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            line = await self.process.stdout.readline()
            if not line:
                raise SystemExit(f"the {self.side} server exited (code {await self.process.wait()})")
            try:
                message = json.loads(line)
            except ValueError:
                continue  # something the server printed on its own
            if isinstance(message, dict) and message.get("event") == event:
                return message

    async def command(self, name: str, answer: str | None) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{name}\n".encode())
        await self.process.stdin.drain()
        return await self.read(answer) if answer else {}

    async def stop(self) -> None:
        await self.command("quit", None)
        try:
            await asyncio.wait_for(self.process.wait(), 30)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


async def open_client(stack: AsyncExitStack, url: str, mode: str = "legacy") -> Client:
    """One SDK client on its own HTTP client, bearer token attached: an MCP session (``"legacy"``,
    2025-11-25) or requests that each stand alone (``"2026-07-28"``)."""
    http: httpx2.AsyncClient = await stack.enter_async_context(
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    )
    return await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), mode=mode, cache=None))


class Failed(Exception):
    """An execute that did not return the expected value."""


async def execute(server: ServerProcess, client: Client, code: str, expected: object) -> float:
    """One execute; its latency in ms. Raises :class:`Failed` when the answer is not ``expected``."""
    started = time.perf_counter()
    result = await client.call_tool("execute", {"code": code})
    elapsed = (time.perf_counter() - started) * 1000
    server.executes += 1
    text = result.content[0].text if result.content and result.content[0].type == "text" else ""
    if result.is_error:
        raise Failed(f"{server.side}: execute failed: {text[:500]}")
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    if isinstance(value, dict) and set(value) == {"result"}:
        value = value["result"]  # FastMCP wraps a non-object result
    if value != expected:
        raise Failed(f"{server.side}: execute returned {text[:500]!r}, expected {expected!r}")
    return elapsed


@dataclass
class Load:
    """Requests per second (one per round) and every request's latency (ms)."""

    rates: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)


async def drive(server: ServerProcess, clients: Sequence[Client], seconds: float, into: Load) -> None:
    """Each client sends one-call executes back to back for ``seconds``."""
    stop = time.perf_counter() + seconds
    done = 0

    async def worker(client: Client) -> None:
        nonlocal done
        while time.perf_counter() < stop:
            into.latencies.append(await execute(server, client, ONE_CALL[server.side], EXPECTED_ONE))
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(client) for client in clients))
    into.rates.append(done / (time.perf_counter() - started))


async def lane_clients(stack: AsyncExitStack, servers: dict[str, ServerProcess], lane: str, count: int) -> list[Client]:
    server = servers[SERVER_OF[lane]]
    return [await open_client(stack, server.url, MODE_OF[lane]) for _ in range(count)]


async def concurrency_level(
    servers: dict[str, ServerProcess], concurrency: int, arguments: argparse.Namespace
) -> dict[str, Load]:
    """Rounds alternating the lanes, each worker with its own client, opened before timing."""
    loads = {lane: Load() for lane in LANES}
    async with AsyncExitStack() as stack:
        clients = {lane: await lane_clients(stack, servers, lane, concurrency) for lane in LANES}
        for lane in LANES:
            server = servers[SERVER_OF[lane]]
            for client in clients[lane]:  # a first execute per client, untimed
                await execute(server, client, ONE_CALL[server.side], EXPECTED_ONE)
        for round_index in range(arguments.rounds):
            order = LANES if round_index % 2 == 0 else LANES[::-1]
            for lane in order:
                await drive(servers[SERVER_OF[lane]], clients[lane], arguments.seconds, loads[lane])
    return loads


async def hundred_calls(servers: dict[str, ServerProcess], runs: int) -> dict[str, list[float]]:
    """Latency (ms) of the 100-call program, the lanes interleaved run by run, one client each."""
    samples: dict[str, list[float]] = {lane: [] for lane in LANES}
    async with AsyncExitStack() as stack:
        clients = {lane: (await lane_clients(stack, servers, lane, 1))[0] for lane in LANES}
        for index in range(runs + 1):
            for lane in LANES:
                server = servers[SERVER_OF[lane]]
                elapsed = await execute(server, clients[lane], HUNDRED_CALLS[server.side], EXPECTED_HUNDRED)
                if index:  # the first run of each lane is untimed
                    samples[lane].append(elapsed)
    return samples


async def warm_up(server: ServerProcess, executes: int) -> None:
    """Untimed executes from a few sessions at once, so that pools, caches and allocator arenas
    have grown before the measured window (the first thousand executes grow RSS most)."""
    async with AsyncExitStack() as stack:
        clients = [await open_client(stack, server.url) for _ in range(WARMUP_SESSIONS)]

        async def worker(client: Client) -> None:
            for _ in range(executes // WARMUP_SESSIONS):
                await execute(server, client, ONE_CALL[server.side], EXPECTED_ONE)
            await execute(server, client, HUNDRED_CALLS[server.side], EXPECTED_HUNDRED)

        await asyncio.gather(*(worker(client) for client in clients))


async def lease_setup(samples: int) -> dict[str, list[float]]:
    """Microseconds to set up and release a request's lease for an already-loaded principal.

    One runtime over the principal's capabilities, on a :class:`SharedSandbox` (the pool a
    server shares between principals); per request, the Access built from the authority
    just read, a lease acquired with the connection's Session, then released. No sandbox
    run: this is the setup a request pays before its program starts.
    """
    shared = SharedSandbox(MontySandbox())
    module = store_module()
    session = Session("connection-1")
    timings: dict[str, list[float]] = {"acquire + release": [], "Access + acquire + release": [], "catalog": []}
    try:
        authority = McpAuthority(grants=GRANTS, sources=[module])
        principal = Agent("bench-agent")
        async with create_mcp_catalog(load=lambda principal: authority, sandbox=shared) as catalog:
            await catalog.definition(principal, await catalog.refresh(principal))  # loads the principal
            for _ in range(samples):
                started = time.perf_counter_ns()
                await catalog.definition(principal, await catalog.refresh(principal))
                timings["catalog"].append((time.perf_counter_ns() - started) / 1000)
        async with Runtime(modules=[module], sandbox=shared) as runtime:
            access = Access(grants=GRANTS, explicit=True)
            await (await runtime.acquire(session=session, access=access)).release()
            for _ in range(samples):
                started = time.perf_counter_ns()
                lease = await runtime.acquire(session=session, access=access)
                await lease.release()
                timings["acquire + release"].append((time.perf_counter_ns() - started) / 1000)
                started = time.perf_counter_ns()
                fresh = Access(grants=GRANTS, explicit=True)
                lease = await runtime.acquire(session=session, access=fresh)
                await lease.release()
                timings["Access + acquire + release"].append((time.perf_counter_ns() - started) / 1000)
    finally:
        await shared.aclose()
    return timings


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def throughput_table(levels: dict[int, dict[str, Load]], arguments: argparse.Namespace) -> bool:
    """Print req/s and latency per lane and concurrency; whether every target was met."""
    print(
        f"\nexecute throughput, one inner call per program: {arguments.rounds} rounds x {arguments.seconds:g} s "
        "per lane and concurrency (req/s: median of the rounds; latency over every request)"
    )
    print(f"{'concurrency':<12} {'lane':<16} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}   {'x FastMCP':>9}")
    met = True
    for concurrency, loads in levels.items():
        rates = {lane: statistics.median(loads[lane].rates) for lane in LANES}
        for lane in LANES:
            latencies = loads[lane].latencies
            ratio = rates[lane] / rates["fastmcp"]
            print(
                f"{concurrency:<12} {LABEL[lane]:<16} {rates[lane]:8.1f} {statistics.median(latencies):8.2f} "
                f"{percentile(latencies, 0.99):8.2f}   {ratio:9.2f}"
            )
        modern_ratio = rates["ours-2026"] / rates["fastmcp"]
        against_ours = rates["ours-2026"] / rates["ours"]
        ok = modern_ratio >= TARGET_RPS_RATIO and rates["ours"] / rates["fastmcp"] >= TARGET_RPS_RATIO
        ok_eras = against_ours >= 1
        met = met and ok and ok_eras
        print(
            f"{'':<12} 2026-07-28 / 2025-11-25: {against_ours:.2f} (target >= 1, {'ok' if ok_eras else 'MISSED'}); "
            f"both eras >= {TARGET_RPS_RATIO:g}x FastMCP: {'ok' if ok else 'MISSED'}"
        )
    return met


def hundred_table(samples: dict[str, list[float]]) -> bool:
    """Print the 100-call program's latency per lane; whether both our lanes are ahead of FastMCP."""
    runs = len(samples["ours"])
    print(f"\n100 sequential operation calls in one execute, {runs} runs per lane, interleaved (ms)")
    print(f"{'lane':<16} {'p50':>8} {'p99':>8} {'/ FastMCP':>10}")
    theirs = statistics.median(samples["fastmcp"])
    ahead = True
    for lane in LANES:
        ratio = statistics.median(samples[lane]) / theirs
        ahead = ahead and (lane == "fastmcp" or ratio < 1)
        p50, p99 = statistics.median(samples[lane]), percentile(samples[lane], 0.99)
        print(f"{LABEL[lane]:<16} {p50:8.2f} {p99:8.2f} {ratio:10.2f}")
    print(f"both our lanes ahead of FastMCP (below 1): {'ok' if ahead else 'MISSED'}")
    return ahead


def server_table(reports: dict[str, dict[str, Any]], executes: dict[str, int]) -> None:
    print("\nserver processes over the measured passes (RSS of the server process; its Monty workers are apart)")
    print(
        f"{'side':<10} {'executes':>9} {'RSS before':>11} {'RSS after':>10} {'RSS B/exec':>11} {'peak B/exec':>12} "
        f"{'gc objs/exec':>13}"
    )
    for side in SIDES:
        report, count = reports[side], max(1, executes[side])
        peak_note = "" if report["peak_reset"] else " (peak counted since start)"
        print(
            f"{SERVER_LABEL[side]:<10} {executes[side]:9,} "
            f"{report['rss_start'] / MIB:9.1f} M {report['rss_end'] / MIB:8.1f} M "
            f"{(report['rss_end'] - report['rss_start']) / count:11,.0f} "
            f"{max(0, report['peak'] - report['rss_start']) / count:12,.0f} "
            f"{(report['objects_end'] - report['objects_start']) / count:13,.2f}{peak_note}"
        )
    print(
        "\nCPU per execute (ms): the server process and its event-loop thread, each less its idle cost "
        "(measured for 1 s before the window),\nand its sandbox workers that exited during the window"
    )
    print(f"{'side':<10} {'process':>8} {'loop thread':>12} {'workers':>8} {'idle process CPU':>17}")
    for side in SIDES:
        report, count = reports[side], max(1, executes[side])
        process = (report["cpu_s"] - report["idle_cpu_s"]) * 1000 / count
        loop = (report["loop_cpu_s"] - report["idle_loop_cpu_s"]) * 1000 / count
        idle = report["idle_cpu_s"] / max(report["cpu_s"], 1e-9)
        print(
            f"{SERVER_LABEL[side]:<10} {process:8.2f} {loop:12.2f} {report['workers_cpu_s'] * 1000 / count:8.2f} "
            f"{idle:16.0%} of its CPU"
        )
    print("(workers: ours reuses a worker for 100 runs, so the ones still alive at the end are not counted)")
    print("\nevent loop of each server process: gaps between ticks of a 1 ms ticker task (ms)")
    print(
        f"{'side':<10} {'worst gap':>10} {'its loop CPU':>13} {'most loop CPU in a gap':>23} {'p99 gap':>8} "
        f"{'longest GC':>11} {'its CPU':>8} {'most GC CPU':>12} {'GCs':>6} {'GC CPU/exec':>12}"
    )
    for side in SIDES:
        report = reports[side]
        print(
            f"{SERVER_LABEL[side]:<10} {report['stall_worst_ms']:10.2f} {report['stall_worst_cpu_ms']:13.2f} "
            f"{report['stall_most_cpu_ms']:23.2f} {report['stall_p99_ms']:8.2f} "
            f"{report['gc_worst_ms']:8.2f} g{report['gc_generation']} {report['gc_worst_cpu_ms']:8.2f} "
            f"{report['gc_most_cpu_ms']:12.2f} "
            f"{report['gc_count']:6d} {report['gc_total_cpu_ms'] / max(1, executes[side]):12.3f}"
        )
    print(
        "(loop CPU: CPU time of the loop's thread within a gap. A gap far longer than its CPU time is mostly\n"
        " the process waiting for a core, or for the GIL, on a machine shared by client, servers and workers.\n"
        " A collection holds the GIL, so the longest GC pause (and its generation) is a stall of its own; its CPU\n"
        " time is the collector's own work. GC CPU/exec: the collector's CPU time in all, per execute.)"
    )
    collector_table(reports, executes)
    for side in SIDES:
        if reports[side]["stall_stacks"]:
            label = SERVER_LABEL[side]
            print(f"\nloop-thread stacks sampled during {label}'s stalls (samples every 2 ms, innermost first)")
            for samples, stack in reports[side]["stall_stacks"]:
                print(f"  {samples} samples:")
                for frame in stack:
                    print(f"    {frame}")


def collector_table(reports: dict[str, dict[str, Any]], executes: dict[str, int]) -> None:
    """Print each server's collections by generation, what the collector still walks, and the stall target."""
    print(
        "\ngarbage collections by generation in each server process: how many, the longest one's CPU time (ms)\n"
        "and the collector's CPU per execute (ms); objects it tracks after a full collection at the end, and frozen"
    )
    print(
        f"{'side':<10} {'gen 0':>22} {'gen 1':>22} {'gen 2':>22} {'tracked':>9} {'frozen':>9}\n"
        f"{'':<10}" + f" {'count':>6} {'longest':>7} {'/exec':>7}" * 3
    )
    for side in SIDES:
        report, count = reports[side], max(1, executes[side])
        cells = "".join(
            f" {generation['count']:6d} {generation['longest_cpu']:7.2f} {generation['total_cpu'] / count:7.3f}"
            for generation in report["gc_generations"]
        )
        print(f"{SERVER_LABEL[side]:<10}{cells} {report['objects_end']:9,} {report['frozen']:9,}")
    ours = reports["ours"]
    met = ours["stall_worst_ms"] < STALL_TARGET_MS
    print(
        f"ours: worst loop gap {ours['stall_worst_ms']:.1f} ms (target < {STALL_TARGET_MS:g} ms: "
        f"{'ok' if met else 'MISSED'}), of which {ours['stall_worst_cpu_ms']:.1f} ms on the loop's CPU "
        f"({ours['stall_worst_process_cpu_ms']:.1f} ms the whole process's); at most "
        f"{ours['stall_most_cpu_ms']:.1f} ms of the loop's own work in one gap; longest collection "
        f"{ours['gc_most_cpu_ms']:.1f} ms CPU"
    )


def lease_table(timings: dict[str, list[float]]) -> None:
    print("\nrequest setup for an already-loaded principal (in process, SharedSandbox, no run), microseconds")
    names = {
        "acquire + release": "runtime.acquire(session, access) + release",
        "Access + acquire + release": "the same with a fresh Access",
        "catalog": "catalog: refresh + principal's runtime + lease + release",
    }
    for name, samples in timings.items():
        print(f"{names[name]:<58} median {statistics.median(samples):7.1f}  p99 {percentile(samples, 0.99):7.1f}")


async def run(arguments: argparse.Namespace) -> None:
    timings = await lease_setup(arguments.lease_samples)
    started = await asyncio.gather(*(ServerProcess.start(side, arguments) for side in SIDES))
    servers = dict(zip(SIDES, started, strict=True))
    try:
        await asyncio.gather(*(warm_up(server, arguments.warmup) for server in servers.values()))
        await asyncio.gather(*(server.command("mark", "marked") for server in servers.values()))  # idle together
        for server in servers.values():
            server.executes = 0
        levels = {concurrency: await concurrency_level(servers, concurrency, arguments) for concurrency in CONCURRENCY}
        samples = await hundred_calls(servers, arguments.runs)
        reports = {side: await servers[side].command("report", "report") for side in SIDES}
    finally:
        await asyncio.gather(*(server.stop() for server in servers.values()))
    print(f"Mycelium MCP server vs FastMCP CodeMode, 20 tools, HTTP on 127.0.0.1, {os.cpu_count()} cores")
    throughput_met = throughput_table(levels, arguments)
    hundred_met = hundred_table(samples)
    server_table(reports, {side: servers[side].executes for side in SIDES})
    lease_table(timings)
    met = throughput_met and hundred_met
    goal = (
        f"both eras >= {TARGET_RPS_RATIO:g}x FastMCP's req/s at every concurrency, 2026-07-28 no slower than "
        "2025-11-25, ahead on 100 calls"
    )
    print(f"\ntargets ({goal}): {'met' if met else 'MISSED'}")
    if arguments.profile:
        print(f"profiles: {arguments.profile}/fastmcp.prof, {arguments.profile}/ours.prof (python -m pstats)")


def main() -> None:
    """Parse the command line; run the bench, or (``--serve``) one server child."""
    parser = argparse.ArgumentParser(
        description=sys.modules["__main__"].__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="length of one throughput round per side")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds per concurrency, sides alternating")
    parser.add_argument("--runs", type=int, default=40, help="runs of the 100-call program per side")
    parser.add_argument("--warmup", type=int, default=1_000, help="untimed executes per side before measuring")
    parser.add_argument("--lease-samples", type=int, default=5_000)
    parser.add_argument("--max-connections", type=int, default=32, help="our server's connection bound")
    parser.add_argument(
        "--sandbox-capacity", type=int, help="our runs in flight at once (default: the cores, at least 2)"
    )
    parser.add_argument(
        "--fastmcp-auth", choices=("token", "none"), default="token", help="FastMCP checks a bearer token, or none"
    )
    parser.add_argument("--profile", metavar="DIR", help="run each server under cProfile, write DIR/<side>.prof")
    parser.add_argument(
        "--stall-stacks",
        type=float,
        default=0.0,
        metavar="MS",
        help="diagnostic: sample each server's loop-thread stack whenever its loop has not ticked for MS",
    )
    parser.add_argument(
        "--sandbox",
        choices=("monty", "isolated"),
        default="monty",
        help="ours runs Monty in process, or in child processes of its own as mycelium serve does",
    )
    parser.add_argument(
        "--no-gc-tuning",
        action="store_true",
        help="ours leaves the collector alone (create_mcp(freeze_loaded=False)), to measure what the tuning does",
    )
    parser.add_argument("--serve", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--profile-file", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.profile:
        Path(arguments.profile).mkdir(parents=True, exist_ok=True)
    if arguments.serve:
        asyncio.run(serve(arguments))
    else:
        asyncio.run(run(arguments))
