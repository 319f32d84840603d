"""Suspend an execute at a deferred confirmation and resume it later: end to end, with real parts.

The real Monty sandbox runs the programs; the operations write to a SQLite file whose
journal says what ran (see ``suspend_worker.py``), so "exactly once" is counted in rows;
suspensions live in memory, in a SQLite file or in a real PostgreSQL (pgserver). A second
OS process resumes what the first left, and two processes race to resume one suspension.
Clocks are moved by replacing the clock functions the runtime and the stores read;
processes start together on a line written to their stdin, never on sleeps.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import shutil
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, closing
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

import mycelium._access
import mycelium._runtime
import mycelium.suspensions._memory
import mycelium.suspensions._postgres
import mycelium.suspensions._records
import mycelium.suspensions._sqlite
from mycelium import (
    AbortController,
    Access,
    AccessRefusal,
    AcquireContext,
    Acquired,
    ConfirmAnswer,
    ConfirmRequest,
    ExecutionOptions,
    InvocationContext,
    Lease,
    MemorySuspensions,
    Module,
    PreparedExecute,
    Runtime,
    Session,
    Suspension,
    Suspensions,
    ToolCall,
    ToolResult,
    defer,
    operation,
    source,
)
from mycelium._access import Grant
from mycelium.failures import (
    Cancelled,
    CapabilityFailed,
    DeadlineExceeded,
    ResumeRefusal,
    SandboxBusy,
    SuspensionFailed,
)
from mycelium.sandbox.monty import MontySandbox
from mycelium.suspensions import PostgresSuspensions, SqliteSuspensions, StoredSuspension, SuspensionStore
from mycelium.suspensions._records import SuspensionRecord
from tests.support import release_0_1_0
from tests.support.paths import ROOT, worker
from tests.support.probes import ProbeSandbox
from tests.support.racing import race
from tests.support.store_worker import open_store
from tests.support.suspend_worker import KEY, SANDBOX_VARIABLE, Crm, host

WORKER = worker("suspend_worker")

# Three writes, then a delete a person confirms, then one more write.
CODE = """
a = await crm.create(title="one")
b = await crm.create(title="two")
c = await crm.create(title="three")
print("made", a, b, c)
d = await crm.delete(id=b["id"])
print("deleted", d)
e = await crm.create(title="four")
return [a, b, c, d, e]
"""
FINISHED = [{"id": 1}, {"id": 2}, {"id": 3}, {"deleted": 2}, {"id": 4}]
BEFORE_THE_PAUSE = ["one", "two", "three"]


# -- where suspensions are kept ----------------------------------------------------------------


@pytest.fixture
def place(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """Where the store lives, so another process can open it too (memory unless a test names one)."""
    kind = getattr(request, "param", "memory")
    if kind == "sqlite":
        return {"kind": "sqlite", "path": str(tmp_path / "suspensions.sqlite")}
    if kind == "postgres":
        uri = request.getfixturevalue("postgres_uri")  # only PostgreSQL tests start the server
        return {"kind": "postgres", "dsn": uri, "table": request.getfixturevalue("postgres_table")}
    return {"kind": kind}


@pytest.fixture
async def store(place: dict[str, str]) -> AsyncIterator[SuspensionStore]:
    made = MemorySuspensions() if place["kind"] == "memory" else open_store(place)
    yield made
    await made.aclose()


@pytest.fixture
def crm(tmp_path: Path) -> Crm:
    return Crm(tmp_path / "crm.sqlite")


@pytest.fixture(params=["monty", "isolated"])
def sandbox_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each sandbox that can pause: the in-process adapter and the one in child processes
    (``host`` reads the choice, and so do worker processes, which inherit it)."""
    monkeypatch.setenv(SANDBOX_VARIABLE, request.param)
    return str(request.param)


EVERY_SANDBOX = pytest.mark.usefixtures("sandbox_kind")
EVERY_STORE = pytest.mark.parametrize("place", ["memory", "sqlite", "postgres"], indirect=True)
SHARED_STORES = pytest.mark.parametrize("place", ["sqlite", "postgres"], indirect=True)


# -- helpers --------------------------------------------------------------------------------------


async def execute(runtime: Runtime, code: str = CODE, tool_call_id: str = "t1", **lease: Any) -> ToolResult:
    async with runtime.lease(**lease) as held:
        return await held.execute_tool.run(code, tool_call_id=tool_call_id)


async def suspend(runtime: Runtime, code: str = CODE, tool_call_id: str = "t1", **lease: Any) -> Suspension:
    """Run ``code`` to its pause; the suspension it answers with."""
    result = await execute(runtime, code, tool_call_id, **lease)
    assert result.suspension is not None, result.text
    assert not result.is_error
    return result.suspension


def refused(result: ToolResult, suspension: Suspension, reason: ResumeRefusal) -> None:
    assert result.is_error
    assert result.failure == SuspensionFailed(suspension_id=suspension.id, reason=reason)


def nothing_ran_after_the_pause(crm: Crm) -> None:
    assert [entry[:2] for entry in crm.journal()] == [("create", title) for title in BEFORE_THE_PAUSE]
    assert crm.titles() == BEFORE_THE_PAUSE


def ran_once_to_the_end(crm: Crm, execution_id: str) -> None:
    """Every operation of CODE ran exactly once, in one execution, its ordinals continuing over the pause."""
    assert crm.journal() == [
        ("create", "one", 0, execution_id),
        ("create", "two", 1, execution_id),
        ("create", "three", 2, execution_id),
        ("delete", "2", 3, execution_id),
        ("create", "four", 4, execution_id),
    ]
    assert crm.titles() == ["one", "three", "four"]


async def replace_stored(store: SuspensionStore, stored: StoredSuspension) -> None:
    """Put ``stored`` in the place of the stored suspension with its id (as someone with the database could)."""
    assert await store.claim(stored.id, now=time.time(), tombstone=b"") is not None
    assert await store.restore(stored)


async def reseal(
    runtime: Runtime, store: SuspensionStore, suspension_id: str, change: Callable[[SuspensionRecord], SuspensionRecord]
) -> None:
    """Change the record and seal it again with the host's own key, as a bug (not an attacker) could."""
    suspensions = runtime.suspensions
    assert suspensions is not None
    stored = await store.get(suspension_id)
    assert stored is not None
    record = await suspensions.unseal(stored)
    assert record is not None
    await replace_stored(store, await suspensions.seal(change(record)))


