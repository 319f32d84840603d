"""A run its host hands off pauses at its next call and goes on wherever it is resumed, each call once.

A server that stops hands its runs off (``PreparedExecute.execute(pause=...)``): a run that can
pause pauses at the next operation call it places, into the store, and another runtime sharing
that store resumes it with no decision. The hand-off is asked for from inside an operation
(``drain.now()``), so the test knows exactly where the program is when it happens.
"""

from __future__ import annotations

from pathlib import Path

from mycelium import AbortController, Access, Module, Runtime, Suspensions, ToolCall, ToolResult, operation
from mycelium.failures import SuspensionFailed
from mycelium.sandbox.monty import MontySandbox
from mycelium.suspensions import SqliteSuspensions
from tests.support.suspend_worker import KEY, Crm, Note, host


def drain_module(controller: AbortController) -> Module:
    """``drain.now()`` asks for the hand-off, as a stopping server would while the program runs."""

    def now() -> str:
        controller.abort("draining")
        return "draining"

    return Module(
        id="drain", name="drain", operations={"now": operation(execute=now, access="read", description="Hand off.")}
    )


async def run(runtime: Runtime, code: str, pause: AbortController, tool_call_id: str = "call-1") -> ToolResult:
    async with runtime.lease() as lease:
        prepared = lease.execute_tool.prepare(ToolCall(id=tool_call_id, name="execute", arguments={"code": code}))
        return await prepared.execute(pause=pause.signal)


async def resume(runtime: Runtime, suspension_id: str, approved: bool | None = None) -> ToolResult:
    async with runtime.lease() as lease:
        return await lease.execute_tool.resume(suspension_id, approved=approved)


def two_hosts(crm: Crm, path: Path, controller: AbortController, **options: object) -> tuple[Runtime, Runtime]:
    """Two runtimes of one host sharing one SQLite store: the one that stops and the one that takes over."""
    return tuple(  # type: ignore[return-value]
        host(crm, SqliteSuspensions(path), extra=[drain_module(controller)], **options)  # type: ignore[arg-type]
        for _ in range(2)
    )


HANDED_OFF_BETWEEN_WRITES = """
a = await crm.create(title="one")
await drain.now()
b = await crm.create(title="two")
return [a, b]
"""


async def test_a_handed_off_run_pauses_at_its_next_call_and_another_runtime_finishes_it_each_call_once(
    tmp_path: Path,
) -> None:
    crm, pause = Crm(tmp_path / "crm.sqlite"), AbortController()
    stopping, taking_over = two_hosts(crm, tmp_path / "suspensions.sqlite", pause)
    async with stopping, taking_over:
        paused = await run(stopping, HANDED_OFF_BETWEEN_WRITES, pause)
        assert paused.suspension is not None
        assert paused.suspension.handed_off
        assert paused.suspension.path == "crm.create"
        assert not paused.is_error
        assert crm.titles() == ["one"]  # the second write waits for the resume
        finished = await resume(taking_over, paused.suspension.id)
        again = await resume(taking_over, paused.suspension.id)
    assert finished.value == [{"id": 1}, {"id": 2}], finished.text
    assert [op for op, *_ in crm.journal()] == ["create", "create"]
    assert [ordinal for _, _, ordinal, _ in crm.journal()] == [0, 2]  # drain.now() took ordinal 1
    assert isinstance(again.failure, SuspensionFailed)
    assert again.failure.reason == "already-resumed"


async def test_calls_in_flight_when_the_run_is_handed_off_settle_and_keep_their_results(tmp_path: Path) -> None:
    crm, pause = Crm(tmp_path / "crm.sqlite"), AbortController()
    stopping, taking_over = two_hosts(crm, tmp_path / "suspensions.sqlite", pause)
    code = """
import asyncio
made, said = await asyncio.gather(crm.create(title="one"), drain.now())
later = await crm.create(title="two")
return [made, said, later]
"""
    async with stopping, taking_over:
        paused = await run(stopping, code, pause)
        assert paused.suspension is not None
        assert paused.suspension.handed_off
        finished = await resume(taking_over, paused.suspension.id)
    assert finished.value == [{"id": 1}, "draining", {"id": 2}], finished.text
    assert crm.ran("create") == 2


