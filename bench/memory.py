"""Host memory per execute, and the host event loop's worst stall under hostile programs.

1. **RSS growth per execute.** A small program calling one operation (``return await
   <module>.<operation>()``) runs N times (10,000 by default) through the real ``Runtime`` and
   ``MontySandbox``, over a generated catalog of 100 modules x 10 operations
   (``bench/catalogs.py``): once with one lease for every execute (the common host pattern),
   once with a lease per execute. Beside them, the floor: bare pydantic-monty (an ``AsyncMonty``
   pool, one external function, the same kind of program). RSS is ``VmRSS`` from
   ``/proc/self/status`` after ``gc.collect()``, read after a warm-up (1,000 executes) and after
   the run; the growth of ``len(gc.get_objects())`` is printed beside it (it points at leaks).
2. **Event-loop stall.** A ticker task sleeps 1 ms in a loop; a stall is the time between two of
   its ticks. 20 hostile programs (huge discovery queries, shared-reference results and
   arguments, 50 MB arguments, deep nesting, cycles, a busy loop, a print loop, many concurrent
   calls, a huge int...) run under a 2 s timeout, first one after another, then all at once.
   Printed: each program's outcome (failure code) and duration, the stall's max and p99, and the
   host RSS before and after. The concurrent pass is set beside a control: 20 ``while True:
   pass`` at once, nothing hostile in them: the stall of the host's own work to start and stop
   20 runs at once, plus 20 busy workers contending for the 2 cores.

Each measurement runs in its own child process, so that a blocked event loop or a leak cannot
hang or sink the bench: a hostile program that does not finish within ``--guard`` seconds (60)
is killed with its host and reported as stalled (with how long its event loop was seen silent),
and a child whose RSS passes ``--rss-cap-mib`` is killed. A memory phase stops early (and says
so) when its RSS has grown by ``--rss-budget-mib`` or it has run ``--phase-seconds``.

    .venv/bin/python bench/memory.py                       # the full run
    .venv/bin/python bench/memory.py --executes 1000 --warmup 100 --skip-concurrent   # quick

Targets (issue 9): < 1 KiB RSS growth per execute (one lease), < 50 ms max stall. The bench
reports; it always exits 0. On the 2-core build machine the full run takes about 75 s (15-20 s
per memory phase, about 30 s for the hostile passes); before the hardening it took 4 minutes
(the memory phases stopped at their RSS budget, hosts were killed by the guard).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic_monty
from catalogs import generated_catalog
from pydantic_monty import AsyncMonty, ExternalModule
from stats import percentile

import mycelium
from mycelium import ExecutionOptions, Lease, Module, Operation, Runtime
from mycelium.sandbox.monty import MontySandbox

KIB = 1024
MIB = 1024 * KIB
RSS_TARGET_BYTES = KIB
RATIO_FLOOR_BYTES = 64  # below this the floor's growth is allocator noise
STALL_TARGET_MS = 50.0
TICK_SECONDS = 0.001
BEAT_SECONDS = 0.1  # how often a host says it is alive; a silent host has a blocked loop
BLOCKED_MS = 1_000.0  # a host silent this long (ten missed beats) had its event loop blocked
GUARD_POLL_SECONDS = 0.2
MIN_MEASURED = 100  # executes after the warm-up worth a figure; fewer, and the warm-up is counted in
CHILD_SLACK_SECONDS = 120.0  # start-up, catalog, pool and close, beyond a memory phase's own budget

# The hostile programs: each either fails fast with a typed failure or is stopped by the
# deadline; none may hold the host's event loop for long.
HOSTILE: dict[str, str] = {
    "discovery: 75 MB query": "return await forage.search('ab ' * 25_000_000)",
    "discovery: 10 gathered 6 MB queries": (
        "import asyncio\nq = 'ab ' * 2_000_000\nreturn await asyncio.gather(*[forage.search(q) for _ in range(10)])"
    ),
    "discovery: 30 MB one-word query": "return await forage.search('x' * 30_000_000)",
    "discovery: 10 MB describe path": "return await forage.describe('a.' * 5_000_000)",
    "discovery: 5,000 gathered searches": (
        "import asyncio\nfound = await asyncio.gather(*[forage.search('list invoices') for _ in range(5_000)])\n"
        "return len(found)"
    ),
    "result: shared references": "a = [0] * 1000\nb = [a] * 1000\nreturn [b] * 60",
    "result: 100 MB string": "return 'x' * 100_000_000",
    "result: 5 million ints": "return list(range(5_000_000))",
    "result: nested 100,000 deep": "x = []\nfor _ in range(100_000):\n    x = [x]\nreturn x",
    "result: cyclic list": "a = []\na.append(a)\nreturn a",
    "result: huge int": "return 7 ** 2_000_000",
    "argument: 50 MB string": "return await notes.create(text='x' * 50_000_000)",
    "argument: 10 gathered 6 MB strings": (
        "import asyncio\nreturn await asyncio.gather(*[notes.create(text='x' * 6_000_000) for _ in range(10)])"
    ),
    "argument: shared references": "a = [0] * 1000\nb = [a] * 1000\nreturn await notes.create(text=[b] * 60)",
    "argument: nested 100,000 deep": (
        "x = []\nfor _ in range(100_000):\n    x = [x]\nreturn await notes.create(text=x)"
    ),
    "argument: cyclic dict": "a = {}\na['a'] = a\nreturn await notes.create(text=a)",
    "calls: 9,000 concurrent": (
        "import asyncio\nfound = await asyncio.gather(*[notes.search(query='q') for _ in range(9_000)])\n"
        "return len(found)"
    ),
    "cpu: while True": "while True:\n    pass",
    "output: print loop": "while True:\n    print('x' * 10_000)",
    "exception: 50 MB message": "raise ValueError('x' * 50_000_000)",
}
BUSY = "cpu: while True"
WARM_PROGRAM = "found = await notes.search(query='warm')\nreturn [found, await forage.search('list invoices')]"


# --------------------------------------------------------------------------------------
# Shared by parent and children
# --------------------------------------------------------------------------------------


def rss_bytes(pid: int | str = "self") -> int | None:
    """``VmRSS`` of a process, or ``None`` once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * KIB
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def emit(**fields: object) -> None:
    """One JSON line to the parent."""
    print(json.dumps(fields), flush=True)


