"""Red team: suspend and resume attacked by a hostile guest, an injected model and a store anyone may edit.

Each test is named after the rule it checks and pins an attack that fails: most of them
were findings of the red-team passes, fixed since.

Real parts only: Monty runs the programs, suspensions live in memory, in real SQLite
files or in the test session's PostgreSQL; "edited in the store" means changed through the
store's own methods, and "another writer" is a second connection holding a lock, as
someone with the database but without the host's key could.
"""

from __future__ import annotations

import asyncio
import gc
import math
import sqlite3
import time
import tracemalloc
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from mycelium import (
    AbortController,
    Access,
    ExecutionOptions,
    MemorySuspensions,
    Module,
    PostgresSuspensions,
    Runtime,
    SqliteSuspensions,
    StoredSuspension,
    Suspension,
    Suspensions,
    SuspensionStore,
    ToolResult,
    defer,
)
from mycelium._signals import AbortSignal
from mycelium.failures import Cancelled, DeadlineExceeded, SuspensionFailed, Unknown
from mycelium.sandbox.monty import MontySandbox

from .conftest import assert_nothing_leaks

KEY = b"the host's key, 32 bytes or so.."
OTHER_KEY = b"another server's key, misconfigd"
MIB = 1024 * 1024

# Three writes, a delete a person must approve, one more write.
CODE = """
a = await crm.create(title="one")
b = await crm.create(title="two")
c = await crm.create(title="three")
d = await crm.delete(id=2)
e = await crm.create(title="four")
return [a, b, c, d, e]
"""
BEFORE_THE_PAUSE = [("create", "one"), ("create", "two"), ("create", "three")]
FINISHED = [*BEFORE_THE_PAUSE, ("delete", 2), ("create", "four")]

# A confirm call per turn of a loop: each one pauses the run.
LOOP_OF_CONFIRMS = "n = 0\nfor i in range({n}):\n    await crm.delete(id=i)\n    n += 1\nreturn n"


class Crm:
    """The host under attack: every operation it ran, in order, and a call that never ends."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, object]] = []
        self.hanging = anyio.Event()
        self.hang_cancelled = anyio.Event()

    def module(self) -> Module:
        crm = Module(id="crm-v1", name="crm", description="Contacts")

        @crm.operation(access="write")
        async def create(title: str) -> dict[str, int]:
            """Add a contact."""
            self.ran.append(("create", title))
            return {"id": len(self.ran)}

        @crm.operation(access="write", confirm=True)
        async def delete(id: int) -> dict[str, int]:
            """Delete a contact; a person approves each call."""
            self.ran.append(("delete", id))
            return {"deleted": id}

        @crm.operation(access="write", confirm=True)
        async def put(data: Any) -> Any:
            """Store any JSON value; a person approves each call. Answers with what it stored."""
            self.ran.append(("put", data))
            return data

        @crm.operation(access="read")
        async def hang() -> str:
            """Never returns unless cancelled."""
            self.hanging.set()
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                self.hang_cancelled.set()
                raise
            return "never"

        return crm

    def writes(self) -> list[tuple[str, object]]:
        """What ran so far, in order."""
        return list(self.ran)


@pytest.fixture
async def crm() -> Crm:
    return Crm()


def runtime(
    crm: Crm,
    sandbox: MontySandbox,
    suspensions: Suspensions | None = None,
    **execution: Any,
) -> Runtime:
    """A host that defers every confirmation to a person who answers later."""
    return Runtime(
        modules=[crm.module()],
        sandbox=sandbox,
        access=Access(confirm=defer),
        suspensions=suspensions or Suspensions(),
        execution=ExecutionOptions(**execution) if execution else None,
    )


async def execute(
    runtime: Runtime, code: str = CODE, tool_call_id: str = "t1", signal: AbortSignal | None = None
) -> ToolResult:
    async with runtime.lease() as lease:
        return await lease.execute_tool.run(code, tool_call_id=tool_call_id, signal=signal)


async def suspend(runtime: Runtime, code: str = CODE, tool_call_id: str = "t1") -> Suspension:
    result = await execute(runtime, code, tool_call_id)
    assert result.suspension is not None, result.text
    return result.suspension


async def alter_row(store: SuspensionStore, suspension_id: str, change: Any) -> None:
    """Change a stored row as someone with the database, but without the key, could."""
    stored = await store.claim(suspension_id, now=time.time(), tombstone=b"")
    assert stored is not None
    assert await store.restore(change(stored))


def flip_last_state_byte(stored: StoredSuspension) -> StoredSuspension:
    body = bytearray(stored.record)
    body[-40] ^= 0x01  # inside the sandbox state, before the seal
    return StoredSuspension(
        stored.id, stored.session_id, stored.tool_call_id, stored.expires_at, bytes(body), stored.decision
    )


@asynccontextmanager
async def sqlite_store(path: Path, busy_timeout_ms: int = 1_000) -> AsyncIterator[SqliteSuspensions]:
    store = SqliteSuspensions(path, busy_timeout_ms=busy_timeout_ms)
    try:
        await store.purge_expired(now=0)  # makes the file and its table now, not under a lock later
        yield store
    finally:
        await store.aclose()


@contextmanager
def write_locked(path: Path) -> Iterator[None]:
    """Another process's write transaction holding the store's file."""
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            other.execute("ROLLBACK")


@dataclass
class SharedStore:
    """A store shared through a real database, and where that database is."""

    store: SqliteSuspensions | PostgresSuspensions
    kind: str
    where: str
    table: str = ""

    @asynccontextmanager
    async def write_locked(self) -> AsyncIterator[None]:
        """Another process's transaction holding off every write (reads go on)."""
        if self.kind == "sqlite":
            with write_locked(Path(self.where)):
                yield
            return
        import asyncpg

        other = await asyncpg.connect(self.where)
        try:
            async with other.transaction():
                await other.execute(f'LOCK TABLE "{self.table}" IN EXCLUSIVE MODE')
                yield
        finally:
            await other.close()


