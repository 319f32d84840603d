"""Execute through Mycelium's MontySandbox against the bare pydantic-monty pattern (the floor).

Both sides do the same work per run: a fresh Monty session from a warm pool, the guest's
module bound, the program run, one small dict per operation call. Mycelium adds what a
host needs on top: argument checks, admission, deadline supervision, ordinals, input
decoding, output encoding and result bounding.

    .venv/bin/python bench/sandbox.py [--runs N] [--seconds S]   # S: how long each throughput run lasts

Prints, per scenario, the median and p99 latency of each side and the ratio
Mycelium/bare, then throughput at concurrency 1, 4 and 16, then the cost of the process hop:
each scenario through ``IsolatedSandbox`` (Monty in a child process) against ``MontySandbox``
in process, and the milliseconds the hop adds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from pydantic import BaseModel
from pydantic_monty import AsyncMonty, ExternalModule
from stats import executing, percentile

from mycelium import ExecutionOptions, Module, Runtime, operation
from mycelium.sandbox.isolated import IsolatedSandbox
from mycelium.sandbox.monty import MontySandbox

SCENARIOS = {
    "trivial program": "1 + 2",
    "one operation call": "await demo.ping()",
    "100 sequential calls": "for i in range(100):\n    await demo.ping()",
    "gather of 10 calls": "import asyncio\nawait asyncio.gather(*[demo.ping() for i in range(10)])",
}


class Pong(BaseModel):
    value: str


async def bare_ping() -> dict[str, str]:
    return {"value": "pong"}


async def measure(
    first: Callable[[], Awaitable[object]], second: Callable[[], Awaitable[object]], runs: int
) -> tuple[list[float], list[float]]:
    """Latency samples (ms) of two runners, interleaved so that drift on a shared machine hits both."""
    for _ in range(max(5, runs // 10)):  # warm the pool and the caches
        await first()
        await second()
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for run, into in ((first, samples[0]), (second, samples[1])):
            started = time.perf_counter()
            await run()
            into.append((time.perf_counter() - started) * 1000)
    return samples


async def throughput(run: Callable[[], Awaitable[object]], concurrency: int, seconds: float) -> float:
    done = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < stop:
            await run()
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done / (time.perf_counter() - started)


async def main(runs: int, seconds: float) -> None:
    demo = Module(id="bench-demo", name="demo", operations={"ping": operation(output=Pong, execute=bare_ping)})
    bare_modules = {"demo": ExternalModule({"ping": bare_ping})}
    async with AsyncMonty(min_processes=1, max_checkouts_per_worker=100) as pool:

        def bare(code: str) -> Callable[[], Awaitable[object]]:
            program = "import demo\n" + code

            async def run() -> object:
                async with pool.checkout(external_modules=bare_modules) as session:
                    return await session.feed_run(program)

            return run

        runtime = Runtime(modules=[demo], sandbox=MontySandbox(), execution=ExecutionOptions(sandbox_capacity=16))
        async with runtime, runtime.lease() as lease:
            print(f"latency, {runs} runs each (ms)")
            print(f"{'scenario':<22} {'bare p50':>9} {'bare p99':>9} {'ours p50':>9} {'ours p99':>9} {'ratio':>6}")
            for name, code in SCENARIOS.items():
                floor, mine = await measure(bare(code), executing(lease, code), runs)
                ratio = statistics.median(mine) / statistics.median(floor)
                print(
                    f"{name:<22} {statistics.median(floor):9.3f} {percentile(floor, 0.99):9.3f} "
                    f"{statistics.median(mine):9.3f} {percentile(mine, 0.99):9.3f} {ratio:6.2f}"
                )
            print(f"\nthroughput, one operation call per run, {seconds:.0f} s each (runs/s)")
            print(f"{'concurrency':<12} {'bare':>8} {'ours':>8} {'ratio':>6}")
            for concurrency in (1, 4, 16):
                floor_rate = await throughput(bare(SCENARIOS["one operation call"]), concurrency, seconds)
                our_rate = await throughput(executing(lease, SCENARIOS["one operation call"]), concurrency, seconds)
                print(f"{concurrency:<12} {floor_rate:8.0f} {our_rate:8.0f} {our_rate / floor_rate:6.2f}")
            isolated = Runtime(
                modules=[demo], sandbox=IsolatedSandbox(), execution=ExecutionOptions(sandbox_capacity=16)
            )
            async with isolated, isolated.lease() as hopping:
                print(f"\nthe process hop: IsolatedSandbox against MontySandbox, {runs} runs each (ms)")
                print(f"{'scenario':<22} {'in p50':>9} {'child p50':>9} {'child p99':>9} {'added':>7}")
                for name, code in SCENARIOS.items():
                    inside, child = await measure(executing(lease, code), executing(hopping, code), runs)
                    added = statistics.median(child) - statistics.median(inside)
                    print(
                        f"{name:<22} {statistics.median(inside):9.3f} {statistics.median(child):9.3f} "
                        f"{percentile(child, 0.99):9.3f} {added:7.3f}"
                    )
    await asyncio.sleep(0.05)  # let Monty's threads finish before the loop ends


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=2.0)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.runs, arguments.seconds))
