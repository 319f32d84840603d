"""A run that may pause is fed whole when it can be, and pauses and resumes as a stepped one does.

A program that awaits each call where it makes it is captured from inside its deferred
call; any other is driven step by step (see ``tests/sandbox/monty/test_fed_pause.py``).
Either way the model, the host and the operations see the same pause and the same end,
sleeps count against one budget over the pause, and another runtime (of another process,
on the same store) can resume it. The operations write to a SQLite file whose journal
counts what ran.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from mycelium import (
    Access,
    ConfirmRequest,
    InvocationContext,
    Module,
    Runtime,
    Suspension,
    Suspensions,
    defer,
    operation,
)
from mycelium.failures import GuestException, SuspensionFailed
from mycelium.sandbox.monty import MontySandbox
from mycelium.sandbox.monty._paused import ANNOUNCED, _Paused
from mycelium.suspensions import MemorySuspensions, SuspensionStore
from tests.support.store_worker import open_store
from tests.support.suspend_worker import KEY, Crm, host

CODE = """
a = await crm.create(title="one")
print("made", a)
d = await crm.delete(id=a["id"])
e = await crm.create(title="two")
return [a, d, e]
"""
# The same program with a statement that changes nothing but keeps it from being fed.
STEPPED_CODE = "try:\n    pass\nexcept Exception:\n    pass\n" + CODE


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SuspensionStore]:
    made: SuspensionStore
    if request.param == "memory":
        made = MemorySuspensions()
    elif request.param == "sqlite":
        made = open_store({"kind": "sqlite", "path": str(tmp_path / "suspensions.sqlite")})
    else:
        uri = request.getfixturevalue("postgres_uri")
        made = open_store({"kind": "postgres", "dsn": uri, "table": request.getfixturevalue("postgres_table")})
    yield made
    await made.aclose()


@pytest.fixture
def crm(tmp_path: Path) -> Crm:
    return Crm(tmp_path / "crm.sqlite")


async def suspend(runtime: Runtime, code: str, tool_call_id: str = "t1") -> Suspension:
    async with runtime.lease() as lease:
        result = await lease.execute_tool.run(code, tool_call_id=tool_call_id)
    assert result.suspension is not None, result.text
    return result.suspension


async def paused_state(runtime: Runtime, store: SuspensionStore, suspension: Suspension) -> _Paused:
    """The sandbox's form of the paused run, as the store keeps it (sealed)."""
    assert runtime.suspensions is not None
    stored = await store.get(suspension.id)
    assert stored is not None
    record = await runtime.suspensions.unseal(stored)
    assert record is not None
    return _Paused.unpack(record.state)


async def test_a_run_paused_while_fed_pauses_and_resumes_as_a_stepped_one_does(
    store: SuspensionStore, tmp_path: Path
) -> None:
    ends = {}
    for code, path in ((CODE, "fed"), (STEPPED_CODE, "stepped")):
        crm = Crm(tmp_path / f"{path}.sqlite")
        async with host(crm, store) as runtime:
            suspension = await suspend(runtime, code, tool_call_id=path)
            paused = await paused_state(runtime, store, suspension)
            resumed = await runtime.resume(suspension.id, approved=True)
        seen = (suspension.path, suspension.arguments, suspension.operation_ordinal, resumed.value, resumed.logs)
        ends[path] = (paused.announced, seen, [entry[:3] for entry in crm.journal()])

    # Each took the path it should.
    assert ends["fed"][0]
    assert not ends["stepped"][0]
    assert ends["fed"][1:] == ends["stepped"][1:]
    assert ends["fed"][1] == ("crm.delete", {"id": 1}, 1, [{"id": 1}, {"deleted": 1}, {"id": 2}], ("made {'id': 1}",))
    # Each call ran once, its ordinals going on over the pause.
    assert ends["fed"][2] == [("create", "one", 0), ("delete", "1", 1), ("create", "two", 2)]


@pytest.mark.parametrize("store", ["sqlite", "postgres"], indirect=True)
async def test_a_run_paused_while_fed_resumes_once_on_another_runtime(crm: Crm, store: SuspensionStore) -> None:
    async with host(crm, store) as first:
        suspension = await suspend(first, CODE)
        assert (await paused_state(first, store, suspension)).announced
    # A runtime of its own, with its own sandbox and worker pool, as another process would have.
    async with host(crm, store) as second:
        resumed = await second.resume(suspension.id, approved=True)
        again = await second.resume(suspension.id, approved=True)

    assert resumed.value == [{"id": 1}, {"deleted": 1}, {"id": 2}], resumed.text
    assert resumed.logs == ("made {'id': 1}",)
    assert again.is_error  # already resumed: nothing runs twice
    assert [entry[:3] for entry in crm.journal()] == [("create", "one", 0), ("delete", "1", 1), ("create", "two", 2)]


