"""An agent task needing 50 calls of an upstream MCP server: direct tools/call, Mycelium, FastMCP CodeMode.

The upstream is an MCP server written here with the official SDK (``MCPServer``): a shop back
office of 100 tools (10 resources x 10 verbs, pydantic-typed, with output schemas and
read-only hints), served over stdio (a child process per client, the default) or Streamable
HTTP on 127.0.0.1 (one child process that every client shares). The task: fetch orders 1..50
and answer with their count, their total and the ids of the open ones. It is done, in the
same run, round by round with the order of the sides rotating:

- **(a)** as 50 ``tools/call`` requests from the SDK client, one after another (an agent loop
  makes one call per model turn); beside it, for reference, **(a')** the 50 requests at once
  (a model emitting 50 parallel tool calls in one turn);
- **(b)** as one Mycelium ``execute`` (a lease per execute, ``MontySandbox``) whose program
  makes the 50 calls through ``mcp_source``: one after another, ``asyncio.gather`` in batches
  of 10, and one ``asyncio.gather`` of all 50;
- **(c)** the first and last of those programs through FastMCP's CodeMode in front of a
  FastMCP proxy of the same upstream (its ``call_tool``; the proxy holds one connected
  upstream session, as ``mcp_source`` does, and FastMCP's in-memory client drives it, as
  ours runs in-process). CodeMode looks each ``call_tool`` up in the catalog, and through a
  proxy the catalog is a ``tools/list`` of the upstream: 50 listings of 100 tools per task.
  Its runs take seconds, so (c) is measured every ``--fastmcp-every``th round.

``--backend-ms`` (default ``0,5``) is the upstream tool's own work per call (an
``asyncio.sleep`` before ``get_order`` answers, standing for the database or API behind a
real server): at 0 the figures are the protocol's cost alone, bounded by the upstream's own
CPU per call, which every side pays; with work behind the tool, calling concurrently hides it.

Printed, per ``--backend-ms`` value: wall-time median and p99 per side (ms) and the ratios
against (a); then the bytes a model is sent for the task (the tool definitions as a model is
shown them: name, description and input schema; the discovery it reads before it can write
the call: a search for 5 hits and the signature of ``get_order``; the results it reads), and
the model-facing bytes of our ``execute`` definition against the upstream's full
``tools/list``. The programs the model writes are not counted. Targets (issue 13): (b) at
least 3x faster than (a) and ahead of (c); the tool list at least 10x smaller. The bench
reports; it exits non-zero only when a side answers the task wrongly.

    .venv/bin/python bench/upstream.py                      # about 3 minutes on the 2-core build machine
    .venv/bin/python bench/upstream.py --quick              # about a minute
    .venv/bin/python bench/upstream.py --transport http     # the upstream over Streamable HTTP

FastMCP is in the ``bench`` extra: ``.venv/bin/pip install -e ".[dev,bench]"``.
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations, which name local values.
import argparse
import asyncio
import json
import logging
import os
import random
import socket
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field
from stats import percentile

SCRIPT = Path(__file__).resolve()
SOURCE_ID = "shop"
ORDERS = range(1, 51)
BATCH = 10
TARGET_SPEEDUP = 3.0
TARGET_LIST_RATIO = 10.0
COUNTS = {
    "rounds": ("measured rounds, every side once per round", 40, 8),
    "warmup": ("rounds to warm up, not counted", 4, 1),
}

# --------------------------------------------------------------------------------------
# The upstream: a shop back office of 100 tools, written with the official SDK
# --------------------------------------------------------------------------------------

RESOURCES = (
    "order",
    "customer",
    "product",
    "invoice",
    "shipment",
    "ticket",
    "supplier",
    "warehouse",
    "coupon",
    "review",
)
Status = Literal["open", "paid", "shipped", "cancelled"]
STATUSES: tuple[Status, ...] = get_args(Status)


class Line(BaseModel):
    sku: str = Field(description="Stock keeping unit of the product")
    quantity: int = Field(description="Units ordered")
    unit_price: float = Field(description="Price of one unit, in the order's currency")


class Order(BaseModel):
    id: int
    customer: str = Field(description="Id of the customer who placed the order")
    status: Status
    lines: list[Line]
    total: float = Field(description="Sum of the lines, in the order's currency")
    currency: str = Field(description="ISO 4217 code")
    placed_at: str = Field(description="When the order was placed (ISO 8601)")


class Record(BaseModel):
    id: int
    kind: str = Field(description="Which resource this record is")
    name: str
    status: str
    fields: dict[str, str] = Field(description="The resource's own fields, by name")
    updated_at: str = Field(description="Last change (ISO 8601)")


class Page(BaseModel):
    items: list[Record]
    next_cursor: str | None = Field(description="Pass as `cursor` to get the next page; null on the last page")


class Count(BaseModel):
    count: int


class Deleted(BaseModel):
    id: int
    deleted: bool


class Export(BaseModel):
    format: str
    rows: int
    data: str = Field(description="The exported rows, in the requested format")


def order(order_id: int) -> Order:
    """Order ``order_id``, the same on every call and in every process."""
    draw = random.Random(order_id)
    lines = [
        Line(
            sku=f"SKU-{draw.randrange(10_000):04d}",
            quantity=draw.randrange(1, 5),
            unit_price=draw.randrange(100, 10_000) / 100,
        )
        for _ in range(draw.randrange(1, 4))
    ]
    return Order(
        id=order_id,
        customer=f"C-{draw.randrange(1_000):03d}",
        status=draw.choice(STATUSES),
        lines=lines,
        total=round(sum(line.quantity * line.unit_price for line in lines), 2),
        currency="EUR",
        placed_at=f"2026-0{draw.randrange(1, 10)}-1{draw.randrange(10)}T09:30:00Z",
    )


def record(kind: str, record_id: int, **fields: str) -> Record:
    return Record(
        id=record_id,
        kind=kind,
        name=f"{kind} {record_id}",
        status="active",
        fields=fields,
        updated_at="2026-05-01T12:00:00Z",
    )


Id = Annotated[int, Field(description="The record's id", ge=1)]
Limit = Annotated[int, Field(description="At most this many items", ge=1, le=100)]
Changes = Annotated[dict[str, str], Field(description="Field names and their new values")]


def shop_tools(kind: str, backend_s: float) -> dict[str, tuple[Callable[..., Awaitable[BaseModel]], str, bool]]:
    """The ten tools of one resource: name -> (function, description, read-only).

    ``get_order`` (the one the task calls) waits ``backend_s`` first: the database or API
    behind a real server's tool.
    """
    plural = f"{kind}s"

    async def get(id: Id) -> Record:
        return record(kind, id)

    async def list_(
        status: Annotated[str | None, Field(description=f"Only {plural} with this status")] = None,
        limit: Limit = 20,
        cursor: Annotated[str | None, Field(description="From a previous page's next_cursor")] = None,
    ) -> Page:
        return Page(items=[record(kind, index) for index in range(1, min(limit, 3) + 1)], next_cursor=None)

    async def search(query: Annotated[str, Field(description="Words to look for")], limit: Limit = 10) -> Page:
        return Page(items=[record(kind, 1, matched=query)], next_cursor=None)

    async def create(fields: Changes) -> Record:
        return record(kind, 1_000, **fields)

    async def update(id: Id, fields: Changes) -> Record:
        return record(kind, id, **fields)

    async def delete(id: Id) -> Deleted:
        return Deleted(id=id, deleted=True)

    async def count(
        status: Annotated[str | None, Field(description=f"Only {plural} with this status")] = None,
    ) -> Count:
        return Count(count=1_000)

    async def archive(id: Id, reason: Annotated[str, Field(description="Why, for the audit log")] = "") -> Record:
        return record(kind, id, archived="true", reason=reason)

    async def restore(id: Id) -> Record:
        return record(kind, id, archived="false")

    async def export(
        format: Annotated[Literal["csv", "json"], Field(description="Output format")] = "json",
        since: Annotated[str | None, Field(description=f"Only {plural} changed since (ISO 8601)")] = None,
    ) -> Export:
        return Export(format=format, rows=0, data="")

    async def get_order(
        order_id: Annotated[int, Field(description="The order's id", ge=1)],
    ) -> Order:
        if backend_s:
            await asyncio.sleep(backend_s)
        return order(order_id)

    tools: dict[str, tuple[Callable[..., Awaitable[BaseModel]], str, bool]] = {
        f"get_{kind}": (
            get_order if kind == "order" else get,
            f"Get one {kind} by its id, with its status, its own fields and when it last changed.",
            True,
        ),
        f"list_{plural}": (list_, f"List {plural}, newest first, a page at a time; filter by status.", True),
        f"search_{plural}": (search, f"Search {plural} by words in their name and fields.", True),
        f"create_{kind}": (create, f"Create a {kind} from its fields; returns the new {kind} with its id.", False),
        f"update_{kind}": (update, f"Change some fields of a {kind}; fields not named keep their values.", False),
        f"delete_{kind}": (delete, f"Delete a {kind} for good. Archive it instead to keep its history.", False),
        f"count_{plural}": (count, f"Count {plural}, optionally only those with a status.", True),
        f"archive_{kind}": (archive, f"Archive a {kind}: hidden from lists, kept for the audit log.", False),
        f"restore_{kind}": (restore, f"Bring an archived {kind} back into lists.", False),
        f"export_{plural}": (export, f"Export {plural} as CSV or JSON, optionally only recent changes.", True),
    }
    if kind == "order":
        tools["get_order"] = (
            get_order,
            "Get one order by its id: customer, status, lines (sku, quantity, unit price), total and currency.",
            True,
        )
    return tools


def upstream_server(backend_s: float) -> Any:
    """The 100-tool SDK server."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("shop-back-office")
    for kind in RESOURCES:
        for name, (function, description, read_only) in shop_tools(kind, backend_s).items():
            server.add_tool(
                function, name=name, description=description, annotations=ToolAnnotations(read_only_hint=read_only)
            )
    return server