def later(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Move the clocks of the runtime and of the stores ``seconds`` ahead."""
    moved = time.time() + seconds
    monkeypatch.setattr(mycelium.suspensions._records, "now", lambda: moved)
    # The stores read the wall clock themselves where the runtime passes them no time.
    for store_module in (mycelium.suspensions._memory, mycelium.suspensions._sqlite, mycelium.suspensions._postgres):
        monkeypatch.setattr(store_module, "time", SimpleNamespace(time=lambda: moved))


# -- suspend, resume: each write exactly once -------------------------------------------------


@EVERY_SANDBOX
@EVERY_STORE
async def test_a_resumed_run_makes_each_write_exactly_once_and_continues_its_ordinals(
    crm: Crm, store: SuspensionStore
) -> None:
    async with host(crm, store) as runtime:
        result = await execute(runtime)
        suspension = result.suspension
        assert suspension is not None
        assert not result.is_error
        assert "Do not run this again" in result.text
        assert result.logs == ("made {'id': 1} {'id': 2} {'id': 3}",)
        assert (suspension.module_id, suspension.operation, suspension.path) == ("crm", "delete", "crm.delete")
        assert (suspension.access, suspension.arguments, suspension.operation_ordinal) == ("write", {"id": 2}, 3)
        assert (suspension.tool_call_id, suspension.session_id) == ("t1", None)
        assert await runtime.suspension(suspension.id) == suspension
        assert [entry[2:] for entry in crm.journal()] == [(ordinal, suspension.execution_id) for ordinal in range(3)]

        resumed = await runtime.resume(suspension.id, approved=True)

        assert not resumed.is_error, resumed.text
        assert resumed.value == FINISHED
        # The whole run's output, from before the pause too.
        assert resumed.logs == ("made {'id': 1} {'id': 2} {'id': 3}", "deleted {'deleted': 2}")
        ran_once_to_the_end(crm, suspension.execution_id)
        assert await runtime.suspension(suspension.id) is None


@EVERY_SANDBOX
@SHARED_STORES
async def test_a_run_suspended_in_one_process_resumes_in_another_after_the_first_exited(
    crm: Crm, place: dict[str, str]
) -> None:
    async def worker(*arguments: str) -> dict[str, Any]:
        finished = await anyio.run_process([*WORKER, *arguments], stderr=None, cwd=ROOT)
        outcome: dict[str, Any] = json.loads(finished.stdout.splitlines()[-1])
        return outcome

    where = (json.dumps(place), str(crm.path))
    paused = await worker("run", *where, "t1", CODE)
    suspension = paused["suspension"]
    assert suspension is not None, paused
    assert (suspension["arguments"], suspension["operation_ordinal"]) == ({"id": 2}, 3)
    nothing_ran_after_the_pause(crm)

    resumed = await worker("resume", *where, suspension["id"])

    assert (resumed["failure"], resumed["value"]) == (None, FINISHED)
    ran_once_to_the_end(crm, suspension["execution_id"])


# -- calls in flight, calls deferred together -------------------------------------------------


@EVERY_SANDBOX
@pytest.mark.parametrize("placed_first", ["in-flight call", "deferred call"])
async def test_calls_in_flight_settle_before_the_pause_and_reach_the_program_after_resume(
    crm: Crm, store: SuspensionStore, placed_first: str
) -> None:
    released = anyio.Event()
    settled: list[tuple[int | None, bool]] = []

    async def slow(_: object, context: InvocationContext) -> str:
        await released.wait()
        # The pause waits for this call: nothing of the run is stored yet.
        settled.append((context.operation_ordinal, bool(await store.find(None, "t1"))))
        return "settled"

    def confirm(request: ConfirmRequest) -> ConfirmAnswer:
        released.set()  # the slow call is in flight: it may end only once the deferral is under way
        return "defer"

    calls = ["slow.wait()", 'crm.delete(id=made["id"])']
    if placed_first == "deferred call":
        calls.reverse()
    code = f"""
import asyncio
made = await crm.create(title="one")
first, second = await asyncio.gather({", ".join(calls)})
return [first, second]
"""
    waiting = Module(id="slow", name="slow", operations={"wait": operation(execute=slow, access="read")})
    async with host(crm, store, extra=[waiting], access=Access(confirm=confirm)) as runtime:
        suspension = await suspend(runtime, code)

        slow_ordinal = 1 if placed_first == "in-flight call" else 2
        assert settled == [(slow_ordinal, False)]
        assert suspension.operation_ordinal == 3 - slow_ordinal
        resumed = await runtime.resume(suspension.id, approved=True)

    results = ["settled", {"deleted": 1}]
    assert resumed.value == (results if placed_first == "in-flight call" else results[::-1]), resumed.text
    assert len(settled) == 1
    assert [entry[:2] for entry in crm.journal()] == [("create", "one"), ("delete", "1")]


@EVERY_SANDBOX
async def test_a_call_placed_after_the_deferral_waits_for_the_decision(crm: Crm, store: SuspensionStore) -> None:
    code = """
pending = crm.delete(id=1)
made = await crm.create(title="x")
after = await crm.create(title="y")
return [made, after, await pending]
"""
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime, code)
        # The create placed beside the delete ran; the one the program made once the delete was deferred waits.
        assert [entry[:3] for entry in crm.journal()] == [("create", "x", 1)]
        assert suspension.operation_ordinal == 0

        resumed = await runtime.resume(suspension.id, approved=True)

    assert resumed.value == [{"id": 1}, {"id": 2}, {"deleted": 1}], resumed.text
    # After the resume the delete and the create run at once: their order in the journal is theirs to pick.
    assert sorted(entry[:3] for entry in crm.journal()) == [("create", "x", 1), ("create", "y", 2), ("delete", "1", 0)]


@EVERY_SANDBOX
async def test_a_host_failure_that_settled_during_the_pause_is_reported_as_one_after_resume(
    crm: Crm, store: SuspensionStore
) -> None:
    def broken() -> None:
        raise OSError("the disk is full")

    failing = Module(id="broken", name="broken", operations={"op": operation(execute=broken)})
    code = "failing = broken.op()\ndeleted = await crm.delete(id=1)\nreturn [deleted, await failing]"
    async with host(crm, store, extra=[failing], access=Access(confirm=lambda request: True)) as runtime:
        unpaused = await execute(runtime, code, tool_call_id="t-unpaused")
    async with host(crm, store, extra=[failing]) as runtime:
        suspension = await suspend(runtime, code)
        resumed = await runtime.resume(suspension.id, approved=True)

    assert isinstance(unpaused.failure, CapabilityFailed)
    assert isinstance(resumed.failure, CapabilityFailed), resumed.text


@EVERY_SANDBOX
async def test_calls_deferred_together_pause_at_the_first_and_ask_again_for_the_others(
    crm: Crm, store: SuspensionStore
) -> None:
    code = """
import asyncio
a = await crm.create(title="one")
b = await crm.create(title="two")
return await asyncio.gather(crm.delete(id=a["id"]), crm.delete(id=b["id"]))
"""
    async with host(crm, store) as runtime:
        first = await suspend(runtime, code)
        assert (first.arguments, first.operation_ordinal) == ({"id": 1}, 2)

        again = await runtime.resume(first.id, approved=True)

        second = again.suspension
        assert second is not None, again.text
        assert second.id != first.id
        assert (second.arguments, second.operation_ordinal, second.execution_id) == (
            {"id": 2},
            3,
            first.execution_id,
        )
        assert crm.ran("delete") == 1
        done = await runtime.resume(second.id, approved=False)

    assert done.value == [
        {"deleted": 1},
        {
            "refused": True,
            "module": "crm",
            "operation": "delete",
            "reason": "confirmation-declined",
            "message": "The person declined crm.delete. Do not retry it unless they ask you to.",
        },
    ]
    assert [entry[:3] for entry in crm.journal()] == [("create", "one", 0), ("create", "two", 1), ("delete", "1", 2)]


@EVERY_SANDBOX
async def test_a_call_deferred_beside_the_decided_one_is_asked_again_and_may_be_approved_then(
    crm: Crm, store: SuspensionStore
) -> None:
    asked: list[object] = []

    def confirm(request: ConfirmRequest) -> ConfirmAnswer:
        asked.append(request.arguments)
        return "defer" if len(asked) <= 2 else True  # the person answers the second call at once on resume

    code = "import asyncio\nreturn await asyncio.gather(crm.delete(id=1), crm.delete(id=2))"
    async with host(crm, store, access=Access(confirm=confirm)) as runtime:
        suspension = await suspend(runtime, code)
        resumed = await runtime.resume(suspension.id, approved=True)

    assert resumed.value == [{"deleted": 1}, {"deleted": 2}], resumed.text
    assert asked == [{"id": 1}, {"id": 2}, {"id": 2}]
    assert sorted(entry[:3] for entry in crm.journal()) == [("delete", "1", 0), ("delete", "2", 1)]


# -- the decision, and authority read afresh --------------------------------------------------

HANDLES_REFUSAL = """
made = await crm.create(title="one")
deleted = await crm.delete(id=made["id"])
match deleted:
    case {"refused": True, "reason": reason}:
        return {"handled": reason}
return deleted
"""


@EVERY_SANDBOX
async def test_a_declined_call_is_refused_and_the_program_handles_the_refusal(crm: Crm, store: SuspensionStore) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime, HANDLES_REFUSAL)
        resumed = await runtime.resume(suspension.id, approved=False)

    assert (resumed.is_error, resumed.value) == (False, {"handled": "confirmation-declined"})
    assert crm.ran("delete") == 0
    assert crm.titles() == ["one"]


async def test_a_grant_revoked_while_suspended_refuses_the_approved_call(crm: Crm, store: SuspensionStore) -> None:
    grants: dict[str, Grant] = {"crm": "write"}
    access = Access(confirm=defer, session_grants=lambda: grants)
    async with host(crm, store, access=access) as runtime:
        suspension = await suspend(runtime, HANDLES_REFUSAL)
        grants["crm"] = "none"
        resumed = await runtime.resume(suspension.id, approved=True)

    assert resumed.value == {"handled": "not-granted"}, resumed.text
    assert crm.ran("delete") == 0
    assert crm.titles() == ["one"]


async def test_a_resume_reads_the_access_of_the_lease_it_continues_in(crm: Crm, store: SuspensionStore) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime, HANDLES_REFUSAL)
        async with runtime.lease(access=Access(grants={"crm": "read"})) as lease:
            resumed = await runtime.resume(suspension.id, approved=True, lease=lease)

    assert resumed.value == {"handled": "read-only-grant"}, resumed.text
    assert crm.ran("delete") == 0
    assert crm.titles() == ["one"]


@pytest.mark.parametrize("place", ["memory", "sqlite"], indirect=True)
async def test_an_expired_suspension_cannot_resume_and_is_purged(
    crm: Crm, store: SuspensionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with host(crm, store, expires_after_ms=60_000) as runtime:
        suspension = await suspend(runtime)
        later(monkeypatch, 61)

        assert await runtime.suspension(suspension.id) is None
        assert not await runtime.decide(suspension.id, approved=True)
        refused(await runtime.resume(suspension.id, approved=True), suspension, "expired")
        nothing_ran_after_the_pause(crm)
        assert await runtime.purge_expired_suspensions() == 1
        refused(await runtime.resume(suspension.id, approved=True), suspension, "not-found")
    nothing_ran_after_the_pause(crm)


async def test_a_tool_call_replayed_after_its_suspension_expired_does_not_run_the_program_again(
    crm: Crm, store: SuspensionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with host(crm, store, expires_after_ms=60_000) as runtime:
        suspension = await suspend(runtime)
        later(monkeypatch, 61)
        replayed = await execute(runtime)

    assert replayed.failure == SuspensionFailed(suspension_id=suspension.id, reason="expired"), replayed.text
    nothing_ran_after_the_pause(crm)


async def test_an_approval_replayed_after_its_run_resumed_or_its_pause_was_purged_runs_nothing(
    crm: Crm, store: SuspensionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = CODE.replace('"one"', '"uno"')

    def call(tool_call_id: str, code: str, lease: Lease) -> PreparedExecute:
        return lease.execute_tool.prepare(ToolCall(id=tool_call_id, name="execute", arguments={"code": code}))

    async with host(crm, store, expires_after_ms=60_000) as runtime:
        async with runtime.lease() as lease:
            paused = (await call("t1", CODE, lease).execute()).suspension
            assert paused is not None
            assert (await call("t1", CODE, lease).execute(approved=True)).value == FINISHED
            again = await call("t1", CODE, lease).execute(approved=True)  # the same approval, delivered twice
            assert (await call("t2", other, lease).execute()).suspended
        later(monkeypatch, 61)
        assert await runtime.purge_expired_suspensions() == 2  # t1's tombstone, t2's pause
        async with runtime.lease() as lease:
            late = await call("t2", other, lease).execute(approved=True)  # approved after its pause was purged

    assert again.failure == SuspensionFailed(suspension_id=paused.id, reason="already-resumed"), again.text
    assert late.failure == SuspensionFailed(suspension_id="", reason="not-found"), late.text
    assert late.text.startswith("The paused run of this tool call cannot continue")
    creates = [title for op, title, *_ in crm.journal() if op == "create"]
    assert creates == ["one", "two", "three", "four", "uno", "two", "three"]


async def test_a_replayed_decision_decides_only_the_pause_it_was_given_for(crm: Crm, store: SuspensionStore) -> None:
    two = 'a = await crm.create(title="one")\nawait crm.delete(id=a["id"])\nreturn await crm.delete(id=a["id"] + 1)'
    async with host(crm, store) as runtime, runtime.lease() as lease:
        call = lease.execute_tool.prepare(ToolCall(id="t1", name="execute", arguments={"code": two}))
        first = (await call.execute()).suspension
        assert first is not None
        second = (await call.execute(approved=True, suspension_id=first.id)).suspension
        assert second is not None
        assert second.id != first.id
        # The first answer again, named or not: the second pause is asked again, not approved.
        named = await call.execute(approved=True, suspension_id=first.id)
        unnamed = await call.execute(approved=True)
        assert named.suspension == second == unnamed.suspension
        assert crm.ran("delete") == 1
        finished = await call.execute(approved=True, suspension_id=second.id)

    assert finished.value == {"deleted": 2}
    assert crm.ran("delete") == 2


@EVERY_STORE
async def test_a_discarded_suspension_never_resumes_and_only_its_session_can_discard_it(
    crm: Crm, store: SuspensionStore
) -> None:
    async with host(crm, store, session=Session("ours")) as runtime:
        suspension = await suspend(runtime)
        theirs = await runtime.discard(suspension.id, session=Session("theirs"))
        ours, twice = await runtime.discard(suspension.id), await runtime.discard(suspension.id)
        resumed = await runtime.resume(suspension.id, approved=True)
        async with runtime.lease() as lease:
            call = ToolCall(id="t1", name="execute", arguments={"code": CODE})
            replayed = await lease.execute_tool.prepare(call).execute(approved=True)

    assert (theirs, ours, twice) == (False, True, False)
    refused(resumed, suspension, "already-resumed")  # a discard is a claim: its tombstone stays
    assert replayed.failure == SuspensionFailed(suspension_id=suspension.id, reason="already-resumed")
    nothing_ran_after_the_pause(crm)


# -- at most once -----------------------------------------------------------------------------


@EVERY_STORE
async def test_two_concurrent_resumes_in_one_process_continue_the_run_once(crm: Crm, store: SuspensionStore) -> None:
    results: list[ToolResult] = []

    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)

        async def resume() -> None:
            results.append(await runtime.resume(suspension.id, approved=True))

        async with anyio.create_task_group() as group:
            group.start_soon(resume)
            group.start_soon(resume)

    finished = [result for result in results if not result.is_error]
    assert [result.value for result in finished] == [FINISHED]
    (lost,) = [result for result in results if result.is_error]
    refused(lost, suspension, "already-resumed")
    ran_once_to_the_end(crm, suspension.execution_id)


@pytest.mark.parametrize("place", ["memory"], indirect=True)
async def test_a_resume_that_loses_the_claim_to_another_is_logged_without_a_traceback(
    crm: Crm, store: SuspensionStore, caplog: pytest.LogCaptureFixture
) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        caplog.set_level(logging.INFO, logger="mycelium.runs")
        async with anyio.create_task_group() as group:  # both find it waiting; one claims it in its slot
            group.start_soon(functools.partial(runtime.resume, suspension.id, approved=True))
            group.start_soon(functools.partial(runtime.resume, suspension.id, approved=True))
    [lost] = [record for record in caplog.records if "suspension-failed" in record.getMessage()]
    assert lost.exc_info is None
    assert "reason=already-resumed" in lost.getMessage()  # what the traceback said, in a word


@SHARED_STORES
async def test_two_processes_resuming_one_suspension_at_once_continue_the_run_once(
    crm: Crm, store: SuspensionStore, place: dict[str, str]
) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)

    outcomes = await race([*WORKER, "race", json.dumps(place), str(crm.path), suspension.id], cwd=ROOT)

    (won,) = [outcome for outcome in outcomes if outcome["failure"] is None]
    (lost,) = [outcome["failure"] for outcome in outcomes if outcome["failure"] is not None]
    assert won["value"] == FINISHED
    assert (lost["code"], lost["reason"]) == ("suspension-failed", "already-resumed")
    ran_once_to_the_end(crm, suspension.execution_id)


@EVERY_STORE
async def test_a_tool_call_replayed_after_its_run_resumed_is_refused_and_never_runs_again(
    crm: Crm, store: SuspensionStore
) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        resumed = await runtime.resume(suspension.id, approved=True)
        replayed = await execute(runtime)  # the framework retries the same tool call
        async with runtime.lease() as lease:
            call = ToolCall(id="t1", name="execute", arguments={"code": CODE})
            approved_again = await lease.execute_tool.prepare(call).execute(approved=True)

    assert resumed.value == FINISHED, resumed.text
    refused(replayed, suspension, "already-resumed")
    refused(approved_again, suspension, "already-resumed")
    ran_once_to_the_end(crm, suspension.execution_id)


@EVERY_STORE
async def test_every_way_back_to_a_resumed_suspension_is_refused_and_runs_nothing(
    crm: Crm, store: SuspensionStore
) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        assert (await runtime.resume(suspension.id, approved=True)).value == FINISHED
        again = await runtime.resume(suspension.id, approved=True)
        as_recorded = await runtime.resume(suspension.id)
        decided = await runtime.decide(suspension.id, approved=False)
        discarded = await runtime.discard(suspension.id)
        shown = await runtime.suspension(suspension.id)

    refused(again, suspension, "already-resumed")
    refused(as_recorded, suspension, "already-resumed")
    assert (decided, discarded, shown) == (False, False, None)
    ran_once_to_the_end(crm, suspension.execution_id)


@EVERY_STORE
async def test_a_resumed_suspension_leaves_a_tombstone_without_its_paused_state_or_program_text(
    crm: Crm, store: SuspensionStore
) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        paused = await store.get(suspension.id)
        await runtime.resume(suspension.id, approved=True)
        tombstone = await store.get(suspension.id)
        assert runtime.suspensions is not None
        assert tombstone is not None
        record = await runtime.suspensions.unseal(tombstone)

    assert paused is not None
    assert record is not None
    assert (paused.claimed, tombstone.claimed, tombstone.expires_at) == (False, True, paused.expires_at)
    assert (record.claimed, record.state, record.calls, record.logs) == (True, b"", (), ())
    assert CODE not in record.code  # a digest: a replay of the same program is still recognised
    assert record.runs(CODE)
    assert not record.runs(CODE + " ")
    assert len(tombstone.record) < 1024 < len(paused.record)


@pytest.mark.parametrize("place", ["memory", "sqlite"], indirect=True)
async def test_a_tombstone_refuses_until_its_suspension_would_have_expired_and_is_purged_after(
    crm: Crm, store: SuspensionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with host(crm, store, expires_after_ms=60_000) as runtime:
        suspension = await suspend(runtime)
        assert (await runtime.resume(suspension.id, approved=True)).value == FINISHED
        later(monkeypatch, 59)
        assert await runtime.purge_expired_suspensions() == 0
        refused(await execute(runtime), suspension, "already-resumed")
        later(monkeypatch, 61)
        refused(await runtime.resume(suspension.id, approved=True), suspension, "already-resumed")  # until purged
        assert await runtime.purge_expired_suspensions() == 1
        refused(await runtime.resume(suspension.id, approved=True), suspension, "not-found")
    ran_once_to_the_end(crm, suspension.execution_id)


class HeldClaim(MemorySuspensions):
    """Memory suspensions whose claim, once made, waits for the test to let it answer."""

    def __init__(self) -> None:
        super().__init__()
        self.claimed = anyio.Event()
        self.answer = anyio.Event()

    async def claim(self, suspension_id: str, *, now: float, tombstone: bytes) -> StoredSuspension | None:
        taken = await super().claim(suspension_id, now=now, tombstone=tombstone)
        self.claimed.set()
        await self.answer.wait()
        return taken


async def test_a_resume_stopped_while_it_claims_turns_the_tombstone_back_into_the_suspension(crm: Crm) -> None:
    store = HeldClaim()
    controller = AbortController()
    stopped: list[ToolResult] = []
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        paused = await store.get(suspension.id)

        async def resume() -> None:
            stopped.append(await runtime.resume(suspension.id, approved=True, signal=controller.signal))

        async with anyio.create_task_group() as group:
            group.start_soon(resume)
            await store.claimed.wait()
            claimed = await store.get(suspension.id)
            controller.abort()
            store.answer.set()
    # The runtime has closed: the stopped run's work, the give-back with it, has settled.
    given_back = await store.get(suspension.id)
    async with host(crm, store) as runtime:
        resumed = await runtime.resume(suspension.id, approved=True)

    assert claimed is not None
    assert claimed.claimed
    assert [type(result.failure) for result in stopped] == [Cancelled]
    assert given_back == paused
    assert resumed.value == FINISHED, resumed.text
    ran_once_to_the_end(crm, suspension.execution_id)


# -- what was stored is what resumes ----------------------------------------------------------


def retarget(stored: StoredSuspension) -> StoredSuspension:
    """The person approved deleting note 2; the record now says note 3 (the seal is left as it was)."""
    altered = stored.record.replace(b'"arguments":{"id":2}', b'"arguments":{"id":3}')
    assert altered != stored.record
    return dataclasses.replace(stored, record=altered)


def flip_state_byte(stored: StoredSuspension) -> StoredSuspension:
    """One bit of the sandbox's state flipped, just before the seal."""
    record = bytearray(stored.record)
    record[-40] ^= 0x01
    return dataclasses.replace(stored, record=bytes(record))


def extend_expiry(stored: StoredSuspension) -> StoredSuspension:
    """The column a store expires by, moved a year on; the sealed record still says a day."""
    return dataclasses.replace(stored, expires_at=stored.expires_at + 365 * 86_400)


@EVERY_STORE
@pytest.mark.parametrize("alter", [retarget, flip_state_byte, extend_expiry])
async def test_a_record_altered_in_the_store_is_refused_as_tampered(
    crm: Crm, store: SuspensionStore, alter: Callable[[StoredSuspension], StoredSuspension]
) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        stored = await store.get(suspension.id)
        assert stored is not None
        await replace_stored(store, alter(stored))

        assert await runtime.suspension(suspension.id) is None
        refused(await runtime.resume(suspension.id, approved=True), suspension, "tampered")
    nothing_ran_after_the_pause(crm)


@pytest.mark.parametrize("place", ["sqlite"], indirect=True)
async def test_a_sqlite_row_changed_behind_the_runtimes_back_is_refused_as_tampered(
    crm: Crm, store: SuspensionStore, place: dict[str, str]
) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        with closing(sqlite3.connect(place["path"])) as db, db:
            (record,) = db.execute("SELECT record FROM suspensions WHERE id = ?", (suspension.id,)).fetchone()
            flipped = bytes([record[0] ^ 0x20]) + record[1:]
            db.execute("UPDATE suspensions SET record = ? WHERE id = ?", (flipped, suspension.id))

        refused(await runtime.resume(suspension.id, approved=True), suspension, "tampered")
    nothing_ran_after_the_pause(crm)


async def test_a_record_sealed_under_another_key_is_refused_as_tampered(crm: Crm, store: SuspensionStore) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
    other_key = Suspensions(store=store, key=b"another host's key, not ours")
    async with Runtime(modules=[crm.module()], sandbox=MontySandbox(), suspensions=other_key) as other:
        refused(await other.resume(suspension.id, approved=True), suspension, "tampered")
    nothing_ran_after_the_pause(crm)


async def test_a_decision_sealed_for_another_suspension_is_refused_as_tampered(
    crm: Crm, store: SuspensionStore
) -> None:
    async with host(crm, store) as runtime:
        approved = await suspend(runtime, "return await crm.delete(id=1)", tool_call_id="t-approved")
        other = await suspend(runtime, "return await crm.delete(id=2)", tool_call_id="t-other")
        assert await runtime.decide(approved.id, approved=True)
        decided = await store.get(approved.id)
        undecided = await store.get(other.id)
        assert decided is not None
        assert undecided is not None
        await replace_stored(store, dataclasses.replace(undecided, decision=decided.decision))

        refused(await runtime.resume(other.id), other, "tampered")
        assert crm.ran("delete") == 0
        assert (await runtime.resume(approved.id)).value == {"deleted": 1}
    assert [entry[:2] for entry in crm.journal()] == [("delete", "1")]


# -- a key ring: the newest key seals, every key opens ---------------------------------------------

NEW_KEY = b"the key rotated in after the pause"


def keyed(crm: Crm, store: SuspensionStore, key: bytes, *previous: bytes) -> Runtime:
    """The suspend tests' host, sealing under ``key`` and opening under ``previous`` too."""
    return Runtime(
        modules=[crm.module()],
        sandbox=MontySandbox(),
        access=Access(confirm=defer),
        suspensions=Suspensions(store=store, key=key, previous_keys=previous),
    )


@EVERY_STORE
async def test_a_record_sealed_under_a_previous_key_resumes_under_the_new_one(crm: Crm, store: SuspensionStore) -> None:
    async with host(crm, store) as runtime:  # sealed under KEY
        suspension = await suspend(runtime)
    async with keyed(crm, store, NEW_KEY, KEY) as rotated:
        assert await rotated.suspension(suspension.id) == suspension
        resumed = await rotated.resume(suspension.id, approved=True)

    assert resumed.value == FINISHED, resumed.text
    ran_once_to_the_end(crm, suspension.execution_id)


async def test_a_record_sealed_under_a_key_dropped_from_the_ring_is_refused_as_tampered(
    crm: Crm, store: SuspensionStore
) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
    async with keyed(crm, store, NEW_KEY) as dropped:
        assert await dropped.suspension(suspension.id) is None
        refused(await dropped.resume(suspension.id, approved=True), suspension, "tampered")
    nothing_ran_after_the_pause(crm)


async def test_a_decision_sealed_under_a_previous_key_decides_under_the_new_one(
    crm: Crm, store: SuspensionStore
) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        assert await runtime.decide(suspension.id, approved=True)
    async with keyed(crm, store, NEW_KEY, KEY) as rotated:
        resumed = await rotated.resume(suspension.id)  # with the decision recorded before the rotation

    assert resumed.value == FINISHED, resumed.text
    ran_once_to_the_end(crm, suspension.execution_id)


async def test_a_decision_sealed_under_a_key_dropped_from_the_ring_is_refused_as_tampered(
    crm: Crm, store: SuspensionStore
) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        assert await runtime.decide(suspension.id, approved=True)
    # The record sealed again under the new key, its decision left as the old key sealed it.
    rotated_suspensions = Suspensions(store=store, key=NEW_KEY, previous_keys=(KEY,))
    stored = await store.get(suspension.id)
    assert stored is not None
    record = await rotated_suspensions.unseal(stored)
    assert record is not None
    resealed = await rotated_suspensions.seal(record)
    await replace_stored(store, dataclasses.replace(resealed, decision=stored.decision))

    async with keyed(crm, store, NEW_KEY) as dropped:
        refused(await dropped.resume(suspension.id), suspension, "tampered")
        nothing_ran_after_the_pause(crm)
    async with keyed(crm, store, NEW_KEY, KEY) as rotated:
        resumed = await rotated.resume(suspension.id)
    assert resumed.value == FINISHED, resumed.text


async def test_a_rotated_ring_seals_records_and_decisions_under_its_newest_key(
    crm: Crm, store: SuspensionStore
) -> None:
    async with keyed(crm, store, NEW_KEY, KEY) as rotated:
        suspension = await suspend(rotated)
        assert await rotated.decide(suspension.id, approved=True)
    async with host(crm, store) as old:  # the previous key alone opens neither
        refused(await old.resume(suspension.id), suspension, "tampered")
    async with keyed(crm, store, NEW_KEY) as newest:  # the previous key dropped: both still open
        resumed = await newest.resume(suspension.id)

    assert resumed.value == FINISHED, resumed.text
    ran_once_to_the_end(crm, suspension.execution_id)


# -- the revision it resumes against ----------------------------------------------------------


class ChangingCrm:
    """A source serving the notes module in a shape the test changes; ``change`` invalidates the snapshot."""

    def __init__(self, crm: Crm) -> None:
        self.crm = crm
        self.shape: dict[str, Any] = {"name": "crm", "create_access": "write", "present": True, "extra": False}
        self.acquired: list[AcquireContext] = []
        self.source = source(id="crm-source", acquire=self._acquire)

    async def _acquire(self, context: AcquireContext) -> Acquired:
        self.acquired.append(context)
        modules = []
        if self.shape["present"]:
            modules.append(self.crm.module(name=self.shape["name"], create_access=self.shape["create_access"]))
        if self.shape["extra"]:
            modules.append(Module(id="extra", name="extra", operations={"ping": operation(execute=lambda: "pong")}))

        async def release() -> None:
            pass

        return Acquired(version=f"v{len(self.acquired)}", modules=modules, release=release)

    def change(self, **shape: Any) -> None:
        self.shape.update(shape)
        self.acquired[-1].invalidate()


@pytest.mark.parametrize(
    "change", [{"name": "contacts"}, {"create_access": "read"}, {"present": False}], ids=["path", "label", "removed"]
)
async def test_a_changed_module_refuses_the_resume_and_keeps_the_suspension(
    crm: Crm, store: SuspensionStore, change: dict[str, Any]
) -> None:
    changing = ChangingCrm(crm)
    async with host(crm, store, sources=[changing.source]) as runtime:
        suspension = await suspend(runtime)
        original = dict(changing.shape)
        changing.change(**change)

        refused(await runtime.resume(suspension.id, approved=True), suspension, "revision-changed")
        nothing_ran_after_the_pause(crm)
        assert await runtime.suspension(suspension.id) == suspension

        changing.change(**original)
        resumed = await runtime.resume(suspension.id, approved=True)

    assert resumed.value == FINISHED, resumed.text
    ran_once_to_the_end(crm, suspension.execution_id)


async def test_a_module_added_meanwhile_does_not_block_the_resume(crm: Crm, store: SuspensionStore) -> None:
    changing = ChangingCrm(crm)
    async with host(crm, store, sources=[changing.source]) as runtime:
        suspension = await suspend(runtime)
        changing.change(extra=True)
        async with runtime.lease() as lease:
            assert [module.id for module in lease.graph.modules] == ["crm", "extra"]
        resumed = await runtime.resume(suspension.id, approved=True)

    assert resumed.value == FINISHED, resumed.text
    ran_once_to_the_end(crm, suspension.execution_id)


@pytest.mark.parametrize(
    "state", [lambda state: b"garbage", lambda state: state[:-100]], ids=["garbage", "snapshot cut short"]
)
async def test_a_state_the_sandbox_cannot_restore_fails_typed_and_nothing_runs(
    crm: Crm, store: SuspensionStore, state: Callable[[bytes], bytes]
) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        await reseal(
            runtime, store, suspension.id, lambda record: dataclasses.replace(record, state=state(record.state))
        )

        refused(await runtime.resume(suspension.id, approved=True), suspension, "unrestorable")
    nothing_ran_after_the_pause(crm)


# -- the same tool call, again ----------------------------------------------------------------


async def test_the_same_tool_call_re_invoked_waits_until_decided_then_resumes(crm: Crm, store: SuspensionStore) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)

        again = await execute(runtime)
        assert again.suspension == suspension
        assert not again.is_error
        nothing_ran_after_the_pause(crm)

        assert await runtime.decide(suspension.id, approved=True)
        assert not await runtime.decide(suspension.id, approved=False)  # decided once
        resumed = await execute(runtime)

        assert resumed.value == FINISHED, resumed.text
        ran_once_to_the_end(crm, suspension.execution_id)
        refused(await runtime.resume(suspension.id), suspension, "already-resumed")


