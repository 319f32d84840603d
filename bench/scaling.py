"""Cost as the work grows: catalogs of 10 / 1,000 / 10,000 operations, programs of 1 / 100 / 1,000 calls.

Every operation is defined from a function, as a host writes one (``@module.operation``):
six shapes of a resource API (list, get, search, create, update, delete) with typed
parameters, a described field and pydantic models out, each a function object of its own
with a name of its own, ten to a module. Programs run in the real ``MontySandbox``.

    .venv/bin/python bench/scaling.py [--runs N] [--sizes 10,1000,10000]

Printed, each beside a floor measured in the same run (the machine is shared and noisy):

1. **Defining an operation from a function**, per operation (median, p99) at each catalog
   size, against two floors done with pydantic alone on the same functions, interleaved
   with ours: *pydantic per operation* (``create_model`` of the parameters, its JSON Schema,
   and a ``TypeAdapter`` of the return type with its schema: what the issue measured as
   pydantic's own cost) and *input model only* (``create_model`` and its schema: what no
   cache can share, as every function has parameters of its own).
2. **A runtime and its first lease** at each size (the revision's view: the discovery
   index, the tool description, the namespaces): wall time, the memory it keeps
   (tracemalloc, in a second pass, as tracing slows everything) and the RSS it adds.
3. **Per execute** at each size for each program: median and p99, interleaved round by
   round with the same program on bare pydantic-monty (the floor: a warm pool, the module
   bound, one dict per call, no checks); the slope (cost per call, from 1 to 100 and from
   100 to 1,000 calls: equal when cost grows linearly), the ratio of each size to the
   smallest (1.0 when cost does not grow with the catalog) and the memory kept per execute.

Targets: per-execute cost does not grow with the catalog (10,000 / 10 operations within
1.1x at every program size); cost per call from 100 to 1,000 calls within 1.2x of that
from 1 to 100 (linear in calls); defining an operation within 1.2x of pydantic per operation.
The bench reports and always exits 0. About 3 minutes on the 2-core build machine.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import os
import statistics
import sys
import time
import tracemalloc
import typing
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic_monty import AsyncMonty, ExternalModule
from stats import executing, percentile

from mycelium import ExecutionOptions, InvocationContext, Lease, Module, Operation, Runtime
from mycelium._operations import operation_from_function
from mycelium.sandbox.monty import MontySandbox

MIB = 1024 * 1024
TARGET_CATALOG_RATIO = 1.1
TARGET_LINEAR_RATIO = 1.2
TARGET_DEFINE_RATIO = 1.2
CALLS = (1, 100, 1_000)
RESOURCES = ("record", "note", "task", "invoice", "ticket", "order", "contact", "file", "event", "message")


class Record(BaseModel):
    """What most operations return."""

    id: int
    title: str
    tags: list[str] = []
    done: bool = False


class Page(BaseModel):
    items: list[Record]
    cursor: str | None = None


class Deleted(BaseModel):
    id: int
    deleted: bool = True


# The shapes of a resource API; each operation is a fresh function object of one of them.
async def _list(limit: int = 20, cursor: str | None = None) -> Page:
    """List them, newest first, a page at a time."""
    return Page(items=[])


async def _get(id: int) -> Record:
    """Read one by id."""
    return Record(id=id, title="a title")


async def _search(
    query: Annotated[str, Field(description="Words the title or body contains")], limit: int = 10
) -> list[Record]:
    """Find the ones whose text contains the query."""
    return []


async def _create(title: str, body: str = "", tags: list[str] | None = None) -> Record:
    """Make a new one."""
    return Record(id=1, title=title, tags=tags or [])


async def _update(id: int, title: str | None = None, done: bool | None = None) -> Record:
    """Change the title or mark it done."""
    return Record(id=id, title=title or "", done=bool(done))


async def _delete(id: int, ctx: InvocationContext) -> Deleted:
    """Delete one for good."""
    return Deleted(id=id)


SHAPES: dict[str, Callable[..., Awaitable[Any]]] = {
    "list": _list,
    "get": _get,
    "search": _search,
    "create": _create,
    "update": _update,
    "delete": _delete,
}


def functions(count: int, start: int) -> list[tuple[str, str, Callable[..., Any]]]:
    """``count`` (module, key, function) triples: ten operations a module, each function its own object."""
    made: list[tuple[str, str, Callable[..., Any]]] = []
    verbs = list(SHAPES)
    for index in range(start, start + count):
        module, slot = divmod(index, 10)
        group, verb = divmod(slot, len(verbs))
        # The first group of every module is records, so every catalog has the programs' `records_0.get`.
        resource = RESOURCES[0] if group == 0 else RESOURCES[1 + module % (len(RESOURCES) - 1)]
        verb = verbs[verb]
        shape = SHAPES[verb]
        fn = type(shape)(shape.__code__, shape.__globals__, f"{verb}_{resource}s_{index}", shape.__defaults__)
        fn.__kwdefaults__, fn.__annotations__, fn.__doc__ = shape.__kwdefaults__, shape.__annotations__, shape.__doc__
        made.append((f"app_{module:04d}", f"{resource}s_{group}.{verb}", fn))
    return made


def floor_fields(fn: Callable[..., Any]) -> tuple[dict[str, Any], Any]:
    """The fields pydantic is given for ``fn``'s parameters, and its return type (read before any timing)."""
    hints = typing.get_type_hints(fn, include_extras=True)
    fields = {
        name: (hints[name], ... if parameter.default is parameter.empty else parameter.default)
        for name, parameter in inspect.signature(fn).parameters.items()
        if hints[name] is not InvocationContext
    }
    return fields, hints["return"]