def one_call_program(modules: Sequence[Module]) -> str:
    """A program calling a read operation of the first module that needs no input."""
    for module in modules:
        for key, op in module.operations.items():
            if isinstance(op, Operation) and op.access == "read" and not op.input_schema.get("required"):
                return f"return await {module.name}.{key}()"
    raise SystemExit("the generated catalog has no read operation without required input")


# --------------------------------------------------------------------------------------
# Child: RSS growth per execute
# --------------------------------------------------------------------------------------


@dataclass
class Reading:
    rss: int
    objects: int

    @classmethod
    def take(cls) -> Reading:
        gc.collect()
        return cls(rss=rss_bytes() or 0, objects=len(gc.get_objects()))


async def grow(run_once: Callable[[int], Awaitable[str | None]], arguments: argparse.Namespace) -> dict[str, object]:
    """Run ``run_once`` warm-up + N times; RSS and gc objects per execute after the warm-up."""
    failure = await run_once(0)
    if failure is not None:
        return {"failure": failure}
    for index in range(1, 10):  # the pool, the revision and the caches settle
        await run_once(index)
    first = Reading.take()
    first_at = time.perf_counter()
    baseline = first if arguments.warmup == 0 else None
    total, done, failures, stopped = arguments.warmup + arguments.executes, 0, 0, None
    budget = arguments.rss_budget_mib * MIB
    deadline = first_at + arguments.phase_seconds
    timed_from = first_at
    while done < total:
        if await run_once(10 + done) is not None:
            failures += 1
        done += 1
        if done == arguments.warmup:
            baseline = Reading.take()
            timed_from = time.perf_counter()
        if done % 100 == 0:
            if (rss_bytes() or 0) - first.rss > budget:
                stopped = f"stopped after {done:,} executes: RSS grew by more than {arguments.rss_budget_mib} MiB"
                break
            if time.perf_counter() > deadline:
                stopped = f"stopped after {done:,} executes: the phase ran {arguments.phase_seconds:g} s"
                break
    finished_at = time.perf_counter()
    end = Reading.take()
    measured = done - arguments.warmup
    if baseline is None or measured < MIN_MEASURED:  # stopped in (or just after) the warm-up
        baseline, measured, timed_from = first, max(done, 1), first_at
        stopped = f"{stopped or 'a short run'}; measured from the 10th execute, warm-up included"
    seconds = finished_at - timed_from
    return {
        "executes": measured,
        "ms_per_execute": seconds * 1000 / measured,
        "rss_per_execute": (end.rss - baseline.rss) / measured,
        "objects_per_execute": (end.objects - baseline.objects) / measured,
        "rss_before": baseline.rss,
        "rss_after": end.rss,
        "failures": failures,
        "stopped": stopped,
    }