@SHARED_STORES
async def test_a_decision_recorded_by_another_server_resumes_the_replayed_tool_call(
    crm: Crm, store: SuspensionStore, place: dict[str, str]
) -> None:
    other_store = open_store(place)  # a second server instance: its own connection to the same store
    try:
        async with host(crm, store) as runtime, host(crm, other_store) as other:
            suspension = await suspend(runtime)
            assert await other.suspension(suspension.id) == suspension
            assert await other.decide(suspension.id, approved=True)
            resumed = await execute(runtime)
    finally:
        await other_store.aclose()

    assert resumed.value == FINISHED, resumed.text
    ran_once_to_the_end(crm, suspension.execution_id)


async def test_the_same_tool_call_id_with_other_code_runs_as_a_new_program(crm: Crm, store: SuspensionStore) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)

        other = await execute(runtime, 'return await crm.create(title="other")')

        assert other.value == {"id": 4}, other.text
        assert crm.journal()[-1][:3] == ("create", "other", 0)
        assert crm.journal()[-1][3] != suspension.execution_id
        assert await runtime.suspension(suspension.id) == suspension


async def test_an_undecided_suspension_does_not_resume_without_a_decision(crm: Crm, store: SuspensionStore) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        refused(await runtime.resume(suspension.id), suspension, "undecided")
        assert await runtime.suspension(suspension.id) == suspension
    nothing_ran_after_the_pause(crm)


