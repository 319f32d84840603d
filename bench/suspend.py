"""Suspend an execute at a deferred confirmation and resume it: latency per store, against floors.

The program makes 10 operation calls (small async operations), then calls a ``confirm=True``
operation. For each store (``MemorySuspensions``; ``SqliteSuspensions`` on a file in a temp
folder; ``PostgresSuspensions`` on a PostgreSQL the script starts with pgserver in a temp
folder and stops at the end):

- **suspend**: ``execute`` in a runtime with ``Access(confirm=defer)``, until it returns the
  suspended ``ToolResult`` (the 10 calls, the deferral, the capture, the seal, the store's put);
- **resume**: ``runtime.resume(id, approved=True)`` until the final ``ToolResult`` (a lease,
  get, unseal and claim, the snapshot loaded into a fresh session, the pending call, the end);
- **suspend + resume**: the two of the same round added up.

The program awaits each call where it makes it, so a run that may pause is fed whole and,
at the deferral, captured from inside the confirm call (see ``sandbox/monty/_fed_pause.py``);
a program that could leave something in flight there is driven step by step instead.

The floors, measured in the same rounds (every scenario once per round, so that drift on a
shared machine hits all of them): **(a)** the same program with the confirmation approved at
once, in a runtime without suspensions (the run is fed whole); **(b)** per store, a runtime
with suspensions whose confirm approves at once: the run is run as one that may pause is, but
never pauses (and the tool call id is looked up in the store first, as every execute with
suspensions does); **(b')** the same with the program kept from being fed by a statement that
changes nothing (``try: pass``), so it is driven step by step, as a program with a gather or a
sleep is. (b) and (b') against (a) are what being able to pause costs a run that does not;
suspend + resume against (b) the cost of pausing. Ratios are medians against (a). All runtimes share one Monty
worker pool; each execute has its own tool call id. Beside them, **(c)** bare pydantic-monty
(a pool of its own) pausing at the same call and resuming: the confirm call's callback
captures the session with ``session.dump()`` and ends the feed, and a fresh session loads the
capture and finishes; no store, no seal, no checks, no stepping: what pausing costs Monty.

Also printed: the stored record's size; the store's own share (its ``put``, and the ``get`` and
``claim`` of a resume, on the same record); each operation of the memory store while it holds
``--full`` small suspensions of other sessions, against one holding as many as an approvals page
lists (a run's ``put``, ``find`` and ``claim``, the page's ``undecided``, a ``purge``: none should
read what it does not answer with); host memory per suspended run held in the memory
store (``VmRSS`` and tracemalloc, each over its own pass of N suspensions, and again after they
are all resumed); and the event loop's worst stall (the gap between the ticks of a 1 ms ticker,
as in ``bench/memory.py``) over a pass of suspends and a pass of resumes per store, beside the
floor (a).

    .venv/bin/python bench/suspend.py            # about 75 s on the 2-core build machine
    .venv/bin/python bench/suspend.py --quick    # about 20 s

Targets (issues 11 and 24): suspend + resume on SQLite under 5 ms at the median; a run that
may pause and does not at most 1.1x the fed run (a). The bench reports; it always exits 0
unless a run does not end as expected.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import json
import statistics
import tempfile
import time
import tracemalloc
import warnings
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeAlias

from memory import Ticker, rss_bytes
from pydantic import BaseModel
from pydantic_monty import AsyncMonty, ExternalModule, MontyComplete, MontyRuntimeError
from stats import percentile

from mycelium import (
    Access,
    ConfirmRequest,
    Lease,
    MemorySuspensions,
    Module,
    PostgresSuspensions,
    Runtime,
    SharedSandbox,
    SqliteSuspensions,
    Suspensions,
    ToolResult,
    defer,
    operation,
)
from mycelium.sandbox.monty import MontySandbox
from mycelium.suspensions import StoredSuspension
from mycelium.suspensions._memory import _size
from mycelium.suspensions._records import SuspensionRecord, now

TARGET_MS = 5.0
TARGET_RATIO = 1.1
LISTED = 50  # what an approvals page asks the store for at a time
KEY = b"bench-suspend-key-0123456789abcdef"
MAX_HELD = 100_000  # the memory and stall passes hold many suspensions of one session at once
# How many of each, in a full run and with --quick: enough for a steady p99 within 2 minutes.
COUNTS = {
    "rounds": ("latency rounds, each scenario once per round", 600, 100),
    "warmup": ("rounds to warm up, not counted", 30, 10),
    "store_runs": ("runs of the store alone", 500, 100),
    "held": ("suspensions held at once for the memory figure", 500, 200),
    "stall_runs": ("runs per stall pass", 200, 50),
    "full": ("suspensions of other sessions held for the memory store at its bound", 200_000, 50_000),
}

PROGRAM = """
total = 0
for i in range(10):
    total += (await shop.ping(n=i))["n"]