async def mycelium_growth(arguments: argparse.Namespace) -> dict[str, object]:
    modules = generated_catalog(arguments.modules, arguments.operations)
    code = one_call_program(modules)

    async def failure_text(lease: Lease, index: int) -> str | None:
        result = await lease.execute_tool.run(code, tool_call_id=f"call-{index}")
        return result.text if result.is_error else None

    async with Runtime(modules=modules, sandbox=MontySandbox()) as runtime:
        if arguments.side == "lease-per-execute":

            async def lease_each_time(index: int) -> str | None:
                async with runtime.lease() as lease:
                    return await failure_text(lease, index)

            return {"program": code, **await grow(lease_each_time, arguments)}
        async with runtime.lease() as held:
            return {"program": code, **await grow(functools.partial(failure_text, held), arguments)}


async def bare_growth(arguments: argparse.Namespace) -> dict[str, object]:
    async def ping() -> dict[str, str]:
        return {"value": "pong"}

    modules = {"demo": ExternalModule({"ping": ping})}
    program = "import demo\nawait demo.ping()"
    async with AsyncMonty(min_processes=1, max_checkouts_per_worker=100) as pool:

        async def run_once(index: int) -> str | None:
            async with pool.checkout(external_modules=modules) as session:
                await session.feed_run(program)
            return None

        measured = await grow(run_once, arguments)
    await asyncio.sleep(0.05)  # closing the pool and ending the loop at once can abort the interpreter
    return {"program": program.replace("\n", "; "), **measured}


# --------------------------------------------------------------------------------------
# Child: hostile programs and the event-loop ticker
# --------------------------------------------------------------------------------------


class Ticker:
    """Ticks every millisecond; records the gaps between ticks while a window is open.

    A window counts only its own time: opening it restarts the current gap, and closing it
    counts the gap still open (a stall that ends with the window would otherwise be missed:
    the ticker only wakes after the code that closes the window).
    """

    def __init__(self, *, beats: bool) -> None:
        self.gaps: list[float] | None = None
        self._beats = beats
        self._beat = 0.0
        self._tick = time.perf_counter()

    def open(self) -> None:
        self.gaps = []
        self._tick = time.perf_counter()

    def close(self) -> list[float]:
        gaps, self.gaps = self.gaps or [], None
        gaps.append((time.perf_counter() - self._tick) * 1000)
        return gaps

    async def run(self) -> None:
        while True:
            self._tick = time.perf_counter()
            await asyncio.sleep(TICK_SECONDS)
            now = time.perf_counter()
            if self.gaps is not None:
                self.gaps.append((now - self._tick) * 1000)
            if self._beats and now - self._beat >= BEAT_SECONDS:
                self._beat = now
                emit(event="beat")


