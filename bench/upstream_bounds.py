"""An upstream stdio server answering a call with one huge line: how long the host takes to refuse it.

The server is ``tests/mcp/upstream/raw_server.py`` (written by hand, so it sends exactly the
line asked for): its ``flood`` tool answers with one line of ``--sizes`` bytes, its id first
(the Python SDK's order) or last (the TypeScript SDK's). Each case runs in a fresh child
process of this script, so its memory high-water mark is its own, on two sides:

- **ours**: the SDK client over Mycelium's stdio transport (``mcp_source`` over stdio uses
  it): the line passes ``MAX_MESSAGE_BYTES`` and is dropped as it arrives, and the call
  fails at once with an error answer; then an ``echo`` call on the same session;
- **sdk**: the SDK client over its own stdio client, which keeps the line whole and joins
  every chunk to it (``--sdk-sizes``: its time grows with the square of the size, so 100 MB
  would take many minutes). It accepts the line, since it has no bound.

Printed per case: wall time until the call ended (refused, or answered), the host process's
CPU time over it, its resident memory growth over it (the high-water mark against the
start), and how long the next call took. The server's own time to write the line is in
the wall time, not in the CPU time. Target (issue 24): the refusal linear in the line's
size, host memory not growing with it.

    .venv/bin/python bench/upstream_bounds.py                          # about a minute and a half
    .venv/bin/python bench/upstream_bounds.py --sizes 10,100 --sdk-sizes 10
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
SERVER = str(ROOT / "tests" / "mcp" / "upstream" / "raw_server.py")
MB = 1_000_000


def rss_bytes() -> int:
    """This process's resident memory now, from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


async def case(side: str, size: int, shape: str) -> dict[str, object]:
    """One call of ``flood`` on a fresh session, then one of ``echo``: the figures of the first."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from mycelium.mcp._upstream._stdio import stdio_transport

    server = (
        stdio_transport(sys.executable, [SERVER], None, None, "bench")
        if side == "ours"
        else StdioServerParameters(command=sys.executable, args=[SERVER])
    )
    async with Client(server, mode="legacy") as client:
        await client.call_tool("echo", {"text": "warm"})
        rss_before = rss_bytes()
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            await client.call_tool("flood", {"bytes": size, "shape": shape})
            outcome = "accepted"
        except Exception as exc:  # the refusal is the outcome measured
            outcome = f"refused: {str(exc)[:60]}"
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        after = time.perf_counter()
        said = await client.call_tool("echo", {"text": "next"})
        next_s = time.perf_counter() - after
    assert said.content[0].text == "next"  # type: ignore[union-attr]
    growth = max(0, peak - rss_before)
    return {"wall_s": wall, "cpu_s": cpu, "rss_growth_mb": growth / MB, "next_s": next_s, "outcome": outcome}


def run_case(side: str, size: int, shape: str) -> dict[str, object]:
    """:func:`case` in a child process of its own, so the memory high-water mark is the case's."""
    done = subprocess.run(
        [sys.executable, __file__, "--case", side, str(size), shape],
        capture_output=True,
        text=True,
        check=True,
        timeout=3_600,
    )
    figures: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,30,100", help="line sizes for ours, in MB (default 10,30,100)")
    parser.add_argument("--sdk-sizes", default="10,30", help="line sizes for the SDK's client, in MB (default 10,30)")
    parser.add_argument("--case", nargs=3, metavar=("SIDE", "BYTES", "SHAPE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        side, size, shape = args.case
        print(json.dumps(anyio.run(case, side, int(size), shape)))
        return
    print("side  shape       line MB   wall s    CPU s   RSS growth MB   next call s   outcome")
    plan = [("ours", shape, int(mb)) for mb in args.sizes.split(",") for shape in ("python", "typescript")]
    plan += [("sdk", "python", int(mb)) for mb in args.sdk_sizes.split(",") if mb]
    for side, shape, mb in plan:
        f = run_case(side, mb * MB, shape)
        print(
            f"{side:5} {shape:11} {mb:7} {f['wall_s']:8.2f} {f['cpu_s']:8.2f} {f['rss_growth_mb']:15.1f} "
            f"{f['next_s']:13.3f}   {f['outcome']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