# -- pausing again, and not pausing -----------------------------------------------------------


async def test_a_resumed_run_may_suspend_again_at_its_next_confirmation(crm: Crm, store: SuspensionStore) -> None:
    code = """
made = await crm.create(title="one")
first = await crm.delete(id=made["id"])
second = await crm.delete(id=7)
return [first, second]
"""
    async with host(crm, store) as runtime:
        first = await suspend(runtime, code)
        again = await runtime.resume(first.id, approved=True)
        second = again.suspension
        assert second is not None, again.text
        assert second.id != first.id
        assert (second.arguments, second.operation_ordinal, second.execution_id) == ({"id": 7}, 2, first.execution_id)
        assert second.tool_call_id == "t1"
        refused(await runtime.resume(first.id, approved=True), first, "already-resumed")
        assert (await execute(runtime, code)).suspension == second  # the tool call replayed waits at the second

        done = await runtime.resume(second.id, approved=True)

    assert done.value == [{"deleted": 1}, {"deleted": 7}], done.text
    assert crm.journal() == [
        ("create", "one", 0, first.execution_id),
        ("delete", "1", 1, first.execution_id),
        ("delete", "7", 2, first.execution_id),
    ]


async def test_invalid_input_to_a_confirm_call_raises_in_the_guest_and_makes_no_suspension(
    crm: Crm, store: SuspensionStore
) -> None:
    code = """
try:
    await crm.delete(id="four")
except ValueError as error:
    return "invalid"
return "deleted"
"""
    async with host(crm, store) as runtime:
        result = await execute(runtime, code)
    assert (result.suspension, result.value) == (None, "invalid"), result.text
    assert not await store.find(None, "t1")
    assert crm.journal() == []