def notes_module() -> Module:
    notes = Module(id="bench-notes", name="notes", description="Notes kept by the bench host")

    @notes.operation(access="read")
    async def search(query: str) -> list[str]:
        """Find notes mentioning the query."""
        return [f"note about {query[:20]}"]

    @notes.operation(access="write")
    async def create(text: str) -> dict[str, int]:
        """Create a note."""
        return {"id": 1, "length": len(text)}

    return notes


async def hostile(arguments: argparse.Namespace) -> None:
    names = list(HOSTILE)
    chosen = [names[int(index)] for index in arguments.programs.split(",")]
    width = len(chosen) if arguments.concurrent else None
    runtime = Runtime(
        modules=[*generated_catalog(arguments.modules, arguments.operations), notes_module()],
        sandbox=MontySandbox(pool_size=width),
        execution=ExecutionOptions(timeout_ms=arguments.timeout_ms, sandbox_capacity=width),
    )
    ticker = Ticker(beats=True)
    ticking = asyncio.create_task(ticker.run())
    async with runtime, runtime.lease() as lease:

        async def run(position: int, name: str) -> None:
            emit(event="start", position=position)
            started = time.perf_counter()
            try:
                result = await lease.execute_tool.run(HOSTILE[name], tool_call_id=f"hostile-{position}")
                # A success is shown with its text: some hostile values come back silently changed.
                outcome = f"ok {result.text[:24]}" if result.failure is None else result.failure.code
            except Exception as exc:  # a host bug: the bench reports it and goes on
                outcome = f"raised {type(exc).__name__}"
            emit(event="done", position=position, outcome=outcome, seconds=time.perf_counter() - started)

        # As many warm-up runs at once as the pass will make, so that every worker process is
        # started before the ticker counts: starting workers is not what is measured.
        warm = await asyncio.gather(
            *(lease.execute_tool.run(WARM_PROGRAM, tool_call_id=f"warm-{n}") for n in range(width or 1))
        )
        failed = [result.text for result in warm if result.is_error]
        if failed:
            emit(event="warning", text=f"{len(failed)} warm-up runs failed: {failed[0]}")
        before = Reading.take().rss
        emit(event="ready", rss=before)
        if arguments.concurrent:
            ticker.open()
            await asyncio.gather(*(run(position, name) for position, name in enumerate(chosen)))
            gaps = ticker.close()
            emit(event="window", max_gap_ms=max(gaps), p99_gap_ms=percentile(gaps, 0.99))
        else:
            for position, name in enumerate(chosen):
                ticker.open()
                await run(position, name)
                gaps = ticker.close()
                emit(event="window", position=position, max_gap_ms=max(gaps), p99_gap_ms=percentile(gaps, 0.99))
                emit(event="rss", position=position, rss=Reading.take().rss)
        emit(event="end", rss=Reading.take().rss)
    ticking.cancel()


async def idle_stall(seconds: float) -> list[float]:
    """The ticker's gaps on an idle loop: this machine's floor."""
    ticker = Ticker(beats=False)
    ticking = asyncio.create_task(ticker.run())
    ticker.open()
    await asyncio.sleep(seconds)
    ticking.cancel()
    return ticker.close()


def child(arguments: argparse.Namespace) -> None:
    # A host logs failures; where the lines go is not what is measured, so they go nowhere.
    logging.basicConfig(level=logging.WARNING, stream=open(os.devnull, "w"))  # noqa: SIM115
    if arguments.role == "memory":
        runner = bare_growth if arguments.side == "bare" else mycelium_growth
        emit(event="result", **asyncio.run(runner(arguments)))
    else:
        asyncio.run(hostile(arguments))


# --------------------------------------------------------------------------------------
# Parent: start children, guard them, print
# --------------------------------------------------------------------------------------


@dataclass
class ChildRun:
    """What one child said, and how it ended."""

    events: list[dict[str, Any]] = field(default_factory=list)
    killed: str | None = None
    overran: bool = False
    """Killed because its current step (a program) ran past the guard."""
    longest_silence: float = 0.0
    """The longest time the parent heard nothing (a lower bound on a stall once a host is killed)."""
    final_silence: float = 0.0
    """How long the parent had heard nothing when the child was killed."""
    last_rss: int | None = None
    """The child's RSS at the parent's last look."""
    exit_code: int | None = None
    stderr_tail: str = ""

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == kind]


