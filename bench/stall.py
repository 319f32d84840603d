"""Can one guest's huge value stall another client? A real `mycelium serve` on 127.0.0.1, two kinds of client.

The server is the `mycelium serve` command itself, in a subprocess, serving a small module
(an ``echo`` operation) over Streamable HTTP with a bearer token, through a ``Runtime`` the app
file builds with a sandbox slot for every client (so that the probe never queues for admission
behind the hostile runs) on the sandbox ``--sandbox`` names. A probe client sends small
executes (``return 1``) one after another, through the official MCP SDK client; meanwhile 1 or
``--hostile`` clients each run one hostile program over and over: a result of a 100 MB string,
an operation argument of a 500,000-key dict, an exception with a 50 MB message (each refused:
over the result limit, over the input limit, clipped). The probe's latency during each scenario
is compared with its latency with no hostile client, in the same run, and the server's RSS
growth (peak, over its RSS before the scenario) is read from ``/proc``.

    .venv/bin/python bench/stall.py [--samples N] [--hostile N] [--sandbox isolated|monty]

``--sandbox monty`` serves the same module on the in-process ``MontySandbox``, to see what the
isolated default removes. Target (issue 24, items 4, 8
and 9): the probe's median and p99 within 25 ms of its baseline, and the server's peak RSS
growth no more than the limits (64 KiB a result, 1 MiB an argument) plus the children's own.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import textwrap
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import httpx2
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from stats import percentile

TOKEN = "stall-bench-token-0123456789abcdef"
MIB = 1024 * 1024
APP = """
import os

from mycelium import ExecutionOptions, Module, Runtime
from mycelium.sandbox.isolated import IsolatedSandbox
from mycelium.sandbox.monty import MontySandbox

blob = Module(id="blob-v1", name="blob")


@blob.operation(access="read")
async def echo(value: object) -> object:
    '''Return the value given.'''
    return value


slots = int(os.environ["STALL_CAPACITY"])
options = ExecutionOptions(sandbox_capacity=slots)
isolated = Runtime(modules=[blob], sandbox=IsolatedSandbox(max_idle_children=slots), execution=options)
monty = Runtime(modules=[blob], sandbox=MontySandbox(), execution=options)
"""
SCENARIOS = {
    "100 MB string result": "return 'x' * 100_000_000",
    "500,000-key dict argument": "return await blob.echo(value={str(i): i for i in range(500_000)})",
    "50 MB exception message": "raise ValueError('m' * 50_000_000)",
}
PROBE = "return 1"
_URL = re.compile(r"http://127\.0\.0\.1:\d+/mcp")


def memory(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of ``pid`` in bytes."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(rest.split()[0]) * 1024
    return found


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


async def open_client(stack: AsyncExitStack, url: str) -> Client:
    http: httpx2.AsyncClient = await stack.enter_async_context(
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    )
    return await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), mode="legacy"))


async def timed(client: Client, code: str) -> tuple[float, bool]:
    started = time.perf_counter()
    result = await client.call_tool("execute", {"code": code})
    return (time.perf_counter() - started) * 1000, bool(result.is_error)


async def probe(client: Client, samples: int) -> list[float]:
    latencies = []
    for _ in range(samples):
        elapsed, failed = await timed(client, PROBE)
        if failed:
            raise RuntimeError("the probe's execute failed")
        latencies.append(elapsed)
    return latencies


async def scenario(url: str, pid: int, code: str, hostile: int, samples: int) -> tuple[list[float], int, int]:
    """The probe's latencies while ``hostile`` clients run ``code``; the server's peak RSS growth; hostile runs."""
    async with AsyncExitStack() as stack:
        prober = await open_client(stack, url)
        attackers = [await open_client(stack, url) for _ in range(hostile)]
        await probe(prober, 20)  # warm: every client connected, a child or worker ready
        before = memory(pid)["VmRSS"]
        reset_peak(pid)
        started = anyio.Event()
        done = False
        runs = 0

        async def attack(client: Client) -> None:
            nonlocal runs
            while not done:
                started.set()
                _, failed = await timed(client, code)
                runs += 1
                if not failed:
                    raise RuntimeError(f"a hostile program was not refused: {code}")

        async with anyio.create_task_group() as group:
            for client in attackers:
                group.start_soon(attack, client)
            await started.wait()
            latencies = await probe(prober, samples)
            done = True
        grown = memory(pid)["VmHWM"] - before
    return latencies, grown, runs


def line(name: str, latencies: list[float], baseline: list[float] | None, grown: int | None, runs: int | None) -> str:
    p50, p99, worst = statistics.median(latencies), percentile(latencies, 0.99), max(latencies)
    delta = (
        f"{p50 - statistics.median(baseline):+8.1f} {p99 - percentile(baseline, 0.99):+8.1f}" if baseline else " " * 17
    )
    memory_text = f"{grown / MIB:9.1f}" if grown is not None else " " * 9
    return f"{name:<36} {p50:8.1f} {p99:8.1f} {worst:8.1f} {delta} {memory_text} {runs if runs is not None else '':>6}"


async def main(samples: int, hostile: int, sandbox: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "app.py").write_text(textwrap.dedent(APP))
        target = f"app.py:{sandbox}"
        # A slot for every client: the probe never queues behind the hostile runs for admission.
        slots = {"STALL_CAPACITY": str(hostile + 2)}
        env = {**os.environ, "MYCELIUM_TOKEN": TOKEN, "MYCELIUM_DATA_DIR": folder, "NO_COLOR": "1", **slots}
        command = [sys.executable, "-m", "mycelium.cli", "serve", target, "--port", "0"]
        async with await anyio.open_process(command, cwd=folder, env=env, stderr=None) as server:
            assert server.stdout is not None
            out = BufferedByteReceiveStream(server.stdout)
            url = None
            with anyio.fail_after(60):
                while url is None:
                    found = _URL.search((await out.receive_until(b"\n", 65_536)).decode())
                    url = found.group(0) if found else None
            try:
                print(f"mycelium serve on the {sandbox} sandbox; probe: {samples} sequential `{PROBE}` per row (ms)")
                columns = ("p50", "p99", "worst", "+p50", "+p99")
                print(f"{'while':<36} {' '.join(f'{c:>8}' for c in columns)} {'peak MiB':>9} {'runs':>6}")
                async with AsyncExitStack() as stack:
                    client = await open_client(stack, url)
                    await probe(client, 50)
                    baseline = await probe(client, samples)
                print(line("nothing else (baseline)", baseline, None, None, None))
                for name, code in SCENARIOS.items():
                    for count in sorted({1, hostile}):
                        latencies, grown, runs = await scenario(url, server.pid, code, count, samples)
                        print(line(f"{count} x {name}", latencies, baseline, grown, runs))
            finally:
                server.terminate()
                with anyio.move_on_after(30):
                    await server.wait()
                if server.returncode is None:
                    server.kill()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--hostile", type=int, default=4)
    parser.add_argument("--sandbox", choices=["isolated", "monty"], default="isolated")
    arguments = parser.parse_args()
    anyio.run(main, arguments.samples, arguments.hostile, arguments.sandbox)
