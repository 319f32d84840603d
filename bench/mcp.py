"""Mycelium's MCP server against FastMCP's CodeMode, over Streamable HTTP on loopback, in the same run.

Both servers serve the same 20 pydantic-typed async tools (a small in-memory store), each
in its own subprocess (uvicorn on 127.0.0.1, an ephemeral port) so that the load generator
never shares their event loop. Ours authenticates a bearer token (``bearer_tokens``);
FastMCP checks one too (its ``StaticTokenVerifier``; ``--fastmcp-auth none`` drops it).
Both are driven by the official SDK client, every concurrent worker with a client of its
own, every request one ``execute``: FastMCP over 2025-11-25 sessions (``mode="legacy"``),
ours in both eras from one server process, over 2025-11-25 sessions and over 2026-07-28
requests that each stand alone. Each server is warmed with 1,000 executes first; the
lanes alternate round by round.

    .venv/bin/python bench/mcp.py [--seconds S] [--rounds N] [--runs N] [--warmup N]
                                  [--no-gc-tuning] [--sandbox monty|isolated]
                                  [--sandbox-capacity N] [--profile DIR]

Printed: execute requests per second and p50/p99 latency per lane at client concurrency
1, 4 and 16 (one inner operation call per program), a program making 100 sequential
operation calls (p50/p99), the ratios against FastMCP and between our two eras; for each
server process, its RSS growth (and peak RSS growth) per execute, its CPU per execute,
the worst stall of its event loop (a 1 ms ticker task in the server process, with the
loop thread's CPU time in that gap), and its garbage collections by generation (how many,
the longest one's CPU time, the collector's CPU per execute, what it still tracks and what
is frozen); and the cost of setting up a request's lease for an already-loaded principal.
Targets (issues 10 and 22): both our eras at least 1.5x FastMCP's requests per second at
every concurrency, 2026-07-28 no slower than 2025-11-25, and ahead on the 100-call
program; (issue 24) our worst loop gap under 25 ms. On a shared 2-core machine the req/s
figures move by 20-30% between runs; the CPU per execute moves less, and a loop gap far
longer than the loop's CPU time in it is the process waiting for a core.

Ours tunes the collector as ``mycelium serve`` does (``create_mcp(..., freeze_loaded=True)``:
what start-up loaded is frozen, and once more what the first 100 requests loaded);
``--no-gc-tuning`` leaves it alone, to measure what that does. FastMCP is left as it comes.
Ours runs Monty in process (``MontySandbox``, as FastMCP does); ``--sandbox isolated`` runs
it in child processes of its own, as ``mycelium serve`` does. ``--profile DIR`` runs each
server under cProfile and writes ``DIR/<side>.prof``; ``--stall-stacks MS`` samples each
server's loop-thread stack while its loop has not ticked for MS. The work lives in
``bench/mcp_bench.py``; this file is the entry point the issue names.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

_BENCH = Path(__file__).resolve().parent


def _without_bench(paths: list[str]) -> list[str]:
    return [entry for entry in paths if Path(entry or ".").resolve() != _BENCH]


if __name__ != "__main__":
    # This file shares its name with the MCP SDK, so a neighbour script (bench/ is first on
    # its import path) that imports fastmcp or mycelium.mcp would load it instead of the
    # SDK. Hand that importer the real SDK: the import system returns what sys.modules holds.
    saved = sys.path[:]
    sys.path[:] = _without_bench(saved)
    del sys.modules[__name__]
    try:
        importlib.import_module(__name__)
    finally:
        sys.path[:] = saved
else:
    # Keep bench/ off the front of the path while the SDK loads, then let the helpers import.
    sys.path[:] = _without_bench(sys.path)
    importlib.import_module("mcp")
    sys.path.append(str(_BENCH))
    importlib.import_module("mcp_bench").main()