removed = await shop.remove(id=total)
return {"total": total, "removed": removed}
"""
EXPECTED = {"total": 45, "removed": {"removed": 45}}
STEPPED_PROGRAM = "try:\n    pass\nexcept Exception:\n    pass\n" + PROGRAM  # the same work, never fed
BARE_PROGRAM = "import shop\n" + PROGRAM
Samples: TypeAlias = dict[str, list[float]]


class Number(BaseModel):
    n: int


class Key(BaseModel):
    id: int


async def ping(request: Number) -> dict[str, int]:
    return {"n": request.n}


async def remove(request: Key) -> dict[str, int]:
    return {"removed": request.id}


def approve(request: ConfirmRequest) -> bool:
    """A person who approves at once, inside the call."""
    return True


def shop_module() -> Module:
    return Module(
        id="bench-shop",
        name="shop",
        operations={
            "ping": operation(input=Number, execute=ping, access="read"),
            "remove": operation(input=Key, execute=remove, access="write", confirm=True),
        },
    )


tool_call_ids = (f"call-{n}" for n in itertools.count())


def check(result: ToolResult, *, suspended: bool) -> None:
    """Stop the bench when a run does not end as the scenario says it must."""
    if suspended and result.suspension is None:
        raise SystemExit(f"expected a suspension, got: {result.text}")
    if not suspended and (result.is_error or result.suspension is not None or json.loads(result.text) != EXPECTED):
        raise SystemExit(f"expected the program's value, got: {result.text}")


@dataclass
class Store:
    """One store with its two runtimes: one pauses at the confirmation, the other approves at once."""

    name: str
    suspensions: Suspensions
    pausing: Runtime
    pausing_lease: Lease
    approving_lease: Lease

    async def suspend(self) -> str:
        """Run the program until it pauses; the suspension's id."""
        result = await self.pausing_lease.execute_tool.run(PROGRAM, tool_call_id=next(tool_call_ids))
        check(result, suspended=True)
        assert result.suspension is not None
        return result.suspension.id

    async def resume(self, suspension_id: str) -> None:
        """Approve the pending call and run the program to its end, as a host resumes (a lease of its own)."""
        check(await self.pausing.resume(suspension_id, approved=True), suspended=False)

    async def approved(self, program: str = PROGRAM) -> None:
        """Floor (b): the same program, run as one that could pause, approved at once ((b'): ``STEPPED_PROGRAM``)."""
        check(await self.approving_lease.execute_tool.run(program, tool_call_id=next(tool_call_ids)), suspended=False)


async def floor_run(lease: Lease) -> None:
    """Floor (a): the program approved at once in a runtime without suspensions, fed whole."""
    check(await lease.execute_tool.run(PROGRAM, tool_call_id=next(tool_call_ids)), suspended=False)


class _Paused(Exception):
    """Ends a bare feed once its session is captured."""