def child_command(arguments: argparse.Namespace, *extra: str) -> list[str]:
    shared = [
        f"--modules={arguments.modules}",
        f"--operations={arguments.operations}",
        f"--timeout-ms={arguments.timeout_ms}",
    ]
    return [sys.executable, os.path.abspath(__file__), *shared, *extra]


async def run_child(
    command: list[str], *, cap_bytes: int, quiet_limit: Callable[[ChildRun], float | None], total_limit: float
) -> ChildRun:
    """Run a child in its own process group; kill the group when a guard trips.

    ``quiet_limit`` says, after each event, how long the child may stay without finishing its
    current step (``None``: no limit beyond ``total_limit``).
    """
    outcome = ChildRun()
    with _TempText() as stderr:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr.file,
            start_new_session=True,
        )
        assert process.stdout is not None
        started = last_heard = step_started = time.monotonic()
        limit = quiet_limit(outcome)
        pending_line: asyncio.Task[bytes] | None = None
        try:
            while True:
                if pending_line is None:
                    pending_line = asyncio.ensure_future(process.stdout.readline())
                done, _ = await asyncio.wait({pending_line}, timeout=GUARD_POLL_SECONDS)
                now = time.monotonic()
                if done:
                    line = pending_line.result()
                    pending_line = None
                    if not line:
                        break
                    outcome.longest_silence = max(outcome.longest_silence, now - last_heard)
                    last_heard = now
                    event = json.loads(line)
                    if event["event"] != "beat":
                        outcome.events.append(event)
                        if event["event"] in ("start", "ready"):
                            step_started = now
                        limit = quiet_limit(outcome)
                # Checked after every line too: a host that keeps beating may still run too long or grow.
                rss = rss_bytes(process.pid)
                outcome.last_rss = rss or outcome.last_rss
                if rss is not None and rss > cap_bytes:
                    outcome.killed = f"host RSS passed {cap_bytes // MIB:,} MiB"
                elif limit is not None and now - step_started > limit:
                    outcome.killed, outcome.overran = f"did not finish within {limit:g} s", True
                elif now - started > total_limit:
                    outcome.killed = f"the child ran longer than {total_limit:g} s"
                if outcome.killed:
                    outcome.final_silence = now - last_heard
                    outcome.longest_silence = max(outcome.longest_silence, outcome.final_silence)
                    os.killpg(process.pid, signal.SIGKILL)
                    break
        finally:
            if pending_line is not None:
                pending_line.cancel()
            outcome.exit_code = await process.wait()
        outcome.stderr_tail = stderr.tail()
    return outcome


class _TempText:
    """A temporary file for a child's stderr, read back (its tail) when the child fails."""

    def __enter__(self) -> _TempText:
        import tempfile

        self.file = tempfile.TemporaryFile()
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def tail(self, limit: int = 1_500) -> str:
        self.file.seek(0, os.SEEK_END)
        size = self.file.tell()
        self.file.seek(max(0, size - limit))
        return self.file.read().decode("utf-8", "replace").strip()


def explain_failure(run: ChildRun) -> str:
    if run.killed:
        return f"killed: {run.killed}"
    tail = run.stderr_tail.splitlines()[-1:] or ["no output"]
    return f"the child exited with {run.exit_code}: {tail[0][:200]}"


@dataclass
class Growth:
    label: str
    rss_per_execute: float | None = None
    objects_per_execute: float | None = None
    note: str = ""