@asynccontextmanager
async def shared_store(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, busy_timeout_ms: int = 1_000
) -> AsyncIterator[SharedStore]:
    """A store in a real database (SQLite file or PostgreSQL table), made and ready."""
    if kind == "sqlite":
        async with sqlite_store(tmp_path / "s.db", busy_timeout_ms) as store:
            yield SharedStore(store, kind, str(tmp_path / "s.db"))
        return
    uri, table = request.getfixturevalue("postgres_uri"), request.getfixturevalue("postgres_table")
    store = PostgresSuspensions(uri, table=table)
    try:
        await store.purge_expired(now=0)  # makes the table now, not under a lock later
        yield SharedStore(store, kind, uri, table)
    finally:
        await store.aclose()


@contextmanager
def loop_errors() -> Iterator[list[str]]:
    """What reaches the event loop's exception handler ("Task exception was never retrieved", ...)."""
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    seen: list[str] = []
    loop.set_exception_handler(lambda _, context: seen.append(str(context.get("message"))))
    try:
        yield seen
    finally:
        loop.set_exception_handler(previous)


# -- attacks that failed (most were findings, fixed in 5b38911 .. 201ddf8) ------------------


@pytest.mark.parametrize("how", ["cancelled", "deadline"])
async def test_a_run_stopped_beside_a_deferred_call_leaves_no_unretrieved_exception(crm: Crm, how: str) -> None:
    code = "crm.delete(id=1)\nreturn await crm.hang()"  # the delete defers at once; the run then waits on hang
    async with (
        MontySandbox() as sandbox,
        runtime(crm, sandbox, timeout_ms=30_000 if how == "cancelled" else 500) as host,
    ):
        with loop_errors() as errors:
            async with anyio.create_task_group() as group:
                group.start_soon(execute, host, code)
                await crm.hanging.wait()
                if how == "cancelled":
                    group.cancel_scope.cancel()
            gc.collect()  # a task collected with its exception unretrieved reports it now
    assert crm.hang_cancelled.is_set()
    assert errors == []