def serve_upstream(transport: str, backend_ms: float) -> None:
    """Run the upstream in this process: on stdio, or on an ephemeral 127.0.0.1 port it prints."""
    logging.disable(logging.INFO)  # the SDK's per-request INFO lines would only cost time
    server = upstream_server(backend_ms / 1000)
    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    print(json.dumps({"port": listener.getsockname()[1]}), flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", access_log=False)
    asyncio.run(uvicorn.Server(config).serve(sockets=[listener]))


def upstream_command(backend_ms: float) -> list[str]:
    """The command line of a stdio upstream."""
    return [sys.executable, str(SCRIPT), "--serve-upstream", "stdio", f"--backend-ms={backend_ms}"]


@asynccontextmanager
async def upstream_url(backend_ms: float) -> AsyncIterator[str]:
    """The HTTP upstream in a child process, for as long as the block runs."""
    command = upstream_command(backend_ms)
    command[3] = "http"
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        if not line:
            raise SystemExit("the HTTP upstream stopped before it printed its port")
        yield f"http://127.0.0.1:{json.loads(line)['port']}/mcp"
    finally:
        process.terminate()
        await process.wait()


# --------------------------------------------------------------------------------------
# The task, as each side's programs
# --------------------------------------------------------------------------------------


def summary(orders: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer: the orders' count, total and open ones (the same arithmetic as the programs)."""
    return {
        "orders": len(orders),
        "total": round(sum(found["total"] for found in orders), 2),
        "open": [found["id"] for found in orders if found["status"] == "open"],
    }


EXPECTED = summary([order(order_id).model_dump() for order_id in ORDERS])
ANSWER = """return {
    "orders": len(orders),
    "total": round(sum(found["total"] for found in orders), 2),
    "open": [found["id"] for found in orders if found["status"] == "open"],
}"""
FETCH = {
    "sequential": "orders = []\nfor i in range({first}, {end}):\n    orders.append(await {call})\n",
    f"gather by {BATCH}": (
        "orders = []\nfor start in range({first}, {end}, " + str(BATCH) + "):\n"
        "    orders.extend(await asyncio.gather(*[{call} for i in range(start, start + " + str(BATCH) + ")]))\n"
    ),
    "gather 50": "orders = await asyncio.gather(*[{call} for i in range({first}, {end})])\n",
}
FASTMCP_SHAPES = ("sequential", "gather 50")  # its runs take seconds: the two ends only
SEARCH = "get an order by id"
SEARCH_LIMIT = 5  # the same number of hits from either search
DESCRIBE = 'await forage.describe("shop.get_order")'
DIRECT = "(a) 50 tools/call, one by one"
CALLS = {"ours": "shop.get_order(order_id=i)", "fastmcp": "call_tool('get_order', {'order_id': i})"}


def program(side: str, shape: str) -> str:
    return "import asyncio\n" + FETCH[shape].format(first=ORDERS[0], end=ORDERS[-1] + 1, call=CALLS[side]) + ANSWER


def definition_bytes(name: str, description: str | None, input_schema: dict[str, Any]) -> int:
    """A tool as a model is shown it: its name, description and input schema, as compact JSON."""
    shown = {"name": name, "description": description or "", "input_schema": input_schema}
    return len(json.dumps(shown, separators=(",", ":")).encode())


def text_bytes(content: Any) -> int:
    """The text a model reads of a tools/call result."""
    return sum(len(item.text.encode()) for item in content if item.type == "text")


class WrongAnswer(Exception):
    """A side answered the task wrongly: the bench's figures would mean nothing."""


def check(side: str, value: object) -> None:
    if value != EXPECTED:
        raise WrongAnswer(f"{side} answered {str(value)[:300]!r}, expected {EXPECTED!r}")


# --------------------------------------------------------------------------------------
# The sides: each opens its connection before timing and runs the task once per call
# --------------------------------------------------------------------------------------


@dataclass
class Side:
    """One way of doing the task: ``run()`` does it once and returns the model-facing result bytes.

    Measured in every ``every``-th round only (FastMCP's runs take seconds).
    """

    label: str
    run: Callable[[], Awaitable[int]]
    every: int = 1


@dataclass
class ModelBytes:
    """What a model is sent for the task, in bytes."""

    definitions: int
    discovery: int
    results: int

    @property
    def total(self) -> int:
        return self.definitions + self.discovery + self.results


async def direct_sides(stack: AsyncExitStack, target: Any) -> tuple[list[Side], ModelBytes]:
    """(a) and (a'): the SDK client calls the upstream itself."""
    from mcp import Client

    client = await stack.enter_async_context(Client(target, mode="legacy", cache=None))
    listed = await client.list_tools()
    if len(listed.tools) != 100:
        raise WrongAnswer(f"the upstream lists {len(listed.tools)} tools, expected 100")

    async def answer(results: list[Any]) -> int:
        if any(result.is_error for result in results):
            raise WrongAnswer(f"a direct call failed: {results}")
        check("direct", summary([result.structured_content for result in results]))
        return sum(text_bytes(result.content) for result in results)

    async def one_by_one() -> int:
        return await answer([await client.call_tool("get_order", {"order_id": i}) for i in ORDERS])

    async def at_once() -> int:
        calls = [client.call_tool("get_order", {"order_id": i}) for i in ORDERS]
        return await answer(list(await asyncio.gather(*calls)))

    definitions = sum(definition_bytes(tool.name, tool.description, tool.input_schema) for tool in listed.tools)
    return (
        [Side(DIRECT, one_by_one), Side("(a') 50 tools/call at once", at_once)],
        ModelBytes(definitions=definitions, discovery=0, results=await one_by_one()),
    )


async def our_sides(stack: AsyncExitStack, source: Any) -> tuple[list[Side], ModelBytes]:
    """(b): one execute per task, a lease each, in a Mycelium runtime whose source is the upstream."""
    from mycelium import Runtime
    from mycelium.sandbox.monty import MontySandbox

    runtime = await stack.enter_async_context(Runtime(sources=[source], sandbox=MontySandbox()))

    def side(shape: str) -> Side:
        code = program("ours", shape)

        async def run() -> int:
            async with runtime.lease() as lease:
                result = await lease.execute_tool.run(code)
            if result.is_error:
                raise WrongAnswer(f"ours ({shape}) failed: {result.text[:500]}")
            check(f"ours ({shape})", result.value)
            return len(result.text.encode())

        return Side(f"(b) Mycelium execute, {shape}", run)

    sides = [side(shape) for shape in FETCH]
    async with runtime.lease() as lease:
        shown = lease.execute_tool.definition
        # What a model reads before it can write the call: a search, then the signature.
        described = await lease.execute_tool.run(
            f"return [await forage.search({SEARCH!r}, limit={SEARCH_LIMIT}), {DESCRIBE}]"
        )
    if described.is_error:
        raise WrongAnswer(f"ours could not describe get_order: {described.text[:500]}")
    return sides, ModelBytes(
        definitions=definition_bytes(shown.name, shown.description, shown.input_schema),
        discovery=len(described.text.encode()),
        results=await sides[0].run(),
    )


async def fastmcp_sides(stack: AsyncExitStack, target: Any, every: int) -> tuple[list[Side], ModelBytes]:
    """(c): FastMCP's CodeMode over a FastMCP proxy holding one connected session to the upstream."""
    from fastmcp import Client as FastClient
    from fastmcp.client.transports import StdioTransport
    from fastmcp.experimental.transforms.code_mode import CodeMode, MontySandboxProvider
    from fastmcp.server import create_proxy

    if isinstance(target, str):
        backend = FastClient(target)
    else:
        backend = FastClient(StdioTransport(command=target.command, args=list(target.args)))
    await stack.enter_async_context(backend)
    logging.getLogger("fastmcp").setLevel(logging.WARNING)  # its proxy's advice on connected clients, at INFO
    proxy = create_proxy(backend, name="shop-proxy")
    proxy.add_transform(CodeMode(sandbox_provider=MontySandboxProvider()))
    client = await stack.enter_async_context(FastClient(proxy))

    async def call(name: str, arguments: dict[str, Any]) -> str:
        result = await client.call_tool(name, arguments, raise_on_error=False)
        text = "".join(item.text for item in result.content if item.type == "text")
        if result.is_error:
            raise WrongAnswer(f"FastMCP {name} failed: {text[:500]}")
        return text

    def side(shape: str) -> Side:
        code = program("fastmcp", shape)

        async def run() -> int:
            text = await call("execute", {"code": code})
            check(f"FastMCP ({shape})", json.loads(text))
            return len(text.encode())

        return Side(f"(c) FastMCP CodeMode, {shape}", run, every)

    sides = [side(shape) for shape in FASTMCP_SHAPES]
    listed = await client.list_tools()
    searched = await call("search", {"query": SEARCH, "limit": SEARCH_LIMIT})
    schema = await call("get_schema", {"tools": ["get_order"]})
    return sides, ModelBytes(
        definitions=sum(definition_bytes(tool.name, tool.description, tool.input_schema) for tool in listed),
        discovery=len(searched.encode()) + len(schema.encode()),
        results=await sides[0].run(),
    )


@asynccontextmanager
async def every_side(
    transport: str, backend_ms: float, fastmcp_every: int
) -> AsyncIterator[tuple[list[Side], dict[str, ModelBytes]]]:
    """Every side over one upstream setting, connected; closed when the block ends."""
    from mcp.client.stdio import StdioServerParameters

    from mycelium.mcp import mcp_source

    async with AsyncExitStack() as stack:
        if transport == "http":
            target: Any = await stack.enter_async_context(upstream_url(backend_ms))
            source = mcp_source(SOURCE_ID, url=target)
        else:
            command, *args = upstream_command(backend_ms)
            target = StdioServerParameters(command=command, args=args)
            source = mcp_source(SOURCE_ID, command=command, args=args)
        direct, direct_bytes = await direct_sides(stack, target)
        ours, our_bytes = await our_sides(stack, source)
        theirs, their_bytes = await fastmcp_sides(stack, target, fastmcp_every)
        yield (
            direct + ours + theirs,
            {"(a) direct": direct_bytes, "(b) Mycelium": our_bytes, "(c) FastMCP": their_bytes},
        )


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------


@dataclass
class Samples:
    """One side's runs: wall time and this process's CPU time (ms) of each."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


async def measure(sides: list[Side], rounds: int, warmup: int) -> dict[str, Samples]:
    """Each side's runs; the sides due in a round run in an order that rotates."""
    samples = {side.label: Samples() for side in sides}
    for index in range(warmup + rounds):
        due = [side for side in sides if index % side.every == 0]
        shift = index % len(due)
        for side in due[shift:] + due[:shift]:
            started, cpu = time.perf_counter(), time.process_time()
            await side.run()
            if index >= warmup:
                samples[side.label].wall.append((time.perf_counter() - started) * 1000)
                samples[side.label].cpu.append((time.process_time() - cpu) * 1000)
    return samples


def time_table(samples: dict[str, Samples]) -> None:
    """Print the wall times, the ratios against (a) and the best (b) against the best (c)."""
    direct = statistics.median(samples[DIRECT].wall)
    print(f"{'wall time of the task (ms)':<42} {'runs':>5} {'p50':>8} {'p99':>8} {'(a)/this':>9} {'CPU p50':>8}")
    for label, runs in samples.items():
        median = statistics.median(runs.wall)
        print(
            f"{label:<42} {len(runs.wall):5} {median:8.1f} {percentile(runs.wall, 0.99):8.1f} "
            f"{direct / median:8.2f}x {statistics.median(runs.cpu):8.1f}"
        )
    ours = {label: statistics.median(runs.wall) for label, runs in samples.items() if label.startswith("(b)")}
    theirs = min(statistics.median(runs.wall) for label, runs in samples.items() if label.startswith("(c)"))
    best, best_label = min((median, label) for label, median in ours.items())
    print(
        f"best (b), {best_label.removeprefix('(b) Mycelium execute, ')}: {direct / best:.2f}x faster than (a) "
        f"(target {TARGET_SPEEDUP:.0f}x), {theirs / best:.2f}x faster than the best (c)"
    )


def bytes_table(model_bytes: dict[str, ModelBytes]) -> None:
    print(f"\n{'bytes sent to the model for the task':<42} {'tools':>8} {'discover':>9} {'results':>8} {'total':>8}")
    for label, sent in model_bytes.items():
        print(f"{label:<42} {sent.definitions:8,} {sent.discovery:9,} {sent.results:8,} {sent.total:8,}")
    upstream, ours = model_bytes["(a) direct"].definitions, model_bytes["(b) Mycelium"].definitions
    print(
        f"tool list a model is shown: the upstream's 100 tools {upstream:,} B, our execute {ours:,} B: "
        f"{upstream / ours:.1f}x smaller (target {TARGET_LIST_RATIO:.0f}x)"
    )


async def main(arguments: argparse.Namespace) -> None:
    started = time.perf_counter()
    where = "Streamable HTTP on 127.0.0.1" if arguments.transport == "http" else "stdio"
    print(
        f"50 upstream calls: the SDK client, Mycelium, FastMCP {version('fastmcp')} CodeMode over a FastMCP proxy; "
        f"the upstream (SDK MCPServer, {where}) has 100 tools; {arguments.rounds} rounds after {arguments.warmup} "
        f"to warm up, (c) in one round of {arguments.fastmcp_every}; {os.cpu_count()} cores"
    )
    model_bytes: dict[str, ModelBytes] = {}
    for backend_ms in arguments.backend_ms:
        async with every_side(arguments.transport, backend_ms, arguments.fastmcp_every) as (sides, sent):
            samples = await measure(sides, arguments.rounds, arguments.warmup)
        model_bytes = sent  # the same whatever the upstream's own work
        print(f"\nget_order's own work in the upstream: {backend_ms:g} ms")
        time_table(samples)
    bytes_table(model_bytes)
    print(f"total {time.perf_counter() - started:.0f} s")


def version(distribution: str) -> str:
    from importlib.metadata import version as installed

    return installed(distribution)


def milliseconds(text: str) -> list[float]:
    return [float(part) for part in text.split(",")]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a short run: fewer rounds")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="how the upstream is reached")
    parser.add_argument(
        "--backend-ms",
        type=milliseconds,
        default=[0.0, 5.0],
        help="get_order's own work in the upstream (ms), a comma-separated list measured in turn (default 0,5)",
    )
    parser.add_argument("--fastmcp-every", type=int, default=4, help="measure (c) every Nth round (default 4)")
    parser.add_argument("--serve-upstream", choices=("stdio", "http"), help=argparse.SUPPRESS)
    for name, (meaning, full, quick) in COUNTS.items():
        parser.add_argument(f"--{name}", type=int, help=f"{meaning} (default {full}; {quick} with --quick)")
    arguments = parser.parse_args()
    if arguments.serve_upstream:
        serve_upstream(arguments.serve_upstream, arguments.backend_ms[0])
        sys.exit(0)
    for name, (_, full, quick) in COUNTS.items():
        if getattr(arguments, name) is None:
            setattr(arguments, name, quick if arguments.quick else full)
    try:
        asyncio.run(main(arguments))
    except WrongAnswer as wrong:
        sys.exit(f"wrong answer: {wrong}")