async def test_a_gather_where_one_call_defers_while_the_others_finish_gets_every_result_after_resume(
    crm: Crm, store: SuspensionStore
) -> None:
    released = anyio.Event()
    finished: list[str] = []

    async def slow(_: object, context: InvocationContext) -> str:
        await released.wait()  # ends only once the deferral is under way
        finished.append("slow")
        return "slow done"

    def confirm(request: ConfirmRequest) -> str:
        released.set()
        return "defer"

    code = """
import asyncio
return await asyncio.gather(crm.create(title="before"), slow.wait(), crm.delete(id=1), crm.create(title="beside"))
"""
    waiting = Module(id="slow", name="slow", operations={"wait": operation(execute=slow, access="read")})
    async with host(crm, store, extra=[waiting], access=Access(confirm=confirm)) as runtime:
        suspension = await suspend(runtime, code)
        assert not (await paused_state(runtime, store, suspension)).announced  # a gather is stepped
        # Every call beside the deferred one ran to its end before the pause was kept.
        assert finished == ["slow"]
        assert sorted(entry[:2] for entry in crm.journal()) == [("create", "before"), ("create", "beside")]
    async with host(crm, store, extra=[waiting], access=Access(confirm=confirm)) as other:
        resumed = await other.resume(suspension.id, approved=True)

    assert resumed.value == [{"id": 1}, "slow done", {"deleted": 1}, {"id": 2}], resumed.text
    assert finished == ["slow"]
    assert sorted(entry[:2] for entry in crm.journal()) == [("create", "before"), ("create", "beside"), ("delete", "1")]


@pytest.mark.parametrize("store", ["memory"], indirect=True)
@pytest.mark.parametrize("sleep", ["import time\ntime.sleep(0.05)", "import asyncio\nawait asyncio.sleep(0.05)"])
async def test_sleeps_before_a_pause_and_after_it_share_one_budget(
    crm: Crm, store: SuspensionStore, sleep: str
) -> None:
    code = f"{sleep}\nd = await crm.delete(id=1)\n{sleep}\nreturn d"
    within = f"{sleep}\nd = await crm.delete(id=1)\nreturn d"
    results = {}
    for name, program in (("over", code), ("within", within)):
        async with (
            MontySandbox(max_sleep_ms=50, max_total_sleep_ms=80) as sandbox,
            Runtime(
                modules=[crm.module()],
                sandbox=sandbox,
                access=Access(confirm=defer),
                suspensions=Suspensions(store=store, key=KEY),
            ) as runtime,
        ):
            suspension = await suspend(runtime, program, tool_call_id=name)
            results[name] = await runtime.resume(suspension.id, approved=True)

    # 50 ms before the pause and 50 ms after it is over the run's 80: the second sleep fails.
    over = results["over"].failure
    assert isinstance(over, GuestException), results["over"].text
    assert (over.type_name, "sleep limit exceeded" in over.message) == ("TimeoutError", True)
    assert results["within"].value == {"deleted": 1}
    assert crm.ran("delete") == 2  # the call the run paused at ran in both


@pytest.mark.parametrize("store", ["memory"], indirect=True)
async def test_a_state_paused_in_its_call_resumes_only_at_the_call_it_names(crm: Crm, store: SuspensionStore) -> None:
    # A state saying the run paused at another call than the one loading it announces (a bug, as
    # the host's own key sealed it) is refused before anything runs: the call is never placed twice.
    async with host(crm, store) as runtime:
        suspension = await suspend(runtime, CODE)
        suspensions = runtime.suspensions
        assert suspensions is not None
        stored = await store.get(suspension.id)
        assert stored is not None
        record = await suspensions.unseal(stored)
        assert record is not None
        paused = _Paused.unpack(record.state)
        assert paused.announced
        elsewhere = paused._replace(deferred={ANNOUNCED: "crm.create"}).pack()
        assert await store.claim(stored.id, now=time.time(), tombstone=b"") is not None
        assert await store.restore(await suspensions.seal(dataclasses.replace(record, state=elsewhere)))

        resumed = await runtime.resume(suspension.id, approved=True)

    assert resumed.failure == SuspensionFailed(suspension_id=suspension.id, reason="unrestorable"), resumed.text
    assert [entry[:2] for entry in crm.journal()] == [("create", "one")]