async def memory_section(arguments: argparse.Namespace) -> list[Growth]:
    print(
        f"RSS growth per execute: {arguments.modules} modules x {arguments.operations} operations, "
        f"{arguments.executes:,} executes after a warm-up of {arguments.warmup:,}",
        flush=True,
    )
    print(
        f"{'side':<28} {'executes':>9} {'ms/exec':>8} {'RSS B/exec':>11} {'gc objs/exec':>13} "
        f"{'RSS before':>11} {'RSS after':>10}"
    )
    results: list[Growth] = []
    for side, label in (
        ("lease", "mycelium, one lease"),
        ("lease-per-execute", "mycelium, lease per execute"),
        ("bare", "bare pydantic-monty (floor)"),
    ):
        run = await run_child(
            child_command(
                arguments,
                "--role=memory",
                f"--side={side}",
                f"--executes={arguments.executes}",
                f"--warmup={arguments.warmup}",
                f"--rss-budget-mib={arguments.rss_budget_mib}",
                f"--phase-seconds={arguments.phase_seconds}",
            ),
            cap_bytes=arguments.rss_cap_mib * MIB,
            quiet_limit=lambda _: None,
            total_limit=arguments.phase_seconds + CHILD_SLACK_SECONDS,
        )
        found = run.of("result")
        if not found:
            print(f"{label:<28} {explain_failure(run)}", flush=True)
            results.append(Growth(label, note=explain_failure(run)))
            continue
        result = found[0]
        if "failure" in result:
            print(f"{label:<28} every execute fails: {result['failure'][:160]}", flush=True)
            results.append(Growth(label, note="the program fails"))
            continue
        print(
            f"{label:<28} {result['executes']:>9,} {result['ms_per_execute']:>8.2f} "
            f"{result['rss_per_execute']:>11,.0f} {result['objects_per_execute']:>13,.2f} "
            f"{result['rss_before'] / MIB:>9.0f} M {result['rss_after'] / MIB:>8.0f} M",
            flush=True,
        )
        notes = [note for note in (result["stopped"], result["failures"] and f"{result['failures']} failed") if note]
        for note in notes:
            print(f"{'':<28} {note}")
        results.append(Growth(label, result["rss_per_execute"], result["objects_per_execute"], "; ".join(notes)))
        if side == "lease":
            print(f"{'':<28} program: {result['program']}")
    floor = results[-1].rss_per_execute
    for growth in results[:-1]:
        if growth.rss_per_execute is not None and floor is not None:
            # A floor of a few bytes is noise: a ratio to it would mean nothing.
            ratio = f"ratio {growth.rss_per_execute / floor:,.1f}x" if floor >= RATIO_FLOOR_BYTES else "no ratio"
            print(f"{growth.label} - floor: {growth.rss_per_execute - floor:,.0f} B/execute ({ratio})")
    print(flush=True)
    return results


@dataclass
class Stall:
    label: str
    max_ms: float | None = None
    p99_ms: float | None = None
    lower_bound: bool = False
    """``max_ms`` is only what the parent saw: the host was killed before it could say more."""

    def shown(self) -> str:
        if self.max_ms is None:
            return "n/a"
        return f"> {self.max_ms:,.0f} ms" if self.lower_bound else f"{self.max_ms:,.1f} ms"