class BareMonty:
    """Floor (c): pydantic-monty alone pausing at the confirm call and resuming; nothing of Mycelium's.

    The confirm call's callback captures the session (``session.dump()``, while the worker
    waits on that call) and ends the feed; resuming loads the capture into a fresh session
    and lets Monty finish, the confirm call answered by its callback. No store, no seal, no
    checks: what pausing costs Monty itself.
    """

    def __init__(self, pool: AsyncMonty) -> None:
        self._pool = pool
        self._session: Any = None
        self._state = b""
        self._pausing = {"shop": ExternalModule({"ping": bare_ping, "remove": self._capture})}
        self._resuming = {"shop": ExternalModule({"ping": bare_ping, "remove": bare_remove})}

    async def _capture(self, id: int) -> None:
        self._state = await self._session.dump()
        raise _Paused

    async def suspend(self) -> bytes:
        self._state = b""
        async with self._pool.checkout(external_modules=self._pausing) as session:
            self._session = session
            with contextlib.suppress(MontyRuntimeError):  # the guest did not catch _Paused: the feed ended
                await session.feed_run(BARE_PROGRAM)
        self._session = None
        if not self._state:
            raise SystemExit("bare Monty: the feed ended without pausing")
        return self._state

    async def resume(self, state: bytes) -> None:
        async with self._pool.checkout(external_modules=self._resuming) as session:
            snap = await session.load_snapshot(state)
            while not isinstance(snap, MontyComplete):
                snap = await snap.resume_auto()
        if snap.output != EXPECTED:
            raise SystemExit(f"bare Monty: expected the program's value, got {snap.output!r}")


async def bare_ping(n: int) -> dict[str, int]:
    return {"n": n}


async def bare_remove(id: int) -> dict[str, int]:
    return {"removed": id}


def elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


async def timed(work: Awaitable[object]) -> float:
    started = time.perf_counter()
    await work
    return elapsed_ms(started)