async def test_another_session_can_neither_see_nor_resume_a_suspension(crm: Crm, store: SuspensionStore) -> None:
    mine, theirs = Session("a"), Session("b")
    async with host(crm, store, session=mine) as runtime:
        suspension = await suspend(runtime)
        assert suspension.session_id == "a"

        assert await runtime.suspension(suspension.id, session=theirs) is None
        assert not await runtime.decide(suspension.id, approved=True, session=theirs)
        async with runtime.lease(session=theirs) as lease:
            refused(await runtime.resume(suspension.id, approved=True, lease=lease), suspension, "not-found")
        # Their "t1" is a tool call of their own: it runs their program, not the replay of ours.
        their_own = await suspend(runtime, session=theirs)
        assert (their_own.id != suspension.id, their_own.session_id) == (True, "b")
        assert crm.ran("delete") == 0

        resumed = await runtime.resume(suspension.id, approved=True)
    assert not resumed.is_error, resumed.text
    assert [entry for entry in crm.journal() if entry[0] == "delete"] == [("delete", "2", 3, suspension.execution_id)]


async def test_without_suspensions_a_deferred_confirmation_is_refused_as_unavailable(crm: Crm) -> None:
    async with Runtime(modules=[crm.module()], sandbox=MontySandbox(), access=Access(confirm=defer)) as runtime:
        result = await execute(runtime, HANDLES_REFUSAL)
        with pytest.raises(ValueError, match="no suspensions"):
            await runtime.resume("susp-0", approved=True)
    assert result.value == {"handled": "confirmation-unavailable"}, result.text
    assert crm.ran("delete") == 0


