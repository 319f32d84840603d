"""Does our MCP server's memory stay flat over many requests? Its RSS, read from ``/proc``, as requests add up.

The server is ``bench/mcp.py``'s own (the same 20 tools, ``create_mcp(freeze_loaded=True)``
as ``mycelium serve`` runs it, in a subprocess on loopback). After ``--warmup`` untimed
executes, ``--concurrency`` clients send one-call executes, half of the rounds over
2025-11-25 connections and half over 2026-07-28 requests (``--era`` for one only), and
the server's RSS is printed every ``--every`` requests, up to ``--requests``.
``--no-gc-tuning`` serves without the freezes, to compare.

    .venv/bin/python bench/mcp_rss.py [--requests N] [--every N] [--concurrency N] [--no-gc-tuning]
                                      [--era both|2025-11-25|2026-07-28] [--sandbox monty|isolated]

Target (issue 24, item 3): what the freezes keep for the process's life is bounded, so RSS
after the first few thousand requests stays flat (growth per request well under 100 B).
"""

from __future__ import annotations

import argparse
import asyncio
from contextlib import AsyncExitStack

from mcp_bench import (
    EXPECTED_ONE,
    MIB,
    ONE_CALL,
    Load,
    ServerProcess,
    drive,
    execute,
    lane_clients,
    proc_status,
    warm_up,
)

LANES = {"both": ("ours", "ours-2026"), "2025-11-25": ("ours",), "2026-07-28": ("ours-2026",)}
SECONDS_PER_ROUND = 2.0


async def run(arguments: argparse.Namespace) -> None:
    server_arguments = argparse.Namespace(
        max_connections=32,
        sandbox_capacity=None,
        fastmcp_auth="token",
        stall_stacks=0.0,
        no_gc_tuning=arguments.no_gc_tuning,
        sandbox=arguments.sandbox,
        profile=None,
    )
    server = await ServerProcess.start("ours", server_arguments)
    try:
        await warm_up(server, arguments.warmup)
        print(f"ours, {'without' if arguments.no_gc_tuning else 'with'} gc tuning; RSS of the server process")
        print(f"{'requests':>9} {'RSS MiB':>8} {'B/request since the first row':>30}")
        first: tuple[int, int] | None = None
        next_row = 0
        async with AsyncExitStack() as stack:
            lanes = LANES[arguments.era]
            clients = {lane: await lane_clients(stack, {"ours": server}, lane, arguments.concurrency) for lane in lanes}
            for lane in lanes:
                for client in clients[lane]:  # each client's first execute, uncounted
                    await execute(server, client, ONE_CALL[server.side], EXPECTED_ONE)
            server.executes = 0
            round_index = 0
            while server.executes < arguments.requests:
                lane = lanes[round_index % len(lanes)]
                await drive(server, clients[lane], SECONDS_PER_ROUND, Load())
                round_index += 1
                if server.executes >= next_row:
                    rss = proc_status(server.process.pid)["VmRSS"]
                    first = first or (server.executes, rss)
                    growth = (rss - first[1]) / max(1, server.executes - first[0])
                    print(f"{server.executes:9,} {rss / MIB:8.1f} {growth:30,.0f}", flush=True)
                    next_row = server.executes + arguments.every
    finally:
        await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20_000, help="executes to send after the warm-up")
    parser.add_argument("--every", type=int, default=2_000, help="print a row each time this many more were sent")
    parser.add_argument("--concurrency", type=int, default=16, help="clients sending at once")
    parser.add_argument("--warmup", type=int, default=1_000, help="untimed executes before the first row")
    parser.add_argument("--era", choices=tuple(LANES), default="both", help="the protocol eras the clients speak")
    parser.add_argument("--sandbox", choices=("monty", "isolated"), default="monty", help="as in bench/mcp.py")
    parser.add_argument("--no-gc-tuning", action="store_true", help="serve with create_mcp(freeze_loaded=False)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