async def sequential_pass(arguments: argparse.Namespace, chosen: list[int]) -> Stall:
    names = list(HOSTILE)
    print(f"hostile programs one after another (timeout {arguments.timeout_ms} ms each, guard {arguments.guard:g} s)")
    print(f"{'program':<38} {'outcome':<22} {'seconds':>8} {'max stall':>11} {'p99 stall':>10} {'host RSS':>9}")
    remaining = list(chosen)
    worst: float | None = None
    seen_only = False  # the worst stall is a lower bound: the host was killed mid-stall
    p99s: list[float] = []
    while remaining:
        run = await run_child(
            child_command(arguments, "--role=hostile", f"--programs={','.join(map(str, remaining))}"),
            cap_bytes=arguments.rss_cap_mib * MIB,
            quiet_limit=lambda _: arguments.guard,
            total_limit=arguments.guard * (len(remaining) + 2),
        )
        for event in run.of("warning"):
            print(f"  warning: {event['text'][:200]}")
        ready = run.of("ready")
        if not ready:
            print(f"  the host did not start: {explain_failure(run)}", flush=True)
            break
        print(f"  host RSS before: {ready[0]['rss'] / MIB:,.0f} MiB")
        finished = {event["position"]: event for event in run.of("done")}
        windows = {event["position"]: event for event in run.of("window")}
        sizes = {event["position"]: event["rss"] for event in run.of("rss")}
        ran = 0
        while ran < len(remaining) and ran in finished and ran in windows:
            done, window = finished[ran], windows[ran]
            size = f"{sizes[ran] / MIB:,.0f} M" if ran in sizes else ""
            print(
                f"{names[remaining[ran]]:<38} {done['outcome']:<22} {done['seconds']:>8.2f} "
                f"{window['max_gap_ms']:>8,.1f} ms {window['p99_gap_ms']:>7,.1f} ms {size:>9}",
                flush=True,
            )
            p99s.append(window["p99_gap_ms"])
            if worst is None or window["max_gap_ms"] > worst:
                worst, seen_only = window["max_gap_ms"], False
            ran += 1
        if ran == len(remaining):
            end = run.of("end")
            print(f"  host RSS after: {end[0]['rss'] / MIB:,.0f} MiB" if end else f"  {explain_failure(run)}")
            break
        # The host was killed (or died) while running this program.
        silent = run.final_silence * 1000
        blocked = silent >= BLOCKED_MS
        if run.overran:
            outcome = f"{'stalled' if blocked else 'running'} > {arguments.guard:g} s"
        else:
            outcome = explain_failure(run)
        detail = f"> {silent:>6,.0f} ms (the host was seen silent)" if blocked else "(its event loop kept ticking)"
        print(f"{names[remaining[ran]]:<38} {outcome:<22} {'':>8} {detail}")
        if blocked and (worst is None or silent > worst):
            worst, seen_only = silent, True
        remaining = remaining[ran + 1 :]
        if remaining:
            print("  a new host runs the programs that remain", flush=True)
    stall = Stall("hostile programs one after another", worst, max(p99s) if p99s else None, lower_bound=seen_only)
    p99 = "n/a" if stall.p99_ms is None else f"{stall.p99_ms:,.1f} ms"
    print(f"worst stall: {stall.shown()}; worst p99 of one program: {p99}\n", flush=True)
    return stall


async def concurrent_pass(arguments: argparse.Namespace, chosen: list[int], label: str, *, itemize: bool) -> Stall:
    """Run ``chosen`` at once in one host; ``itemize`` prints each program's outcome."""
    names = list(HOSTILE)
    run = await run_child(
        child_command(arguments, "--role=hostile", "--concurrent", f"--programs={','.join(map(str, chosen))}"),
        cap_bytes=arguments.rss_cap_mib * MIB,
        quiet_limit=lambda outcome: arguments.guard if outcome.of("ready") else None,
        total_limit=arguments.guard + CHILD_SLACK_SECONDS,
    )
    finished = {event["position"]: event for event in run.of("done")}
    ready, end, window = run.of("ready"), run.of("end"), run.of("window")
    print(f"{label} (timeout {arguments.timeout_ms} ms each)")
    if ready:
        print(f"  host RSS before: {ready[0]['rss'] / MIB:,.0f} MiB")
    if itemize:
        for position, index in enumerate(chosen):
            done = finished.get(position)
            shown = f"{done['outcome']:<22} {done['seconds']:>8.2f}" if done else "did not finish"
            print(f"{names[index]:<38} {shown}")
    else:
        outcomes = sorted({event["outcome"] for event in finished.values()})
        print(f"  outcomes: {', '.join(outcomes) or 'none'}; {len(finished)} of {len(chosen)} finished")
    if window:
        stall = Stall(label, window[0]["max_gap_ms"], window[0]["p99_gap_ms"])
    elif ready:
        stall = Stall(label, run.longest_silence * 1000, None, lower_bound=True)
        print(f"  {explain_failure(run)}")
    else:
        print(f"  {explain_failure(run)}")
        return Stall(label)
    if end:
        print(f"  host RSS after: {end[0]['rss'] / MIB:,.0f} MiB")
    elif run.last_rss is not None:
        print(f"  host RSS when last seen: {run.last_rss / MIB:,.0f} MiB")
    p99 = "n/a" if stall.p99_ms is None else f"{stall.p99_ms:,.1f} ms"
    print(f"  max stall: {stall.shown()}; p99 stall: {p99}\n", flush=True)
    return stall


