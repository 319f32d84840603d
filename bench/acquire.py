"""Acquiring leases over many capability sources: cold (every source acquired) and warm (cached).

128 trivial sources, 7 modules each (896 modules, 1,792 operations). A cold acquire
acquires every source, installs the graph and builds its catalog and tool description; a
warm acquire reuses the current revision. Each sample is acquire plus release.

    .venv/bin/python bench/acquire.py [--cold N] [--warm N]

Targets: warm <= 100 microseconds, cold <= 50 ms. The floor printed beside them is the
same number of bare awaits of the sources' acquire functions, measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from stats import percentile

from mycelium import AcquireContext, Acquired, Module, Runtime, operation, source
from mycelium.testing import rejecting_sandbox

SOURCES = 128
MODULES_PER_SOURCE = 7


async def nothing() -> None:
    return None


def make_source(index: int):  # type: ignore[no-untyped-def]
    modules = [
        Module(
            id=f"src{index}-mod{m}",
            name=f"app{index}_{m}",
            operations={
                "list": operation(access="read", execute=lambda: [], description="List the items."),
                "items.get": operation(access="read", execute=lambda: {}, description="Get one item by id."),
            },
        )
        for m in range(MODULES_PER_SOURCE)
    ]

    async def acquire(context: AcquireContext) -> Acquired:
        return Acquired(version="v1", modules=modules, release=nothing)

    return source(id=f"source-{index:03d}", acquire=acquire)


def report(name: str, samples: list[float], unit: str, target: float) -> None:
    median = statistics.median(samples)
    print(
        f"{name:<6} median {median:9.1f} {unit}  p99 {percentile(samples, 0.99):9.1f} {unit}  "
        f"target <= {target:g} {unit}  {'ok' if median <= target else 'MISSED'}"
    )


async def main(cold_runs: int, warm_runs: int) -> None:
    sources = [make_source(index) for index in range(SOURCES)]
    cold: list[float] = []
    for _ in range(cold_runs):
        runtime = Runtime(sources=sources, sandbox=rejecting_sandbox())
        started = time.perf_counter()
        lease = await runtime.acquire()
        await lease.release()
        cold.append((time.perf_counter() - started) * 1000)
        await runtime.close()

    floor: list[float] = []
    for _ in range(cold_runs):
        started = time.perf_counter()
        for candidate in sources:
            await candidate.acquire(None)  # type: ignore[arg-type]
        floor.append((time.perf_counter() - started) * 1000)

    warm: list[float] = []
    async with Runtime(sources=sources, sandbox=rejecting_sandbox()) as runtime:
        await (await runtime.acquire()).release()
        for _ in range(warm_runs):
            started = time.perf_counter()
            lease = await runtime.acquire()
            await lease.release()
            warm.append((time.perf_counter() - started) * 1_000_000)

    print(f"{SOURCES} sources x {MODULES_PER_SOURCE} modules ({SOURCES * MODULES_PER_SOURCE} modules)")
    report("cold", cold, "ms", 50)
    report("warm", warm, "us", 100)
    print(f"floor  median {statistics.median(floor):9.3f} ms  (bare awaits of the {SOURCES} acquire functions)")
    print(f"cold/floor ratio {statistics.median(cold) / statistics.median(floor):.0f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cold", type=int, default=30)
    parser.add_argument("--warm", type=int, default=5_000)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.cold, arguments.warm))