async def test_a_call_made_outside_an_execute_cannot_pause_and_is_refused_as_unavailable(
    crm: Crm, store: SuspensionStore
) -> None:
    async with host(crm, store) as runtime:
        refusal = await runtime.invoke("crm", "delete", {"id": 1})
    assert isinstance(refusal, AccessRefusal)
    assert refusal.reason == "confirmation-unavailable"
    assert crm.ran("delete") == 0


def test_suspensions_need_a_sandbox_that_can_resume() -> None:
    with pytest.raises(ValueError, match="resume"):
        Runtime(sandbox=ProbeSandbox(), suspensions=Suspensions())


@pytest.mark.parametrize(
    ("max_per_session", "max_state_bytes"), [(1, 16 * 1024 * 1024), (100, 1)], ids=["store full", "state too large"]
)
async def test_a_pause_that_cannot_be_kept_refuses_the_call_and_the_run_goes_on(
    crm: Crm, store: SuspensionStore, max_per_session: int, max_state_bytes: int
) -> None:
    async with host(crm, store, max_per_session=max_per_session, max_state_bytes=max_state_bytes) as runtime:
        if max_per_session == 1:
            await suspend(runtime, "return await crm.delete(id=1)", tool_call_id="t-kept")
        result = await execute(runtime)

    assert result.suspension is None
    assert not result.is_error, result.text
    assert isinstance(result.value, list)
    deleted = result.value[3]
    assert isinstance(deleted, dict)
    assert (deleted["refused"], deleted["reason"]) == (True, "confirmation-unavailable")
    assert result.logs == ("made {'id': 1} {'id': 2} {'id': 3}", f"deleted {deleted}")
    (execution_id,) = {entry[3] for entry in crm.journal()}
    assert crm.journal() == [
        ("create", "one", 0, execution_id),
        ("create", "two", 1, execution_id),
        ("create", "three", 2, execution_id),
        ("create", "four", 4, execution_id),  # the refused call used up ordinal 3
    ]