def pydantic_floor(name: str, fields: dict[str, Any], output: Any) -> None:
    """What pydantic alone does for a function: a model of its parameters and its schema (and the return type's)."""
    model = create_model(name, __config__=ConfigDict(extra="forbid"), **fields)
    model.model_json_schema()
    if output is not None:
        TypeAdapter(output).json_schema(mode="serialization")


def define(
    triples: Sequence[tuple[str, str, Callable[..., Any]]], floors: bool
) -> tuple[list[Module], dict[str, list[float]]]:
    """Define every operation (timed one by one) and group them in modules; with ``floors``, time pydantic's too."""
    samples: dict[str, list[float]] = {"ours": [], "pydantic per operation": [], "input model only": []}
    grouped: dict[str, dict[str, Operation | Module]] = {}
    gc.collect()
    for name, key, fn in triples:
        if floors:
            fields, returned = floor_fields(fn)
            for label, output in (("pydantic per operation", returned), ("input model only", None)):
                started = time.perf_counter_ns()
                pydantic_floor(fn.__name__, fields, output)
                samples[label].append((time.perf_counter_ns() - started) / 1e6)
        started = time.perf_counter_ns()
        op = operation_from_function(fn, access="write" if key.endswith(("create", "update", "delete")) else "read")
        samples["ours"].append((time.perf_counter_ns() - started) / 1e6)
        grouped.setdefault(name, {})[key] = op
    modules = [Module(id=f"{name}-v1", name=name, operations=ops) for name, ops in grouped.items()]
    return modules, samples


