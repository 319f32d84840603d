"""Where an execute's time goes, against bare pydantic-monty: a timeline of its parts, medians.

The one-call program of ``bench/sandbox.py`` (``await demo.ping()``, and ``--calls`` more in a
loop) runs through a ``Runtime`` over ``MontySandbox`` and through the bare pattern, interleaved.
Both sides are stamped at the same points by wrapping what does each step:

- start: the execute is asked for;
- feed: the program is sent to the worker (ours: where the sandbox starts awaiting the feed);
- place / placed: the guest's call enters and leaves the host's callback, on Monty's thread;
- op: the operation's function starts, on the event loop;
- fed: the program's run ends, its value in the host;
- end: the execute returns (ours: a ``ToolResult``).

Then, per execute over ``--runs`` runs of each side: event-loop iterations, and the CPU time
of the thread running the loop and of the others (Monty's own threads, which call the host's
callbacks), read from ``/proc`` (Linux).

    .venv/bin/python bench/sandbox_parts.py               # 600 runs, about 10 s
    .venv/bin/python bench/sandbox_parts.py --runs 300 --calls 9
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel
from pydantic_monty import AsyncMonty, ExternalModule

from mycelium import ExecutionOptions, Module, Runtime, operation
from mycelium.sandbox.monty import MontySandbox
from mycelium.sandbox.monty import _namespaces as guest_namespaces
from mycelium.sandbox.monty import _sandbox as adapter

POINTS = ("start", "feed", "place", "placed", "op", "fed", "end")
stamps: dict[str, int] = {}


def stamp(point: str) -> None:
    """The first time ``point`` is reached in this run (later calls of a loop do not move it)."""
    stamps.setdefault(point, time.perf_counter_ns())


class Pong(BaseModel):
    value: str


async def ping() -> dict[str, str]:
    stamp("op")
    return {"value": "pong"}


def bare_ping() -> Awaitable[dict[str, str]]:
    stamp("place")
    pending = ping()
    stamp("placed")
    return pending


def wrap_ours() -> None:
    """Stamp our side's feed, place and fed points by wrapping the sandbox's own steps."""
    until_stopped = adapter._until_stopped
    place = guest_namespaces._place

    async def timed_until_stopped(work: Awaitable[object], signal: Any, *, worker: Any = None) -> object:
        stamp("feed")
        try:
            return await until_stopped(work, signal, worker=worker)
        finally:
            stamp("fed")

    def timed_place(leaf: Any, *args: object, **kwargs: object) -> Awaitable[Any]:
        stamp("place")
        try:
            return place(leaf, *args, **kwargs)
        finally:
            stamp("placed")

    adapter._until_stopped = timed_until_stopped  # type: ignore[assignment]
    guest_namespaces._place = timed_place


class LoopTurns:
    """Counts the event loop's iterations by wrapping its ``_run_once``."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.count = 0
        turn = loop._run_once  # type: ignore[attr-defined]

        def counted() -> None:
            self.count += 1
            turn()

        loop._run_once = counted  # type: ignore[attr-defined]


def thread_cpu_us() -> tuple[float, float]:
    """CPU time (us) used so far by this thread and by all the process's other threads."""
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    mine = other = 0.0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # a thread that just ended
            continue
        used = (int(fields[11]) + int(fields[12])) * tick_us
        if int(task) == os.getpid():
            mine += used
        else:
            other += used
    return mine, other


async def main(runs: int, calls: int) -> None:
    code = "await demo.ping()" + (f"\nfor i in range({calls}):\n    await demo.ping()" if calls else "")
    program = "import demo\n" + code
    demo = Module(id="bench-demo", name="demo", operations={"ping": operation(output=Pong, execute=ping)})
    modules = {"demo": ExternalModule({"ping": bare_ping})}
    wrap_ours()
    turns = LoopTurns(asyncio.get_running_loop())
    runtime = Runtime(modules=[demo], sandbox=MontySandbox(), execution=ExecutionOptions(sandbox_capacity=16))
    async with AsyncMonty(min_processes=1, max_checkouts_per_worker=100) as pool, runtime, runtime.lease() as lease:

        async def bare() -> None:
            async with pool.checkout(external_modules=modules) as session:
                stamp("feed")
                await session.feed_run(program)
                stamp("fed")

        async def ours() -> None:
            result = await lease.execute_tool.run(code, tool_call_id="bench")
            if result.is_error:
                raise SystemExit(f"execute failed: {result.text}")

        sides: dict[str, Callable[[], Awaitable[None]]] = {"bare": bare, "ours": ours}
        timelines: dict[str, list[dict[str, int]]] = {name: [] for name in sides}
        for round_ in range(runs + 30):
            for name, run in sides.items():
                stamps.clear()
                stamp("start")
                await run()
                stamp("end")
                if round_ >= 30:  # the first rounds warm the pool and the caches
                    timelines[name].append(dict(stamps))

        print(f"one execute, {1 + calls} operation call(s), {runs} runs each: median us between points")
        print(f"{'part':<16} {'bare':>8} {'ours':>8} {'added':>8}")
        for first, then in itertools.pairwise(POINTS):
            medians = [statistics.median(t[then] - t[first] for t in timelines[name]) / 1000 for name in sides]
            print(f"{first + ' > ' + then:<16} {medians[0]:8.1f} {medians[1]:8.1f} {medians[1] - medians[0]:+8.1f}")
        whole = [statistics.median(t["end"] - t["start"] for t in timelines[name]) / 1000 for name in sides]
        added = whole[1] - whole[0]
        print(f"{'start > end':<16} {whole[0]:8.1f} {whole[1]:8.1f} {added:+8.1f}  ({whole[1] / whole[0]:.2f}x)")

        print(f"\nper execute, {runs} runs of each side in a row")
        print(f"{'side':<6} {'loop turns':>10} {'loop thread CPU us':>19} {'other threads CPU us':>21}")
        for name, run in sides.items():
            before_turns, before_cpu = turns.count, thread_cpu_us()
            for _ in range(runs):
                await run()
            after_cpu = thread_cpu_us()
            print(
                f"{name:<6} {(turns.count - before_turns) / runs:10.1f} "
                f"{(after_cpu[0] - before_cpu[0]) / runs:19.0f} {(after_cpu[1] - before_cpu[1]) / runs:21.0f}"
            )
    await asyncio.sleep(0.05)  # let Monty's threads finish before the loop ends


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--calls", type=int, default=0, help="calls after the first, in a loop")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.runs, arguments.calls))