async def test_a_resume_refused_for_want_of_a_sandbox_slot_can_be_tried_again(crm: Crm, store: SuspensionStore) -> None:
    holding, release = anyio.Event(), anyio.Event()

    async def hold() -> None:
        holding.set()
        await release.wait()

    holder = Module(id="hold", name="hold", operations={"slot": operation(execute=hold, access="read")})
    options = ExecutionOptions(sandbox_capacity=1, admission_wait_ms=1)
    async with host(crm, store, extra=[holder], execution=options) as runtime:
        suspension = await suspend(runtime)
        async with anyio.create_task_group() as group:
            group.start_soon(execute, runtime, "await hold.slot()", "t-holder")
            await holding.wait()
            busy = await runtime.resume(suspension.id, approved=True)
            release.set()
        assert isinstance(busy.failure, SandboxBusy)
        nothing_ran_after_the_pause(crm)

        again = await runtime.resume(suspension.id, approved=True)

    assert again.value == FINISHED, again.text


# -- the run's time budget --------------------------------------------------------------------


async def test_time_spent_suspended_does_not_count_against_the_timeout(
    crm: Crm, store: SuspensionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = ExecutionOptions(timeout_ms=10_000)
    async with host(crm, store, execution=options, expires_after_ms=86_400_000) as runtime:
        suspension = await suspend(runtime)
        later(monkeypatch, 3_600)  # an hour waiting for the person: far over the 10 s budget
        resumed = await runtime.resume(suspension.id, approved=True)
    assert resumed.value == FINISHED, resumed.text


async def test_a_resumed_run_gets_only_what_its_earlier_part_left_of_the_timeout(
    crm: Crm, store: SuspensionStore
) -> None:
    never = anyio.Event()

    async def block() -> None:
        await never.wait()

    code = 'await crm.delete(id=1)\nawait slow.block()\nreturn "done"'
    blocking = Module(id="slow", name="slow", operations={"block": operation(execute=block, access="read")})
    options = ExecutionOptions(timeout_ms=30_000, abort_grace_ms=1_000)
    async with host(crm, store, extra=[blocking], execution=options) as runtime:
        suspension = await suspend(runtime, code)
        await reseal(runtime, store, suspension.id, lambda record: dataclasses.replace(record, spent_ms=30_000 - 100))
        started = anyio.current_time()
        resumed = await runtime.resume(suspension.id, approved=True)

    assert isinstance(resumed.failure, DeadlineExceeded), resumed.text
    assert anyio.current_time() - started < 5  # 100 ms left, not the whole 30 s
    assert crm.ran("delete") == 1


# -- decisions that disagree, deferrals that are not the gate's ----------------------------------


async def test_approving_over_a_recorded_decline_is_refused_and_runs_nothing(crm: Crm, store: SuspensionStore) -> None:
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime)
        assert await runtime.decide(suspension.id, approved=False)
        refused(await runtime.resume(suspension.id, approved=True), suspension, "decided-otherwise")
        nothing_ran_after_the_pause(crm)
        # The recorded decision still stands, and resumes as recorded.
        resumed = await runtime.resume(suspension.id)
    assert not resumed.is_error, resumed.text
    assert crm.titles() == [*BEFORE_THE_PAUSE, "four"]  # the delete was declined, the rest ran once