async def test_an_execute_ends_within_its_timeout_even_when_a_sqlite_store_is_locked(crm: Crm, tmp_path: Path) -> None:
    async with sqlite_store(tmp_path / "s.db", busy_timeout_ms=5_000) as store, MontySandbox() as sandbox:
        async with runtime(
            crm, sandbox, Suspensions(store=store, key=KEY), timeout_ms=1_000, abort_grace_ms=500
        ) as host:
            with write_locked(tmp_path / "s.db"):
                started = time.monotonic()
                await execute(host, CODE)
                took = time.monotonic() - started
            await host.close()
    assert took < 3, f"an execute with a 1 s timeout took {took:.1f} s"


async def close_or_force(runtime: Runtime, within_s: float) -> bool:
    """Close ``runtime``; whether it closed within ``within_s``.

    A run that never settles would keep ``close()`` waiting forever and leave its task to a
    later test: it is cancelled through the runtime's task group (no public way exists).
    """
    with anyio.move_on_after(within_s) as waiting:
        await runtime.close()
    if waiting.cancelled_caught:
        assert runtime._running is not None
        runtime._running.tasks.cancel_scope.cancel()
        await runtime.close()
    return not waiting.cancelled_caught


@contextmanager
def collecting_what_never_started() -> Iterator[None]:
    """Collect, before the test ends, the calls a wedged run made but never started: their
    "never awaited" warnings belong to this test, not to whichever test collects them later."""
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            gc.collect()


LARGE_DEFERRED_CALLS = (
    "import asyncio\nbig = 'x' * 1000000\nreturn len(await asyncio.gather(*[crm.put(data=big) for i in range({n})]))"
)


@pytest.mark.parametrize("way", ["pause refused", "approved"])
async def test_a_guest_cannot_wedge_a_sandbox_slot_by_deferring_large_calls(crm: Crm, way: str) -> None:
    if way == "pause refused":  # defaults but the timeout: the record is over 16 MiB, so the run goes on at once
        code, limits = LARGE_DEFERRED_CALLS.format(n=20), {}
    else:  # paused, stored, then a person approves the first call
        code, limits = LARGE_DEFERRED_CALLS.format(n=3), {"max_inflight_input_bytes": 2 * MIB}
    with collecting_what_never_started():
        closed, failure = await run_large_deferred_calls(crm, code, limits)
    assert closed, "runtime.close() waited for a run that never settles"
    assert not isinstance(failure, DeadlineExceeded), failure