def rss() -> int:
    """Resident memory of this process, from /proc (0 where there is none)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def program(calls: int, module: str) -> str:
    if calls == 1:
        return f"return await {module}.records_0.get(id=7)"
    return f"n = 0\nfor i in range({calls}):\n    n += (await {module}.records_0.get(id=i))['id']\nreturn n"


async def main(runs: int, sizes: Sequence[int]) -> None:
    print(f"catalog sizes {', '.join(f'{size:,}' for size in sizes)} operations; programs of {CALLS} calls")
    # 1. Defining operations. The floors run on the smallest catalogs' functions and on a
    # thousand of the largest's, interleaved with ours, so drift hits both alike.
    catalogs: dict[int, list[Module]] = {}
    defined: dict[int, dict[str, list[float]]] = {}
    start = 0
    for size in sizes:
        before = rss()
        began = time.perf_counter()
        catalogs[size], defined[size] = define(functions(size, start), floors=size <= 1_000)
        seconds = time.perf_counter() - began
        print(f"  defined {size:>6,} operations in {seconds:6.2f} s, RSS +{(rss() - before) / MIB:6.1f} MiB")
        start += size
    print("\n1. defining an operation from a function, per operation (ms)")
    columns = ("ours p50", "ours p99", "pydantic/op", "input only", "ratio", "ratio")
    print(f"{'operations':>10} " + " ".join(f"{column:>11}" for column in columns))
    for size in sizes:
        found = defined[size]
        ours = statistics.median(found["ours"])
        if found["input model only"]:
            floor = statistics.median(found["pydantic per operation"])
            inputs = statistics.median(found["input model only"])
            print(
                f"{size:>10,} {ours:9.3f} {percentile(found['ours'], 0.99):9.3f} {floor:12.3f} {inputs:11.3f} "
                f"{ours / floor:6.2f} {ours / inputs:6.2f}"
            )
        else:
            print(f"{size:>10,} {ours:9.3f} {percentile(found['ours'], 0.99):9.3f}")
    print("  (ratio: ours / pydantic per operation, ours / input model only)")

    # 2. A runtime and its first lease, then 3. executes, all sizes at once, interleaved.
    print("\n2. a runtime and its first lease")
    print(f"{'operations':>10} {'wall':>9} {'kept (tracemalloc)':>19} {'RSS added':>10}")
    async with AsyncMonty(min_processes=1, max_checkouts_per_worker=100) as pool, AsyncExitStack() as held:
        leases: dict[int, Lease] = {}
        for size in sizes:
            wall, kept, added = await first_lease(catalogs[size])
            print(f"{size:>10,} {wall * 1000:7.1f} ms {kept / MIB:15.2f} MiB {added / MIB:6.1f} MiB")
            runtime = Runtime(
                modules=catalogs[size], sandbox=MontySandbox(), execution=ExecutionOptions(sandbox_capacity=4)
            )
            await held.enter_async_context(runtime)
            leases[size] = await held.enter_async_context(runtime.lease())
        await executes(pool, leases, runs, catalogs)
    await asyncio.sleep(0.05)  # let Monty's threads finish before the loop ends


async def first_lease(modules: list[Module]) -> tuple[float, int, int]:
    """Wall time of a runtime and its first lease; what it keeps (tracemalloc) and the RSS it adds."""
    gc.collect()
    before = rss()
    began = time.perf_counter()
    runtime = Runtime(modules=modules, sandbox=MontySandbox())
    async with runtime, runtime.lease():
        wall = time.perf_counter() - began
        added = rss() - before
    gc.collect()
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    runtime = Runtime(modules=modules, sandbox=MontySandbox())
    async with runtime, runtime.lease():
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    return wall, kept, added


async def executes(pool: AsyncMonty, leases: dict[int, Lease], runs: int, catalogs: dict[int, list[Module]]) -> None:
    """Per-execute time at each size for each program, round by round beside bare pydantic-monty."""

    async def record(id: int) -> dict[str, Any]:
        return {"id": id, "title": "a title", "tags": [], "done": False}

    bare_modules = {"app": ExternalModule({"records_0": ExternalModule({"get": record})})}
    sizes = sorted(leases)
    print("\n3. per execute (ms): wall time, and the host's CPU time (less swayed by other processes)")
    columns = ("p50", "p99", "CPU p50", "floor p50", "floor CPU", "/ floor", "/ smallest", "CPU / smallest")
    print(f"{'calls':>6} {'operations':>10} " + " ".join(f"{column:>{max(9, len(column))}}" for column in columns))
    walls: dict[tuple[int, int], float] = {}
    cpus: dict[tuple[int, int], float] = {}
    for calls in CALLS:
        rounds = max(5, runs // max(1, calls // 10))
        middle = {size: catalogs[size][len(catalogs[size]) // 2].name for size in sizes}
        runners: dict[str, Callable[[], Awaitable[object]]] = {}
        runners["floor"] = _bare(pool, bare_modules, "import app\n" + program(calls, "app"))
        for size in sizes:
            runners[str(size)] = executing(leases[size], program(calls, middle[size]))
        wall: dict[str, list[float]] = {name: [] for name in runners}
        cpu: dict[str, list[float]] = {name: [] for name in runners}
        for run in runners.values():  # warm the pools and the caches
            for _ in range(3):
                await run()
        for _ in range(rounds):
            gc.collect()  # each round starts clean; a collection a run causes is its own cost
            for name, run in runners.items():
                began, began_cpu = time.perf_counter_ns(), time.process_time_ns()
                await run()
                wall[name].append((time.perf_counter_ns() - began) / 1e6)
                cpu[name].append((time.process_time_ns() - began_cpu) / 1e6)
        floor, floor_cpu = statistics.median(wall["floor"]), statistics.median(cpu["floor"])
        smallest, smallest_cpu = statistics.median(wall[str(sizes[0])]), statistics.median(cpu[str(sizes[0])])
        for size in sizes:
            walls[calls, size] = median = statistics.median(wall[str(size)])
            cpus[calls, size] = median_cpu = statistics.median(cpu[str(size)])
            figures = (
                f"{median:9.3f}",
                f"{percentile(wall[str(size)], 0.99):9.3f}",
                f"{median_cpu:9.3f}",
                f"{floor:9.3f}",
                f"{floor_cpu:9.3f}",
                f"{median / floor:9.2f}",
                f"{median / smallest:10.2f}",
                f"{median_cpu / smallest_cpu:14.2f}",
            )
            print(f"{calls:>6,} {size:>10,} " + " ".join(figures))
    print("\nslope: cost per call (us), from 1 to 100 calls and from 100 to 1,000; their ratio (1.0: linear)")
    worst_linear = 0.0
    for size in sizes:
        slopes = []
        for label, medians in (("wall", walls), ("CPU", cpus)):
            low = (medians[100, size] - medians[1, size]) / 99
            high = (medians[1_000, size] - medians[100, size]) / 900
            worst_linear = max(worst_linear, high / low)
            slopes.append(f"{label} {low * 1000:6.1f}, {high * 1000:6.1f}, ratio {high / low:5.2f}")
        print(f"{size:>10,} operations: " + ";  ".join(slopes))
    worst_catalog = max(
        medians[calls, sizes[-1]] / medians[calls, sizes[0]] for medians in (walls, cpus) for calls in CALLS
    )
    print("\nPython function calls per execute on the event loop's thread (counted, so free of noise)")
    print(f"{'calls':>6} " + " ".join(f"{size:>12,}" for size in sizes) + "  (operations)")
    for calls in CALLS:
        counts = [await counted(executing(leases[size], program(calls, catalogs[size][0].name))) for size in sizes]
        print(f"{calls:>6,} " + " ".join(f"{count:>12,}" for count in counts))
    print("\nmemory kept per execute (tracemalloc, 200 one-call executes after the timed ones)")
    for size in sizes:
        run = executing(leases[size], program(1, catalogs[size][0].name))
        gc.collect()
        tracemalloc.start()
        baseline = tracemalloc.get_traced_memory()[0]
        for _ in range(200):
            await run()
        gc.collect()
        print(f"{size:>10,} operations: {(tracemalloc.get_traced_memory()[0] - baseline) / 200:8.0f} B")
        tracemalloc.stop()
    print(
        f"\ntargets: {sizes[-1]:,} / {sizes[0]:,} operations per execute <= {TARGET_CATALOG_RATIO}x: "
        f"{'ok' if worst_catalog <= TARGET_CATALOG_RATIO else 'MISSED'} (worst {worst_catalog:.2f}x); "
        f"per call linear (<= {TARGET_LINEAR_RATIO}x): {'ok' if worst_linear <= TARGET_LINEAR_RATIO else 'MISSED'} "
        f"(worst {worst_linear:.2f}x)"
    )


async def counted(run: Callable[[], Awaitable[object]]) -> int:
    """How many Python (and C) functions one run calls on this thread, after a warm-up run."""
    await run()
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        await run()
    finally:
        sys.setprofile(None)
    return count


def _bare(pool: AsyncMonty, modules: dict[str, ExternalModule], code: str) -> Callable[[], Awaitable[object]]:
    async def run() -> object:
        # Monty's default suspension budget (1,000) would stop the 1,000-call program.
        async with pool.checkout(external_modules=modules, limits={"max_suspensions": 20_000}) as session:
            return await session.feed_run(code)

    return run


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200, help="rounds of one-call programs (fewer for longer ones)")
    parser.add_argument("--sizes", default="10,1000,10000", help="catalog sizes, in operations")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.runs, [int(size) for size in arguments.sizes.split(",")]))