async def test_a_deferral_raised_by_an_operations_own_code_is_a_host_failure_not_a_pause(
    crm: Crm, store: SuspensionStore
) -> None:
    tricky = Module(id="tricky", name="tricky")

    @tricky.operation()
    def sneaky(ctx: InvocationContext) -> int:
        """Raises what the gate raises to pause a run, after doing its work."""
        request = ConfirmRequest(
            module_id="tricky",
            module_name="tricky",
            operation="sneaky",
            path="tricky.sneaky",
            access="write",
            session_id=None,
            execution_id=ctx.execution_id,
            tool_call_id=ctx.tool_call_id,
            operation_ordinal=ctx.operation_ordinal,
            arguments={},
        )
        raise mycelium._access.DecisionDeferred(request)

    async with host(crm, store, extra=[tricky]) as runtime:
        result = await execute(runtime, "return await tricky.sneaky()")
    assert result.suspension is None
    assert isinstance(result.failure, CapabilityFailed), result.text


# -- stores made by release 0.1.0 ---------------------------------------------------------------


async def resumes_once(crm: Crm, store: SuspensionStore) -> None:
    """The suspension release 0.1.0 stored resumes, once: a retry of it, or of its tool call, runs nothing."""
    (kept,) = await store.find(None, release_0_1_0.TOOL_CALL_ID)
    suspensions = Suspensions(store=store, key=release_0_1_0.KEY)
    runtime = Runtime(
        modules=[crm.module()], sandbox=MontySandbox(), access=Access(confirm=defer), suspensions=suspensions
    )
    async with runtime:
        suspension = await runtime.suspension(kept.id)
        assert suspension is not None
        resumed = await runtime.resume(kept.id, approved=True)
        again = await runtime.resume(kept.id, approved=True)
        replayed = await execute(runtime, release_0_1_0.CODE, release_0_1_0.TOOL_CALL_ID)

    assert resumed.value == release_0_1_0.FINISHED, resumed.text
    refused(again, suspension, "already-resumed")
    refused(replayed, suspension, "already-resumed")
    # The create ran in the process that paused; here only what came after the pause runs.
    assert crm.journal() == [("delete", "1", 1, suspension.execution_id)]


async def test_a_suspension_release_0_1_0_kept_in_sqlite_resumes_once(crm: Crm, tmp_path: Path) -> None:
    path = tmp_path / "suspensions.sqlite"
    shutil.copyfile(release_0_1_0.SQLITE, path)
    async with aclosing(SqliteSuspensions(path)) as store:
        await resumes_once(crm, store)


async def test_a_suspension_release_0_1_0_kept_in_postgres_resumes_once(
    crm: Crm, postgres_uri: str, postgres_table: str
) -> None:
    import asyncpg

    connection = await asyncpg.connect(postgres_uri)
    try:
        await connection.execute(release_0_1_0.POSTGRES_TABLE.format(table=postgres_table))
        await connection.execute(
            f"INSERT INTO {postgres_table} ({release_0_1_0.POSTGRES_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)",
            *release_0_1_0.stored_row(),
        )
    finally:
        await connection.close()
    async with aclosing(PostgresSuspensions(postgres_uri, table=postgres_table)) as store:
        await resumes_once(crm, store)