async def run_large_deferred_calls(crm: Crm, code: str, limits: dict[str, int]) -> tuple[bool, object]:
    """Run ``code`` (and resume it approved if it pauses); whether the runtime then closed, and the failure."""
    async with MontySandbox() as sandbox:
        async with runtime(crm, sandbox, timeout_ms=3_000, abort_grace_ms=300, **limits) as host:
            result = await execute(host, code)
            if result.suspension is not None:
                result = await host.resume(result.suspension.id, approved=True)
            return await close_or_force(host, within_s=5), result.failure


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_pause_the_store_could_not_confirm_ends_the_run_and_any_late_record_resumes_once(
    crm: Crm, tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    async with shared_store(kind, tmp_path, request) as shared, MontySandbox() as sandbox:
        async with runtime(crm, sandbox, Suspensions(store=shared.store, key=KEY, store_timeout_ms=300)) as host:
            async with shared.write_locked():
                result = await execute(host, CODE)
            # Whether the store kept the pause is unknown: going on could run the rest twice.
            assert result.failure is not None, result.text
            assert result.failure.code == "unknown", result.text
            assert crm.writes() == BEFORE_THE_PAUSE
            for late in await shared.store.find(None, "t1"):  # a write that landed after all is a real pause
                resumed = await host.resume(late.id, approved=True)
                assert not resumed.is_error, resumed.text
            await host.close()
    assert crm.writes() in (BEFORE_THE_PAUSE, FINISHED), "a write ran twice"


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_resume_stopped_while_it_claims_keeps_the_suspension(
    crm: Crm, tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    async with shared_store(kind, tmp_path, request, busy_timeout_ms=5_000) as shared, MontySandbox() as sandbox:
        suspensions = Suspensions(store=shared.store, key=KEY)
        async with runtime(crm, sandbox, suspensions, timeout_ms=1_500, abort_grace_ms=200) as host:
            suspension = await suspend(host)
            async with shared.write_locked():
                stopped = await host.resume(suspension.id, approved=True)
            await host.close()  # the claim's statement, then the stopped run, settle
            kept = await shared.store.get(suspension.id)
    assert isinstance(stopped.failure, DeadlineExceeded), stopped.text
    assert crm.writes() == BEFORE_THE_PAUSE
    assert kept is not None, "a resume that ran nothing lost the suspension"
    assert not kept.claimed, "a resume that ran nothing left the suspension claimed"


async def test_time_spent_trying_to_store_a_pause_counts_against_the_run(
    crm: Crm, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with shared_store("postgres", tmp_path, request) as shared, MontySandbox() as sandbox:
        async with runtime(
            crm, sandbox, Suspensions(store=shared.store, key=KEY), timeout_ms=1_000, abort_grace_ms=200
        ) as host:
            async with shared.write_locked():
                started = time.monotonic()
                await execute(host, LOOP_OF_CONFIRMS.format(n=4))
                took = time.monotonic() - started
            await host.close()
    assert took < 2.5, f"an execute with a 1 s timeout ran {took:.1f} s"


async def test_an_execute_ends_within_its_timeout_even_when_the_store_stalls_at_the_pause(
    crm: Crm, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with shared_store("postgres", tmp_path, request) as shared, MontySandbox() as sandbox:
        suspensions = Suspensions(store=shared.store, key=KEY, store_timeout_ms=8_000)
        async with runtime(crm, sandbox, suspensions, timeout_ms=1_000, abort_grace_ms=500) as host:
            async with shared.write_locked():
                started = time.monotonic()
                await execute(host, CODE)
                took = time.monotonic() - started
            await host.close()
    assert took < 3, f"an execute with a 1 s timeout took {took:.1f} s"


async def test_a_locked_sqlite_store_gives_up_within_its_busy_timeout(crm: Crm, tmp_path: Path) -> None:
    async with sqlite_store(tmp_path / "s.db", busy_timeout_ms=300) as store, MontySandbox() as sandbox:
        async with runtime(crm, sandbox, Suspensions(store=store, key=KEY)) as host:
            with write_locked(tmp_path / "s.db"):
                started = time.monotonic()
                result = await execute(host, CODE)
                took = time.monotonic() - started
            await host.close()
    assert result.failure is not None, result.text
    assert result.failure.code == "unknown", result.text  # the store could not say: the run ends there
    assert took < 3, f"the pause waited {took:.1f} s for a store that gives up after 0.3 s"


async def test_a_pause_that_cannot_be_kept_holds_no_copy_of_the_state_once_the_run_moved_on(crm: Crm) -> None:
    heap = 4 * MIB
    code = f"x = 'a' * {heap}\n" + LOOP_OF_CONFIRMS.format(n=20)
    async with MontySandbox() as sandbox, runtime(crm, sandbox, Suspensions(max_state_bytes=MIB)) as host:
        tracemalloc.start()
        try:
            result = await execute(host, code)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.value == 20, result.text
    assert peak < 6 * heap, f"the host held {peak / MIB:.0f} MiB for a {heap / MIB:.0f} MiB paused heap"


async def test_deferred_calls_whose_pauses_cannot_be_kept_do_not_nest_a_continuation_each(crm: Crm) -> None:
    async with MontySandbox() as sandbox, runtime(crm, sandbox, Suspensions(max_state_bytes=1)) as host:
        result = await execute(host, LOOP_OF_CONFIRMS.format(n=500))
    assert result.value == 500, result.text
    assert crm.writes() == []  # every delete was refused: nobody could be asked


@pytest.mark.parametrize("how", ["another server's key", "row edited without the key"])
async def test_a_replayed_tool_call_whose_suspension_fails_its_seal_runs_nothing(
    crm: Crm, tmp_path: Path, how: str
) -> None:
    async with sqlite_store(tmp_path / "s.db") as first, sqlite_store(tmp_path / "s.db") as second:
        async with MontySandbox() as sandbox:
            async with runtime(crm, sandbox, Suspensions(store=first, key=KEY)) as pausing:
                suspension = await suspend(pausing)
                assert await pausing.decide(suspension.id, approved=True)
                replaying_key = OTHER_KEY if how == "another server's key" else KEY
                if how == "row edited without the key":
                    await alter_row(second, suspension.id, flip_last_state_byte)
                async with runtime(crm, sandbox, Suspensions(store=second, key=replaying_key)) as replaying:
                    replayed = await execute(replaying, CODE)
                    await pausing.close()
                    await replaying.close()
    assert crm.writes() == BEFORE_THE_PAUSE, "the replayed tool call ran the program again"
    assert replayed.failure == SuspensionFailed(suspension_id=suspension.id, reason="tampered"), replayed.text


async def test_a_resume_stopped_before_it_runs_keeps_the_suspension(crm: Crm) -> None:
    async with MontySandbox() as sandbox, runtime(crm, sandbox) as host:
        suspension = await suspend(host)
        stopped = AbortController()
        stopped.abort("the person closed the page")
        cancelled = await host.resume(suspension.id, approved=True, signal=stopped.signal)
        assert cancelled.failure == Cancelled(acknowledged=True, by="caller"), cancelled.text
        assert await host.suspension(suspension.id) == suspension
    assert crm.writes() == BEFORE_THE_PAUSE


async def test_cancelling_an_execute_whose_pause_could_not_be_kept_stops_the_run(crm: Crm) -> None:
    code = "await crm.delete(id=1)\nreturn await crm.hang()"
    async with (
        MontySandbox() as sandbox,
        runtime(crm, sandbox, Suspensions(max_state_bytes=1), timeout_ms=6_000) as host,
    ):
        async with anyio.create_task_group() as group:
            group.start_soon(execute, host, code)
            await crm.hanging.wait()
            cancelled_at = time.monotonic()
            group.cancel_scope.cancel()
        stopped_after = time.monotonic() - cancelled_at
    assert crm.hang_cancelled.is_set()
    assert stopped_after < 3, f"the run went on {stopped_after:.1f} s after it was cancelled"


async def test_a_stored_suspension_stays_within_max_state_bytes_arguments_included(crm: Crm) -> None:
    store = MemorySuspensions()
    limit = 4 * MIB
    async with (
        MontySandbox() as sandbox,
        runtime(crm, sandbox, Suspensions(store=store, max_state_bytes=limit)) as host,
    ):
        result = await execute(host, LARGE_DEFERRED_CALLS.format(n=8))
        kept = await store.find(None, "t1")
    assert result.value == 8, result.text  # eight refusals: a record of 8 MB could not be kept
    assert kept == []
    assert crm.writes() == []


LIMITED_CALLS = """
n = 0
for i in range(12):
    try:
        await crm.create(title=str(i))
        n += 1
    except RuntimeError:
        return n
    if i == 3:
        await crm.delete(id=1)
return n
"""


@pytest.mark.parametrize("way", ["pause refused", "paused and resumed"])
async def test_the_operation_call_limit_spans_a_pause(crm: Crm, way: str) -> None:
    async with MontySandbox(max_operation_calls=6) as sandbox:
        async with Runtime(modules=[crm.module()], sandbox=sandbox, access=Access(confirm=defer)) as fed:
            limit = 1 if way == "pause refused" else 16 * MIB
            async with runtime(crm, sandbox, Suspensions(max_state_bytes=limit)) as stepped:
                whole = await execute(fed, LIMITED_CALLS)
                result = await execute(stepped, LIMITED_CALLS)
                if result.suspension is not None:
                    result = await stepped.resume(result.suspension.id, approved=True)
                await fed.close()
                await stepped.close()
    assert whole.value == 5, whole.text  # 5 creates and the delete: the 7th call is over the limit
    assert result.value == whole.value, result.text


async def test_a_tool_call_id_reused_with_other_code_does_not_hide_the_first_suspension(crm: Crm) -> None:
    other = "return await crm.delete(id=9)"
    async with MontySandbox() as sandbox, runtime(crm, sandbox) as host:
        first = await suspend(host)
        await suspend(host, other)
        assert await host.decide(first.id, approved=True)
        replayed = await execute(host)
    assert not replayed.is_error, replayed.text
    assert crm.writes() == FINISHED


async def test_a_confirm_call_never_awaited_is_reported_and_leaves_no_unretrieved_exception(crm: Crm) -> None:
    async with MontySandbox() as sandbox, runtime(crm, sandbox) as host:
        with loop_errors() as errors:
            result = await execute(host, "crm.delete(id=1)\nreturn 1")
            gc.collect()  # a task collected with its exception unretrieved reports it now
    assert errors == []
    assert result.suspended or any("crm.delete" in line for line in result.logs), result.logs
    assert crm.writes() == []


async def test_the_approved_call_runs_with_the_arguments_the_person_saw(crm: Crm) -> None:
    # The guest changes its argument object after placing the call and before the pause.
    code = """
args = {"id": 1}
pending = crm.delete(args)
args["id"] = 666
await crm.create(title="meanwhile")
return await pending
"""
    async with MontySandbox() as sandbox, runtime(crm, sandbox) as host:
        suspension = await suspend(host, code)
        assert suspension.arguments == {"id": 1}
        resumed = await host.resume(suspension.id, approved=True)
    assert resumed.value == {"deleted": 1}, resumed.text
    assert crm.writes() == [("create", "meanwhile"), ("delete", 1)]


async def test_every_call_placed_around_a_pause_runs_exactly_once(crm: Crm) -> None:
    # In flight at the deferral, placed after it, never awaited, gathered: each runs once.
    code = """
import asyncio
pending = crm.delete(id=2)
x = await crm.create(title="x")
forgotten = crm.create(title="never awaited")
a, b = await asyncio.gather(crm.create(title="g1"), crm.create(title="g2"))
return [await pending, x, a, b]
"""
    async with MontySandbox() as sandbox, runtime(crm, sandbox) as host:
        suspension = await suspend(host, code)
        resumed = await host.resume(suspension.id, approved=True)
    assert not resumed.is_error, resumed.text
    assert sorted(crm.writes(), key=str) == sorted(
        [("create", "x"), ("delete", 2), ("create", "never awaited"), ("create", "g1"), ("create", "g2")], key=str
    )


async def test_a_pause_waits_for_a_call_in_flight_no_longer_than_the_run_deadline(crm: Crm) -> None:
    code = "never = crm.hang()\nawait crm.delete(id=1)\nreturn await never"
    store = MemorySuspensions()
    async with (
        MontySandbox() as sandbox,
        runtime(crm, sandbox, Suspensions(store=store), timeout_ms=1_000, abort_grace_ms=500) as host,
    ):
        started = time.monotonic()
        result = await execute(host, code)
        took = time.monotonic() - started
        assert await store.find(None, "t1") == []
    assert isinstance(result.failure, DeadlineExceeded), result.text
    assert crm.hang_cancelled.is_set()
    assert took < 3


async def test_cancelling_an_execute_while_it_pauses_stops_it_and_keeps_nothing(crm: Crm) -> None:
    code = "never = crm.hang()\nawait crm.delete(id=1)\nreturn await never"
    store = MemorySuspensions()
    async with MontySandbox() as sandbox, runtime(crm, sandbox, Suspensions(store=store), timeout_ms=30_000) as host:
        async with anyio.create_task_group() as group:
            group.start_soon(execute, host, code)
            await crm.hanging.wait()
            group.cancel_scope.cancel()
        assert await store.find(None, "t1") == []
    assert crm.hang_cancelled.is_set()
    assert crm.writes() == []


HEAPS = {
    "regex": "import re\nkept = re.compile('a+')",
    "iterator": "kept = iter([1, 2, 3])\nnext(kept)",
    "closure": "def counter():\n    n = [0]\n    def inc():\n        n[0] += 1\n        return n[0]\n"
    "    return inc\nkept = counter()",
    "class": "class Box:\n    def __init__(self):\n        self.v = 1\nkept = Box()",
    "coroutine never awaited": "async def later():\n    return 1\nkept = later()",
    "cycle": "kept = []\nkept.append(kept)",
    "exception": "try:\n    1 / 0\nexcept ZeroDivisionError as error:\n    kept = error",
    "module": "import os\nkept = os",
}


async def test_a_paused_heap_of_any_kind_resumes_where_it_stopped(crm: Crm) -> None:
    async with MontySandbox() as sandbox, runtime(crm, sandbox) as host:
        for name, setup in HEAPS.items():
            code = f"{setup}\ndone = await crm.delete(id=1)\nreturn [done, type(kept).__name__]"
            suspension = await suspend(host, code, tool_call_id=name)
            resumed = await host.resume(suspension.id, approved=True)
            assert not resumed.is_error, (name, resumed.text)
            assert resumed.value[0] == {"deleted": 1}, name  # type: ignore[index]
    assert crm.writes() == [("delete", 1)] * len(HEAPS)


async def test_a_server_with_another_key_cannot_resume_and_nothing_runs(crm: Crm, tmp_path: Path) -> None:
    async with sqlite_store(tmp_path / "s.db") as first, sqlite_store(tmp_path / "s.db") as second:
        async with MontySandbox() as sandbox:
            async with runtime(crm, sandbox, Suspensions(store=first, key=KEY)) as pausing:
                async with runtime(crm, sandbox, Suspensions(store=second, key=OTHER_KEY)) as other:
                    suspension = await suspend(pausing)
                    refused = await other.resume(suspension.id, approved=True)
                    assert await other.suspension(suspension.id) is None
                    assert not await other.decide(suspension.id, approved=True)
                    kept = await pausing.suspension(suspension.id)
                    await pausing.close()
                    await other.close()
    assert refused.failure == SuspensionFailed(suspension_id=suspension.id, reason="tampered")
    assert kept == suspension
    assert crm.writes() == BEFORE_THE_PAUSE


async def test_a_failing_store_reaches_the_model_without_host_detail(crm: Crm, tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with MontySandbox() as sandbox:
        store = SqliteSuspensions(path)
        async with runtime(crm, sandbox, Suspensions(store=store, key=KEY)) as host:
            suspension = await suspend(host)
            await store.aclose()  # every later store call fails
            paused_again = await execute(host, CODE, tool_call_id="t2")
            resumed = await host.resume(suspension.id, approved=True)
            await host.close()
    assert isinstance(paused_again.failure, Unknown), paused_again.text  # unknown whether t2 ran before
    assert isinstance(resumed.failure, Unknown), resumed.text
    for result in (paused_again, resumed):
        assert_nothing_leaks(result, (str(path), str(tmp_path)), "")
        assert "closed" not in result.text
        assert "sqlite" not in result.text.lower()


VALUES = {
    "long integer": 10**4000,
    "negative zero": -0.0,
    "control characters": "\x00\x1b[2J\u2028",
    "nested": {"a": [1, 2.5, None, True, {"b": "c"}]},
    "empty": {},
}


async def test_the_arguments_a_person_approves_reach_the_operation_unchanged(crm: Crm) -> None:
    async with MontySandbox() as sandbox, runtime(crm, sandbox) as host:
        for name, value in VALUES.items():
            suspension = await suspend(host, f"return await crm.put(data={value!r})", tool_call_id=name)
            resumed = await host.resume(suspension.id, approved=True)
            assert not resumed.is_error, (name, resumed.text)
            shown = suspension.arguments["data"]  # type: ignore[index, call-overload]
            stored = crm.ran[-1][1]
            assert shown == stored == value, name
            if isinstance(value, float):
                assert math.copysign(1, stored) == math.copysign(1, value)  # type: ignore[arg-type]
