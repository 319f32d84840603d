"""Cost as the work grows: catalogs of 10 / 1,000 / 10,000 operations, programs of 1 / 100 / 1,000 calls.

Every operation is defined from a function, as a host writes one (``@module.operation``):
six shapes of a resource API (list, get, search, create, update, delete) with typed
parameters, a described field and pydantic models out, each a function object of its own
with a name of its own, ten to a module. Programs run in the real ``MontySandbox``.

    .venv/bin/python bench/scaling.py [--runs N] [--sizes 10,1000,10000] [--widths 1500,15000]

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
   100 to 1,000 calls: equal when cost grows linearly) by medians and by the quietest tenth
   of the runs, ours and the floor's, the ratio of each size to the smallest (1.0 when cost
   does not grow with the catalog), and the host memory of each program: the most one run
   holds above what was there before it, and what stays once it is over. Then the one-call
   program through ``IsolatedSandbox``, what ``mycelium serve`` runs programs in (Monty in a
   child process, which must not be sent the whole catalog with every run), at each size, its
   module named on its own and under ``env`` (which holds every module: a session must not set
   them all up for a program that uses one).
4. **One wide operation** of each shape a schema grows by (a model's fields, nested models
   that become ``$defs``, a function's parameters, a JSON Schema's properties), narrow and
   wide: defining it, installing it alone, indexing, describing and rendering it, and the
   cost per field (equal at both widths when nothing is quadratic in the fields).

Targets: per-execute cost does not grow with the catalog (10,000 / 10 operations within
1.1x at every program size); cost per call from 100 to 1,000 calls within 1.2x of that
from 1 to 100 (linear in calls), judged on the quietest tenth of the runs: a 1,000-call
program lasts a hundred times longer than a one-call one and so is far likelier to share
the machine with a neighbour's burst, which medians count as cost (the floor's own slope
by medians shows how much); defining an operation within 1.2x of pydantic per operation;
a wide operation's cost per field at the wide width within 1.5x of the narrow one's.
The bench reports and always exits 0. About 4 minutes on the 2-core build machine.
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
from typing import Annotated, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic_monty import AsyncMonty, ExternalModule
from stats import executing, percentile

from mycelium import ExecutionOptions, InvocationContext, Lease, Module, Operation, Runtime, operation
from mycelium._discovery import Catalog
from mycelium._graph import build_graph
from mycelium._operations import operation_from_function
from mycelium.sandbox.isolated import IsolatedSandbox
from mycelium.sandbox.monty import MontySandbox

MIB = 1024 * 1024
TARGET_CATALOG_RATIO = 1.1
TARGET_LINEAR_RATIO = 1.2
TARGET_DEFINE_RATIO = 1.2
TARGET_WIDE_RATIO = 1.5
CALLS = (1, 100, 1_000)
# The fewest rounds of any program: enough for the quietest tenth of the longest to be a run, not a guess.
_LONG_ROUNDS = 20
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


async def main(runs: int, sizes: Sequence[int], widths: Sequence[int]) -> None:
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
    await isolated(catalogs, runs)
    await asyncio.sleep(0.05)  # let Monty's threads finish before the loop ends
    wide(widths)


# One operation as wide as a host may make it, in each way a schema grows: each shape builds
# its input (untimed) for a width, and returns how to define the operation over it.
_Shape: TypeAlias = Callable[[int], Callable[[], Operation]]
WIDE_SHAPES: dict[str, _Shape] = {}


def _wide_shape(name: str) -> Callable[[_Shape], _Shape]:
    def register(shape: _Shape) -> _Shape:
        WIDE_SHAPES[name] = shape
        return shape

    return register


@_wide_shape("model fields")
def _model_fields(width: int) -> Callable[[], Operation]:
    fields: dict[str, Any] = {f"field_{i}": (int, Field(0, description=f"value number {i}")) for i in range(width)}
    model = create_model("Wide", **fields)
    return lambda: operation(input=model, output=Record, execute=_get, access="read", description="One wide input.")


@_wide_shape("nested models")
def _nested_models(width: int) -> Callable[[], Operation]:
    parts: dict[str, Any] = {f"part_{i}": (create_model(f"Part{i}", x=(int, 0)) | None, None) for i in range(width)}
    model = create_model("Nested", **parts)  # each part model is a $defs entry of its own
    return lambda: operation(input=model, output=Record, execute=_get, access="read", description="One per part.")


@_wide_shape("parameters")
def _parameters(width: int) -> Callable[[], Operation]:
    namespace: dict[str, Any] = {"Record": Record}
    source = f"async def wide({', '.join(f'p_{i}: int = 0' for i in range(width))}) -> Record:\n    ..."
    exec(source, namespace)  # a function of `width` parameters, as a generator of code would write it
    return lambda: operation_from_function(namespace["wide"], access="read")


@_wide_shape("JSON Schema")
def _json_schema(width: int) -> Callable[[], Operation]:
    schema = {
        "type": "object",
        "properties": {f"field_{i}": {"type": "integer", "description": f"value number {i}"} for i in range(width)},
        "required": [f"field_{i}" for i in range(0, width, 2)],
    }
    return lambda: operation(input=schema, output=Record, execute=_get, access="read", description="One wide input.")


def _wide_steps(define_it: Callable[[], Operation]) -> list[float]:
    """Milliseconds to define the operation, install it alone, index it, describe it and render its stub."""
    took: list[float] = []
    began = time.perf_counter_ns()
    for step in ("define", "graph", "catalog", "describe", "stubs"):
        if step == "define":
            op = define_it()
        elif step == "graph":
            graph = build_graph([Module(id="wide-v1", name="wide", operations={"op": op})], revision=1)
        elif step == "catalog":
            catalog = Catalog(graph)
        elif step == "describe":
            catalog.describe("wide.op")
        else:
            catalog.stubs()
        ended = time.perf_counter_ns()
        took.append((ended - began) / 1e6)
        began = ended
    return took


def wide(widths: Sequence[int]) -> None:
    """Define, install, index, describe and render one operation at each width: the cost per field stays flat."""
    print(f"\n4. one wide operation: each step's wall time (ms) at {' and '.join(f'{w:,}' for w in widths)} fields")
    steps = ("define", "graph", "catalog", "describe", "stubs")
    print(f"{'shape':>14} {'fields':>7} " + " ".join(f"{step:>9}" for step in steps) + f" {'us/field':>9}")
    _wide_steps(WIDE_SHAPES["parameters"](1))  # the first catalog imports numpy: not the width's cost
    worst = 0.0
    for name, shape in WIDE_SHAPES.items():
        per_field: list[float] = []
        for width in widths:
            define_it = shape(width)
            gc.collect()
            took = _wide_steps(define_it)
            per_field.append(sum(took) * 1000 / width)
            print(f"{name:>14} {width:>7,} " + " ".join(f"{ms:9.1f}" for ms in took) + f" {per_field[-1]:9.1f}")
        worst = max(worst, per_field[-1] / per_field[0])
    print(
        f"target: cost per field at {widths[-1]:,} within {TARGET_WIDE_RATIO}x of that at {widths[0]:,} (linear): "
        f"{'ok' if worst <= TARGET_WIDE_RATIO else 'MISSED'} (worst {worst:.2f}x)"
    )


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
    # Medians, and the quietest tenth: the machine is shared, and a long program is far more
    # likely than a short one to overlap a neighbour's burst, so medians alone make a busy
    # machine look like cost growing with calls (the floor's own slope shows how much).
    figures: dict[str, dict[tuple[int, str], float]] = {"wall": {}, "CPU": {}, "wall p10": {}, "CPU p10": {}}
    for calls in CALLS:
        rounds = max(_LONG_ROUNDS, runs // max(1, calls // 10))
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
        for name in runners:
            figures["wall"][calls, name] = statistics.median(wall[name])
            figures["CPU"][calls, name] = statistics.median(cpu[name])
            figures["wall p10"][calls, name] = percentile(wall[name], 0.1)
            figures["CPU p10"][calls, name] = percentile(cpu[name], 0.1)
        floor, floor_cpu = figures["wall"][calls, "floor"], figures["CPU"][calls, "floor"]
        smallest, smallest_cpu = figures["wall"][calls, str(sizes[0])], figures["CPU"][calls, str(sizes[0])]
        for size in sizes:
            median, median_cpu = figures["wall"][calls, str(size)], figures["CPU"][calls, str(size)]
            shown = (
                f"{median:9.3f}",
                f"{percentile(wall[str(size)], 0.99):9.3f}",
                f"{median_cpu:9.3f}",
                f"{floor:9.3f}",
                f"{floor_cpu:9.3f}",
                f"{median / floor:9.2f}",
                f"{median / smallest:10.2f}",
                f"{median_cpu / smallest_cpu:14.2f}",
            )
            print(f"{calls:>6,} {size:>10,} " + " ".join(shown))
    print(
        "\nslope: cost per call (us), from 1 to 100 calls and from 100 to 1,000, and their ratio (1.0: linear);"
        "\nby medians and by the quietest tenth of the runs (p10), ours and the floor's"
    )
    print(f"{'':>10} " + " ".join(f"{label:>24}" for label in figures))
    worst_linear = dict.fromkeys(figures, 0.0)
    for name in [*map(str, sizes), "floor"]:
        cells = []
        for label, medians in figures.items():
            low, high, ratio = _slope(medians, name)
            if name != "floor":
                worst_linear[label] = max(worst_linear[label], ratio)
            cells.append(f"{low * 1000:6.1f} {high * 1000:6.1f} {ratio:5.2f}x")
        print(f"{name:>10} " + " ".join(f"{cell:>24}" for cell in cells))
    worst_catalog = max(
        figures[label][calls, str(sizes[-1])] / figures[label][calls, str(sizes[0])]
        for label in ("wall", "CPU")
        for calls in CALLS
    )
    print("\nPython function calls per execute on the event loop's thread (counted, so free of noise)")
    print(f"{'calls':>6} " + " ".join(f"{size:>12,}" for size in sizes) + "  (operations)")
    for calls in CALLS:
        counts = [await counted(executing(leases[size], program(calls, catalogs[size][0].name))) for size in sizes]
        print(f"{calls:>6,} " + " ".join(f"{count:>12,}" for count in counts))
    print("\nhost memory per execute (tracemalloc, after the timed runs): the most held during one, and what stays")
    print(f"{'calls':>6} {'operations':>10} {'peak':>10} {'kept':>8} {'runs':>5}")
    for calls in CALLS:
        for size in sizes:
            peak, kept, count = await traced(executing(leases[size], program(calls, catalogs[size][0].name)), calls)
            print(f"{calls:>6,} {size:>10,} {peak / 1024:7.1f} KiB {kept:6.0f} B {count:>5}")
    quiet = max(worst_linear["wall p10"], worst_linear["CPU p10"])
    loud = max(worst_linear["wall"], worst_linear["CPU"])
    print(
        f"\ntargets: {sizes[-1]:,} / {sizes[0]:,} operations per execute <= {TARGET_CATALOG_RATIO}x: "
        f"{'ok' if worst_catalog <= TARGET_CATALOG_RATIO else 'MISSED'} (worst {worst_catalog:.2f}x); "
        f"per call linear (<= {TARGET_LINEAR_RATIO}x, the quietest tenth): "
        f"{'ok' if quiet <= TARGET_LINEAR_RATIO else 'MISSED'} (worst {quiet:.2f}x; by medians {loud:.2f}x)"
    )


async def isolated(catalogs: dict[int, list[Module]], runs: int) -> None:
    """The one-call program through IsolatedSandbox at each catalog size, by its module's own name
    and under ``env`` (which holds every module), interleaved round by round."""
    sizes = sorted(catalogs)
    spellings = {"by name": "", "under env": "env."}
    print("\nthe one-call program through IsolatedSandbox (ms), as mycelium serve runs it")
    print(f"{'operations':>10} " + " ".join(f"{name + ' p50':>15} {'p99':>8} {'/ smallest':>10}" for name in spellings))
    async with AsyncExitStack() as held:
        runners: dict[tuple[int, str], Callable[[], Awaitable[object]]] = {}
        for size in sizes:
            runtime = Runtime(modules=catalogs[size], sandbox=IsolatedSandbox(max_idle_children=1))
            await held.enter_async_context(runtime)
            lease = await held.enter_async_context(runtime.lease())
            middle = catalogs[size][len(catalogs[size]) // 2].name
            for name, prefix in spellings.items():
                runners[size, name] = executing(lease, program(1, prefix + middle))
        for run in runners.values():  # each child started and sent its revision
            for _ in range(3):
                await run()
        times: dict[tuple[int, str], list[float]] = {key: [] for key in runners}
        for _ in range(runs):
            for key, run in runners.items():
                began = time.perf_counter_ns()
                await run()
                times[key].append((time.perf_counter_ns() - began) / 1e6)
    for size in sizes:
        cells = []
        for name in spellings:
            median = statistics.median(times[size, name])
            smallest = statistics.median(times[sizes[0], name])
            cells.append(f"{median:15.3f} {percentile(times[size, name], 0.99):8.3f} {median / smallest:10.2f}")
        print(f"{size:>10,} " + " ".join(cells))


async def traced(run: Callable[[], Awaitable[object]], calls: int) -> tuple[int, float, int]:
    """The most memory one run holds above what was there before it (the worst of a few), and what each keeps."""
    count = max(10, 200 // calls)
    await run()
    gc.collect()
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    peak = 0
    for _ in range(count):
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        await run()
        peak = max(peak, tracemalloc.get_traced_memory()[1] - before)
    gc.collect()
    kept = (tracemalloc.get_traced_memory()[0] - baseline) / count
    tracemalloc.stop()
    return peak, kept, count


def _slope(medians: dict[tuple[int, str], float], name: str) -> tuple[float, float, float]:
    """Cost per call from 1 to 100 calls and from 100 to 1,000 (ms), and the second over the first."""
    low = (medians[100, name] - medians[1, name]) / 99
    high = (medians[1_000, name] - medians[100, name]) / 900
    return low, high, high / low


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
    parser.add_argument("--widths", default="1500,15000", help="fields of the one wide operation, narrow then wide")
    arguments = parser.parse_args()
    sizes = [int(size) for size in arguments.sizes.split(",")]
    asyncio.run(main(arguments.runs, sizes, [int(width) for width in arguments.widths.split(",")]))