@asynccontextmanager
async def postgres(folder: Path) -> AsyncIterator[str]:
    """A PostgreSQL of pgserver's bundled binaries in ``folder``, stopped on the way out."""
    with warnings.catch_warnings():
        # pgserver looks up a runtime folder when imported; without XDG_RUNTIME_DIR it warns and uses /tmp.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import pgserver

    server = await asyncio.to_thread(pgserver.get_server, folder, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        await asyncio.to_thread(server.cleanup)


@asynccontextmanager
async def stores(sandbox: SharedSandbox, folder: Path) -> AsyncIterator[list[Store]]:
    """The three stores, each with its two runtimes and their leases, closed on the way out."""
    async with AsyncExitStack() as stack:
        uri = await stack.enter_async_context(postgres(folder / "postgres"))
        made: list[Store] = []
        for name, store in (
            ("memory", MemorySuspensions()),
            ("sqlite", SqliteSuspensions(folder / "suspensions.db")),
            ("postgres", PostgresSuspensions(uri, table="bench_suspensions")),
        ):
            stack.push_async_callback(store.aclose)
            suspensions = Suspensions(store=store, key=KEY, max_per_session=MAX_HELD)
            runtimes = [
                await stack.enter_async_context(
                    Runtime(modules=[shop_module()], sandbox=sandbox, access=access, suspensions=suspensions)
                )
                for access in (Access(confirm=defer), Access(confirm=approve))
            ]
            leases = [await stack.enter_async_context(runtime.lease()) for runtime in runtimes]
            made.append(Store(name, suspensions, runtimes[0], *leases))
        yield made


# --------------------------------------------------------------------------------------
# Latency
# --------------------------------------------------------------------------------------


FLOOR = "(a) approved at once, no suspensions"
BARE = "(c) bare Monty"


def approving(store: str) -> str:
    return f"{store}: (b) may pause, approved at once"


def stepped(store: str) -> str:
    return f"{store}: (b') stepped, approved at once"


async def latency(floor: Lease, bare: BareMonty, made: Sequence[Store], rounds: int, warmup: int) -> Samples:
    """Each scenario once per round, in the same order; samples (ms) by scenario after the warm-up."""
    samples: Samples = defaultdict(list)
    for round_number in range(warmup + rounds):
        measured = {FLOOR: await timed(floor_run(floor))}
        started = time.perf_counter()
        state = await bare.suspend()
        measured[f"{BARE}: suspend"] = elapsed_ms(started)
        measured[f"{BARE}: resume"] = await timed(bare.resume(state))
        for store in made:
            measured[approving(store.name)] = await timed(store.approved())
            measured[stepped(store.name)] = await timed(store.approved(STEPPED_PROGRAM))
            started = time.perf_counter()
            suspension_id = await store.suspend()
            measured[f"{store.name}: suspend"] = elapsed_ms(started)
            measured[f"{store.name}: resume"] = await timed(store.resume(suspension_id))
        if round_number >= warmup:
            for scenario, sample in measured.items():
                samples[scenario].append(sample)
    return samples


def both(samples: Samples, pauser: str) -> list[float]:
    """Suspend + resume of each round."""
    return [s + r for s, r in zip(samples[f"{pauser}: suspend"], samples[f"{pauser}: resume"], strict=True)]


def latency_table(samples: Samples, made: Sequence[Store]) -> None:
    """Print each scenario's median, p99 and median ratio to floor (a), then what pausing adds."""
    floor = statistics.median(samples[FLOOR])

    def row(label: str, values: list[float]) -> None:
        median = statistics.median(values)
        print(f"{label:<40} {median:8.3f} {percentile(values, 0.99):8.3f} {median / floor:6.2f}")

    print(f"{'scenario':<40} {'p50':>8} {'p99':>8} {'ratio':>6}")
    row(FLOOR, samples[FLOOR])
    for pauser in (BARE, *(store.name for store in made)):
        if pauser != BARE:
            row(approving(pauser), samples[approving(pauser)])
            row(stepped(pauser), samples[stepped(pauser)])
        row(f"{pauser}: suspend", samples[f"{pauser}: suspend"])
        row(f"{pauser}: resume", samples[f"{pauser}: resume"])
        row(f"{pauser}: suspend + resume", both(samples, pauser))
    print("\nwhat pausing adds: median of suspend + resume less a floor's median (ms)")
    print(f"{'store':<10} {'- (a)':>8} {'- (b)':>8}")
    for store in made:
        paired = statistics.median(both(samples, store.name))
        print(
            f"{store.name:<10} {paired - floor:8.3f} {paired - statistics.median(samples[approving(store.name)]):8.3f}"
        )


# --------------------------------------------------------------------------------------
# The record, and the store's share
# --------------------------------------------------------------------------------------


async def sample_record(store: Store) -> SuspensionRecord:
    """The sealed record of one suspension of the program, as the store keeps it (then resumed)."""
    suspension_id = await store.suspend()
    stored = await store.suspensions.store.get(suspension_id)
    record = await store.suspensions.unseal(stored) if stored is not None else None
    if record is None:
        raise SystemExit(f"{store.name}: the stored suspension {suspension_id} cannot be read back")
    await store.resume(suspension_id)
    return record


async def store_share(store: Store, record: SuspensionRecord, runs: int) -> tuple[list[float], list[float]]:
    """The store's ``put`` of a sealed record, and a resume's ``get`` + ``claim`` of it (ms), nothing else."""
    backend = store.suspensions.store
    puts, takes = [], []
    for _ in range(runs):
        fresh = replace(record, id=store.suspensions.new_id())
        sealed = await store.suspensions.seal(fresh)
        puts.append(await timed(backend.put(sealed, max_per_session=MAX_HELD)))
        started = time.perf_counter()
        await backend.get(sealed.id)
        # A resume seals the tombstone the claim leaves in the record's place.
        if await backend.claim(sealed.id, now=now(), tombstone=store.suspensions.tombstone(fresh)) is None:
            raise SystemExit(f"{store.name}: a record just put cannot be claimed")
        takes.append(elapsed_ms(started))
    return puts, takes


async def at_the_bound(sealed: StoredSuspension, held: int, runs: int) -> dict[str, tuple[float, float]]:
    """Each store operation a run or the approvals page makes, on a ``MemorySuspensions`` holding
    ``held`` small suspensions of other sessions and on one holding as many as the page lists
    (ms, medians of ``runs``)."""
    medians = {}
    others = [replace(sealed, id=f"other-{number}", session_id=f"other-{number}", record=b"") for number in range(held)]
    # Bounded at what it holds and the runs' own: full, whatever ``held`` (the default bound fits about 190,000).
    filled = MemorySuspensions(max_bytes=sum(map(_size, others)) + runs * _size(replace(sealed, id=f"mine-{runs}")))
    small = MemorySuspensions()
    for backend, count in ((filled, held), (small, LISTED)):
        for other in others[:count]:
            await backend.put(other, max_per_session=MAX_HELD)
    for backend in (filled, small):
        times: dict[str, list[float]] = defaultdict(list)
        for number in range(runs):
            mine = replace(sealed, id=f"mine-{number}")
            times["put"].append(await timed(backend.put(mine, max_per_session=runs)))
            times["find"].append(await timed(backend.find(mine.session_id, mine.tool_call_id or "")))
            times[f"undecided ({LISTED})"].append(await timed(backend.undecided(now=now(), limit=LISTED)))
            times["claim"].append(await timed(backend.claim(mine.id, now=now(), tombstone=b"")))
            times["purge (none expired)"].append(await timed(backend.purge_expired(now=now())))
        for name, samples in times.items():
            medians[name] = (*medians.get(name, ()), statistics.median(samples))
    return medians  # type: ignore[return-value]  # each name got a median from both stores


# --------------------------------------------------------------------------------------
# Host memory per suspended run
# --------------------------------------------------------------------------------------


async def hold_and_release(store: Store, count: int, measure: Callable[[], int]) -> tuple[float, float]:
    """Bytes per suspended run while ``count`` are held, and per run once they are all resumed."""
    gc.collect()
    before = measure()
    held = [await store.suspend() for _ in range(count)]
    gc.collect()
    holding = measure()
    for suspension_id in held:
        await store.resume(suspension_id)
    del held
    gc.collect()
    after = measure()
    return (holding - before) / count, (after - before) / count


def traced() -> int:
    return tracemalloc.get_traced_memory()[0]


def resident() -> int:
    return rss_bytes() or 0


async def memory_per_run(store: Store, count: int) -> dict[str, tuple[float, float]]:
    """Host bytes per suspended run held in ``store``: ``VmRSS``, then tracemalloc, each its own pass."""
    measured = {"RSS": await hold_and_release(store, count, resident)}
    tracemalloc.start()
    try:
        measured["tracemalloc"] = await hold_and_release(store, count, traced)
    finally:
        tracemalloc.stop()
    return measured


# --------------------------------------------------------------------------------------
# Event-loop stall
# --------------------------------------------------------------------------------------


async def stalls(floor: Lease, made: Sequence[Store], runs: int) -> dict[str, list[float]]:
    """Gaps of a 1 ms ticker (ms): over the floor's runs, then per store over a pass of suspends and one of resumes."""
    ticker = Ticker(beats=False)
    ticking = asyncio.create_task(ticker.run())
    try:
        ticker.open()
        for _ in range(runs):
            await floor_run(floor)
        gaps = {"(a) approved at once, no suspensions": ticker.close()}
        for store in made:
            ticker.open()
            held = [await store.suspend() for _ in range(runs)]
            gaps[f"{store.name}: suspend"] = ticker.close()
            ticker.open()
            for suspension_id in held:
                await store.resume(suspension_id)
            gaps[f"{store.name}: resume"] = ticker.close()
    finally:
        ticking.cancel()
    return gaps


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


def verdict(samples: Samples) -> None:
    """The issues' targets: suspend + resume end to end and what pausing adds to each floor (issue 11);
    what being able to pause costs a run that does not pause, against the fed run (issue 24)."""
    sqlite = statistics.median(both(samples, "sqlite"))
    floor = statistics.median(samples[FLOOR])
    print(f"\ntarget (issue 11): suspend + resume on SQLite under {TARGET_MS:.0f} ms at the median, 10 completed calls")
    for label, value in (
        ("end to end, the 10 calls included", sqlite),
        ("added to (a), approving at once", sqlite - floor),
        ("added to (b), the same run not pausing", sqlite - statistics.median(samples[approving("sqlite")])),
    ):
        print(f"  {label:<38} {value:8.3f} ms  {'PASS' if value < TARGET_MS else 'MISS'}")
    bare = statistics.median(both(samples, BARE))
    print(f"  for scale: (a) alone {floor:.3f} ms; (c) bare Monty pausing and resuming, no store: {bare:.3f} ms")
    print(f"target (issue 24): a run that may pause and does not, at most {TARGET_RATIO}x (a) at the median")
    for label, scenario in (("(b) this program: fed", approving), ("(b') a program that must be stepped", stepped)):
        for store in ("memory", "sqlite", "postgres"):
            ratio = statistics.median(samples[scenario(store)]) / floor
            print(f"  {label + ', ' + store:<46} {ratio:6.2f}x  {'PASS' if ratio <= TARGET_RATIO else 'MISS'}")


async def main(arguments: argparse.Namespace) -> None:
    started = time.perf_counter()
    sandbox = SharedSandbox(MontySandbox())
    with tempfile.TemporaryDirectory(prefix="mycelium-bench-suspend-") as folder:
        async with AsyncExitStack() as stack:
            stack.push_async_callback(sandbox.aclose)
            floor_runtime = await stack.enter_async_context(
                Runtime(modules=[shop_module()], sandbox=sandbox, access=Access(confirm=approve))
            )
            floor = await stack.enter_async_context(floor_runtime.lease())
            made = await stack.enter_async_context(stores(sandbox, Path(folder)))
            bare = BareMonty(await stack.enter_async_context(AsyncMonty(min_processes=1)))
            by_name = {store.name: store for store in made}

            print(
                f"latency, {arguments.rounds} rounds after {arguments.warmup} to warm up; "
                "10 completed calls, then the confirm call (ms)"
            )
            samples = await latency(floor, bare, made, arguments.rounds, arguments.warmup)
            latency_table(samples, made)

            print(f"\nthe store alone, on the same sealed record, {arguments.store_runs} runs (ms)")
            print(
                f"{'store':<10} {'record B':>9} {'state B':>8} {'put p50':>8} {'put p99':>8} "
                f"{'get+claim p50':>14} {'p99':>8}"
            )
            sealed: dict[str, StoredSuspension] = {}
            for store in made:
                record = await sample_record(store)
                sealed[store.name] = await store.suspensions.seal(record)
                size = len(sealed[store.name].record)
                puts, takes = await store_share(store, record, arguments.store_runs)
                print(
                    f"{store.name:<10} {size:9,} {len(record.state):8,} {statistics.median(puts):8.3f} "
                    f"{percentile(puts, 0.99):8.3f} {statistics.median(takes):14.3f} {percentile(takes, 0.99):8.3f}"
                )

            print(
                f"\nthe memory store at its bound: {arguments.full:,} small suspensions of other sessions held "
                f"against {LISTED}, {arguments.store_runs} runs (ms)"
            )
            print(f"{'operation':<22} {'full p50':>9} {'small p50':>10} {'ratio':>6}")
            full = await at_the_bound(sealed["memory"], arguments.full, arguments.store_runs)
            for operation, (held, few) in full.items():
                print(f"{operation:<22} {held:9.4f} {few:10.4f} {held / few:6.2f}")

            print(f"\nhost memory per suspended run, {arguments.held:,} held in the memory store (bytes)")
            for method, (holding, after) in (await memory_per_run(by_name["memory"], arguments.held)).items():
                print(f"{method:<12} held {holding:10,.0f}   after resuming them all {after:8,.0f}")

            print(f"\nevent-loop stall: gaps of a 1 ms ticker over {arguments.stall_runs} runs each (ms)")
            print(f"{'pass':<40} {'max':>8} {'p99':>8}")
            for label, gaps in (await stalls(floor, made, arguments.stall_runs)).items():
                print(f"{label:<40} {max(gaps):8.3f} {percentile(gaps, 0.99):8.3f}")

    verdict(samples)
    print(f"total {time.perf_counter() - started:.0f} s")
    await asyncio.sleep(0.05)  # let Monty's threads finish before the loop ends


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a short run: fewer rounds, runs and held suspensions")
    for name, (meaning, full, quick) in COUNTS.items():
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=int, help=f"{meaning} (default {full}; {quick} with --quick)"
        )
    arguments = parser.parse_args()
    for name, (_, full, quick) in COUNTS.items():
        if getattr(arguments, name) is None:
            setattr(arguments, name, quick if arguments.quick else full)
    asyncio.run(main(arguments))
