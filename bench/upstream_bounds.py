"""One huge message from an upstream MCP server: what refusing it costs the host, against the SDK's own client.

The server is ``tests/mcp/upstream/raw_server.py`` (written by hand, so it sends exactly the
message asked for): its ``flood`` tool answers with one message of ``--sizes`` MB, over stdio
(one line, its id first as the Python SDK writes it, or last as the TypeScript SDK does) or
over Streamable HTTP (one JSON body). Each case runs in a fresh child process of this script,
with a fresh server, so its memory high-water mark is its own. The sides, in the same run:

- **ours**: the SDK's ``Client`` over the transport ``mcp_source`` gives it: over stdio
  Mycelium's own (``_stdio.stdio_transport``), which drops a line past ``MAX_MESSAGE_BYTES``
  as it arrives and fails the call; over HTTP the SDK's, with the client ``_bodies.bound_bodies``
  makes, which refuses a body past the same bound as it is read;
- **sdk**: the same ``Client`` over the SDK's own stdio client, which keeps the line whole and
  joins every chunk to it (its time grows with the square of the size, so ``--sdk-sizes``
  stops at 30 MB), or over its own HTTP client, which reads the body whole. Neither refuses.

Per case, after a warm-up call: **ended**, the wall time until the flood call ended (refused or
answered); **ready**, until an ``echo`` on the same session answered after it (a line refused
at its start is still read to its end and dropped before that answer can be read); the host
process's **CPU** over both; the growth of its resident memory's high-water mark (**RSS**); and
the longest **gap** in its event loop (a ticker task that asks to wake every millisecond). The
server's own time to write the message is in the wall times, not in the CPU. Each case runs
``--runs`` times, the cases of a round in turn; printed are the medians, then the ratios of
the SDK's client to ours where both ran. Target (issue 24, item 11): refusing linear in the
message's size, host memory bounded, the session working after it.

    .venv/bin/python bench/upstream_bounds.py                         # about three minutes
    .venv/bin/python bench/upstream_bounds.py --runs 1 --sizes 10,100 --sdk-sizes 10
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

ROOT = Path(__file__).resolve().parent.parent
SERVER = str(ROOT / "tests" / "mcp" / "upstream" / "raw_server.py")
MB = 1_000_000
TICK_S = 0.001
FIGURES = ("ended_s", "ready_s", "cpu_s", "rss_mb", "gap_ms")


def rss_bytes() -> int:
    """This process's resident memory now, from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


@asynccontextmanager
async def http_server() -> AsyncIterator[str]:
    """``raw_server.py http`` in a child process of its own; yields its endpoint URL."""
    async with await anyio.open_process([sys.executable, SERVER, "http"], stderr=None) as server:
        assert server.stdout is not None
        said = await BufferedByteReceiveStream(server.stdout).receive_until(b"\n", 100)
        try:
            yield f"http://127.0.0.1:{int(said.split()[1])}/mcp"
        finally:
            server.terminate()