async def test_a_confirmed_call_a_run_was_handed_off_at_is_asked_afresh_never_taken_as_approved(
    tmp_path: Path,
) -> None:
    crm, pause = Crm(tmp_path / "crm.sqlite"), AbortController()
    stopping, taking_over = two_hosts(crm, tmp_path / "suspensions.sqlite", pause)
    code = """
a = await crm.create(title="one")
await drain.now()
return await crm.delete(id=a["id"])
"""
    async with stopping, taking_over:
        paused = await run(stopping, code, pause)
        assert paused.suspension is not None
        assert paused.suspension.handed_off
        # Nobody decides a hand-off: a decision given for it neither approves nor is recorded.
        assert not await taking_over.decide(paused.suspension.id, approved=True)
        asked = await resume(taking_over, paused.suspension.id, approved=True)
        assert asked.suspension is not None
        assert not asked.suspension.handed_off
        assert asked.suspension.path == "crm.delete"
        assert crm.ran("delete") == 0
        finished = await resume(taking_over, asked.suspension.id, approved=True)
    assert finished.value == {"deleted": 1}, finished.text
    assert crm.ran("delete") == 1


async def test_a_resumed_run_is_handed_off_again_when_its_resume_is_asked_to_pause(tmp_path: Path) -> None:
    crm, pause = Crm(tmp_path / "crm.sqlite"), AbortController()
    stopping, taking_over = two_hosts(crm, tmp_path / "suspensions.sqlite", pause)
    code = """
a = await crm.create(title="one")
await drain.now()
b = await crm.create(title="two")
await drain.now()
c = await crm.create(title="three")
return [a, b, c]
"""
    async with stopping, taking_over:
        first = await run(stopping, code, pause)
        assert first.suspension is not None
        async with taking_over.lease() as lease:
            second = await lease.execute_tool.resume(first.suspension.id, pause=pause.signal)
        assert second.suspension is not None
        assert second.suspension.handed_off
        assert crm.titles() == ["one", "two"]
        finished = await resume(stopping, second.suspension.id)
    assert finished.value == [{"id": 1}, {"id": 2}, {"id": 3}], finished.text
    assert crm.ran("create") == 3


async def test_a_hand_off_the_store_cannot_keep_goes_on_in_place_with_every_call_run_once(tmp_path: Path) -> None:
    crm, pause = Crm(tmp_path / "crm.sqlite"), AbortController()
    # A state over the bound cannot be kept: nobody could resume it elsewhere, so it goes on here.
    [stopping, _] = two_hosts(crm, tmp_path / "suspensions.sqlite", pause, max_state_bytes=16)
    async with stopping:
        result = await run(stopping, HANDED_OFF_BETWEEN_WRITES, pause)
    assert result.suspension is None
    assert result.value == [{"id": 1}, {"id": 2}], result.text
    assert crm.ran("create") == 2


async def test_a_framework_replaying_a_handed_off_tool_call_resumes_it_without_a_decision(tmp_path: Path) -> None:
    crm, pause = Crm(tmp_path / "crm.sqlite"), AbortController()
    stopping, taking_over = two_hosts(crm, tmp_path / "suspensions.sqlite", pause)
    async with stopping, taking_over:
        paused = await run(stopping, HANDED_OFF_BETWEEN_WRITES, pause, tool_call_id="call-7")
        assert paused.suspension is not None
        replayed = await run(taking_over, HANDED_OFF_BETWEEN_WRITES, AbortController(), tool_call_id="call-7")
    assert replayed.value == [{"id": 1}, {"id": 2}], replayed.text
    assert crm.ran("create") == 2


async def test_a_run_fed_whole_is_never_handed_off(tmp_path: Path) -> None:
    # No confirm operation in the lease: the run is fed whole and cannot pause, so it goes on.
    crm, pause = Crm(tmp_path / "crm.sqlite"), AbortController()
    notes = Module(id="crm", name="crm", operations={"create": operation(input=Note, execute=crm.create)})
    runtime = Runtime(
        modules=[notes, drain_module(pause)],
        sandbox=MontySandbox(),
        access=Access(),
        suspensions=Suspensions(store=SqliteSuspensions(tmp_path / "s.sqlite"), key=KEY),
    )
    async with runtime:
        result = await run(runtime, HANDED_OFF_BETWEEN_WRITES, pause)
    assert result.suspension is None
    assert result.value == [{"id": 1}, {"id": 2}], result.text


async def test_a_call_placed_after_the_hand_off_that_the_program_never_awaits_is_said_not_to_have_run(
    tmp_path: Path,
) -> None:
    crm, pause = Crm(tmp_path / "crm.sqlite"), AbortController()
    [stopping, _] = two_hosts(crm, tmp_path / "suspensions.sqlite", pause)
    code = """
await drain.now()
crm.create(title="never awaited")
return "done"
"""
    async with stopping:
        result = await run(stopping, code, pause)
    assert result.value == "done", result.text
    assert crm.ran("create") == 0
    assert any("handed the run off" in line and "did not run" in line for line in result.logs), result.logs