def summary(growth: list[Growth], stalls: list[Stall]) -> None:
    rows: list[tuple[str, str, str, str]] = []
    for item in growth:
        if item.label.startswith("bare"):
            continue
        measured = "n/a" if item.rss_per_execute is None else f"{item.rss_per_execute:,.0f} B"
        met = "n/a" if item.rss_per_execute is None else _met(item.rss_per_execute < RSS_TARGET_BYTES)
        rows.append((f"RSS growth per execute, {item.label.removeprefix('mycelium, ')}", measured, "< 1 KiB", met))
    for stall in stalls:
        met = "n/a" if stall.max_ms is None else _met(stall.max_ms < STALL_TARGET_MS and not stall.lower_bound)
        rows.append((f"max loop stall, {stall.label}", stall.shown(), "< 50 ms", met))
    print("summary")
    print(f"{'measure':<52} {'measured':>14} {'target':>9}  met")
    for name, measured, target, met in rows:
        print(f"{name:<52} {measured:>14} {target:>9}  {met}")


def _met(ok: bool) -> str:
    return "yes" if ok else "MISSED"


async def parent(arguments: argparse.Namespace) -> None:
    started = time.monotonic()
    print(
        f"mycelium from {os.path.dirname(mycelium.__file__)}, python {sys.version.split()[0]}, "
        f"pydantic-monty {pydantic_monty.__version__}, {os.cpu_count()} cores\n",
        flush=True,
    )
    growth = [] if arguments.skip_memory else await memory_section(arguments)
    stalls: list[Stall] = []
    if not arguments.skip_hostile:
        idle = await idle_stall(1.0)
        print(f"idle loop, 1 s: max stall {max(idle):.1f} ms, p99 {percentile(idle, 0.99):.1f} ms (the floor)\n")
        everything = list(range(len(HOSTILE)))
        stalls.append(await sequential_pass(arguments, everything))
        if not arguments.skip_concurrent:
            busy = [list(HOSTILE).index(BUSY)] * len(HOSTILE)
            control = await concurrent_pass(arguments, busy, f"control, {len(busy)} busy loops at once", itemize=False)
            stalls.append(await concurrent_pass(arguments, everything, "hostile programs at once", itemize=True))
            stalls.append(control)
    summary(growth, stalls)
    print(f"\nbench ran {time.monotonic() - started:,.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executes", type=int, default=10_000, help="measured executes per memory phase")
    parser.add_argument("--warmup", type=int, default=1_000, help="executes before the first RSS reading")
    parser.add_argument("--modules", type=int, default=100)
    parser.add_argument("--operations", type=int, default=10, help="operations per module")
    parser.add_argument("--timeout-ms", type=int, default=2_000, help="each hostile program's timeout")
    parser.add_argument("--guard", type=float, default=60.0, help="seconds before a hostile program's host is killed")
    parser.add_argument("--rss-budget-mib", type=int, default=1_024, help="a memory phase stops past this growth")
    parser.add_argument("--phase-seconds", type=float, default=60.0, help="a memory phase stops after this long")
    parser.add_argument("--rss-cap-mib", type=int, default=6_144, help="a child past this RSS is killed")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-hostile", action="store_true")
    parser.add_argument("--skip-concurrent", action="store_true")
    # How the bench runs its own children; not for people.
    parser.add_argument("--role", choices=("memory", "hostile"), help=argparse.SUPPRESS)
    parser.add_argument("--side", choices=("lease", "lease-per-execute", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--programs", help=argparse.SUPPRESS)
    parser.add_argument("--concurrent", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.role is not None:
        child(arguments)
    else:
        asyncio.run(parent(arguments))


if __name__ == "__main__":
    main()