@asynccontextmanager
async def connected(transport: str, side: str) -> AsyncIterator[Any]:
    """An initialized SDK client to the raw server over ``transport``, through ``side``'s reader."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    from mycelium.mcp._sdk import http_client
    from mycelium.mcp._upstream._bodies import bound_bodies
    from mycelium.mcp._upstream._oversize import MAX_MESSAGE_BYTES
    from mycelium.mcp._upstream._stdio import stdio_transport

    if transport == "stdio":
        server: Any = (
            stdio_transport(sys.executable, [SERVER], None, None, "bench")
            if side == "ours"
            else StdioServerParameters(command=sys.executable, args=[SERVER])
        )
        async with Client(server, mode="legacy") as client:
            yield client
        return
    async with http_server() as url:
        if side == "ours":
            async with bound_bodies(http_client({}, None)) as http:
                async with Client(
                    streamable_http_client(url, http_client=http, max_sse_event_size=MAX_MESSAGE_BYTES), mode="legacy"
                ) as client:
                    yield client
        else:
            async with Client(streamable_http_client(url), mode="legacy") as client:
                yield client


async def case(transport: str, side: str, size: int, shape: str) -> dict[str, object]:
    """One flood call on a fresh session, then one echo: the figures of both."""
    gap = 0.0

    async def tick() -> None:
        nonlocal gap
        while True:
            asked = time.perf_counter()
            await anyio.sleep(TICK_S)
            gap = max(gap, time.perf_counter() - asked - TICK_S)

    async with connected(transport, side) as client, anyio.create_task_group() as tasks:
        await client.call_tool("echo", {"text": "warm"})
        rss_before = rss_bytes()
        tasks.start_soon(tick)
        start, cpu = time.perf_counter(), time.process_time()
        try:
            await client.call_tool("flood", {"bytes": size, "shape": shape})
            outcome = "accepted whole"
        except Exception:  # the refusal is the outcome measured
            outcome = "refused"
        ended = time.perf_counter() - start
        said = await client.call_tool("echo", {"text": "next"})
        ready, cpu = time.perf_counter() - start, time.process_time() - cpu
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        tasks.cancel_scope.cancel()
    assert said.content[0].text == "next"  # type: ignore[union-attr]
    rss_mb = max(0, peak - rss_before) / MB
    return {
        "ended_s": ended,
        "ready_s": ready,
        "cpu_s": cpu,
        "rss_mb": rss_mb,
        "gap_ms": gap * 1000,
        "outcome": outcome,
    }


def run_case(transport: str, side: str, size: int, shape: str) -> dict[str, Any]:
    """:func:`case` in a child process of its own, so the memory high-water mark is the case's."""
    done = subprocess.run(
        [sys.executable, __file__, "--case", transport, side, str(size), shape],
        capture_output=True,
        text=True,
        check=True,
        timeout=3_600,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def plan(args: argparse.Namespace) -> list[tuple[str, str, str, int]]:
    """Every case: (transport, side, shape, MB)."""
    sizes = [int(mb) for mb in args.sizes.split(",") if mb]
    cases = [("stdio", "ours", shape, mb) for mb in sizes for shape in ("python", "typescript")]
    cases += [("stdio", "sdk", "python", int(mb)) for mb in args.sdk_sizes.split(",") if mb]
    cases += [("http", side, "python", mb) for mb in sizes for side in ("ours", "sdk")]
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of each case (default 3); medians are printed")
    parser.add_argument("--sizes", default="10,30,100", help="message sizes in MB (default 10,30,100)")
    parser.add_argument("--sdk-sizes", default="10,30", help="line sizes for the SDK's stdio client (default 10,30)")
    parser.add_argument("--case", nargs=4, metavar=("TRANSPORT", "SIDE", "BYTES", "SHAPE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        transport, side, size, shape = args.case
        print(json.dumps(anyio.run(case, transport, side, int(size), shape)))
        return
    cases = plan(args)
    samples: dict[tuple[str, str, str, int], list[dict[str, Any]]] = {key: [] for key in cases}
    for _ in range(args.runs):
        for key in cases:
            transport, side, shape, mb = key
            samples[key].append(run_case(transport, side, mb * MB, shape))
    medians = {
        key: {name: statistics.median(s[name] for s in runs) for name in FIGURES} for key, runs in samples.items()
    }
    print(f"medians of {args.runs} run(s)")
    print("transport side  id at       MB   ended s   ready s     CPU s   RSS MB   gap ms   outcome")
    for key in cases:
        transport, side, shape, mb = key
        m = medians[key]
        at = {"python": "start", "typescript": "end"}[shape] if transport == "stdio" else "(body)"
        print(
            f"{transport:9} {side:5} {at:8} {mb:5} {m['ended_s']:9.3f} {m['ready_s']:9.3f} {m['cpu_s']:9.3f} "
            f"{m['rss_mb']:8.1f} {m['gap_ms']:8.1f}   {samples[key][-1]['outcome']}"
        )
    print("\nthe SDK's client against ours, same size and transport (ours: id at the start):")
    print("transport    MB   ready time   CPU time   RSS growth   longest gap")
    for transport, side, shape, mb in cases:
        if side != "sdk" or (transport, "ours", "python", mb) not in medians:
            continue
        sdk, ours = medians[(transport, "sdk", shape, mb)], medians[(transport, "ours", "python", mb)]
        ratios = [sdk[name] / max(ours[name], 1e-9) for name in ("ready_s", "cpu_s", "rss_mb", "gap_ms")]
        print(f"{transport:9} {mb:5} " + " ".join(f"{ratio:11.1f}x" for ratio in ratios))


if __name__ == "__main__":
    main()
