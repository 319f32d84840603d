"""Deadlines, caller cancellation, acknowledgement, and the operator's failure evidence.

Every run goes through a real ``Runtime`` and ``lease.execute_tool.run``. The sandbox here
is a test double keyed by the submitted code: each program has a :class:`Probe` the test
controls and that records what the sandbox saw (the request, the signal). Ordering is
established with events and ``anyio.wait_all_tasks_blocked()``, never with sleeps; the
only timed waits are the deadlines and grace periods under test.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel
import pytest

from mycelium import (
    AbortController,
    AbortError,
    ExecutionOptions,
    FailureEvidence,
    Lease,
    Runtime,
    Session,
    ToolCall,
    ToolResult,
)
from mycelium.failures import (
    Cancelled,
    DeadlineExceeded,
    GuestException,
    InvalidArguments,
    InvalidResult,
    ResultTooLarge,
    SandboxBusy,
    SandboxError,
    Unknown,
)
from tests.support.probes import Behaviour, Probe, ProbeSandbox, gate, honour, ignore, instant, late, raising


class ShaSandbox(ProbeSandbox):
    build_sha = "sha-test-0123456789"


@dataclass
class Evidence:
    """Collects what ``on_sandbox_failure`` receives."""

    seen: list[FailureEvidence] = field(default_factory=list)

    def __call__(self, evidence: FailureEvidence) -> None:
        self.seen.append(evidence)

    @property
    def one(self) -> FailureEvidence:
        assert len(self.seen) == 1, self.seen
        return self.seen[0]


# ---------------------------------------------------------------------------------------------
# Before dispatch


async def test_an_abort_before_dispatch_starts_no_guest() -> None:
    program = Probe(instant)
    controller = AbortController()
    controller.abort("changed my mind")
    evidence = Evidence()
    async with Runtime(sandbox=ProbeSandbox(p=program), on_sandbox_failure=evidence) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("p", signal=controller.signal)
            # The runtime is unaffected: the same program runs when not aborted.
            assert (await lease.execute_tool.run("p")).value == "ok"
    assert result.failure == Cancelled(acknowledged=True, by="caller")
    assert result.is_error
    assert evidence.one.failure == result.failure
    assert program.calls == 1  # only the second, un-aborted run


# ---------------------------------------------------------------------------------------------
# Deadlines


async def test_deadline_with_a_sandbox_that_honours_the_abort_is_acknowledged() -> None:
    program = Probe(honour)
    options = ExecutionOptions(timeout_ms=100, abort_grace_ms=5_000)
    async with Runtime(sandbox=ProbeSandbox(p=program), execution=options) as runtime, runtime.lease() as lease:
        began = anyio.current_time()
        result = await lease.execute_tool.run("p")
        took = anyio.current_time() - began
    assert result.failure == DeadlineExceeded(timeout_ms=100, acknowledged=True)
    assert program.signal is not None
    assert program.signal.aborted
    assert program.aborted_at is not None
    assert program.aborted_at - began >= 0.1 - 1e-6
    # It settled within the grace, so the run returned without waiting the grace out.
    assert took < 5.0
    assert "within 100 ms" in result.text


async def test_deadline_with_a_sandbox_that_ignores_the_abort_is_unacknowledged_and_keeps_its_slot() -> None:
    ignored, following = Probe(ignore, value="ignored"), Probe(instant, value="following")
    sandbox = ProbeSandbox(ignored=ignored, following=following)
    options = ExecutionOptions(sandbox_capacity=1, timeout_ms=100, abort_grace_ms=50, admission_wait_ms=50)
    async with Runtime(sandbox=sandbox, execution=options) as runtime, runtime.lease() as lease:
        try:
            began = anyio.current_time()
            result = await lease.execute_tool.run("ignored")
            took = anyio.current_time() - began
            assert result.failure == DeadlineExceeded(timeout_ms=100, acknowledged=False)
            assert "was stopped" not in result.text  # never reported as stopped
            assert ignored.signal is not None
            assert ignored.signal.aborted
            assert took >= 0.1 + 0.05 - 1e-6  # the deadline, then the whole grace
            assert not ignored.settled.is_set()

            # The unsettled work keeps its slot runtime-wide: the next run cannot get one.
            busy = await lease.execute_tool.run("following")
            assert isinstance(busy.failure, SandboxBusy)
            assert busy.failure.capacity == 1
            assert following.calls == 0
            async with runtime.lease() as other:
                assert isinstance((await other.execute_tool.run("following")).failure, SandboxBusy)
            assert following.calls == 0
        finally:
            ignored.release.set()

        # Once it really settles, its slot opens and the next run succeeds.
        await ignored.settled.wait()
        await anyio.wait_all_tasks_blocked()
        after = await lease.execute_tool.run("following")
    assert (after.is_error, after.value) == (False, "following")
    assert following.calls == 1


async def test_close_waits_for_unacknowledged_work_to_settle() -> None:
    ignored = Probe(ignore)
    options = ExecutionOptions(timeout_ms=100, abort_grace_ms=50)
    async with Runtime(sandbox=ProbeSandbox(ignored=ignored), execution=options) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("ignored")
        assert result.failure == DeadlineExceeded(timeout_ms=100, acknowledged=False)

        closed = anyio.Event()
        settled_when_closed: list[bool] = []

        async def close() -> None:
            await runtime.close()
            settled_when_closed.append(ignored.settled.is_set())
            closed.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(close)
            await anyio.wait_all_tasks_blocked()
            assert runtime.closed
            assert not closed.is_set()  # still waiting for the backing work
            ignored.release.set()
            await closed.wait()
        assert settled_when_closed == [True]


# ---------------------------------------------------------------------------------------------
# Caller cancellation


@pytest.mark.parametrize(("behaviour", "acknowledged"), [(honour, True), (ignore, False)], ids=["honours", "ignores"])
async def test_caller_abort_mid_run_is_cancelled_acknowledged_as_the_sandbox_settles(
    behaviour: Behaviour, acknowledged: bool
) -> None:
    program = Probe(behaviour)
    controller = AbortController()
    evidence = Evidence()
    options = ExecutionOptions(timeout_ms=30_000, abort_grace_ms=50)
    async with Runtime(sandbox=ProbeSandbox(p=program), execution=options, on_sandbox_failure=evidence) as runtime:
        try:
            async with runtime.lease() as lease, anyio.create_task_group() as tg:
                results: list[ToolResult] = []

                async def go() -> None:
                    results.append(await lease.execute_tool.run("p", signal=controller.signal))

                tg.start_soon(go)
                await program.started.wait()
                controller.abort("user pressed stop")
            assert results[0].failure == Cancelled(acknowledged=acknowledged, by="caller")
            assert program.signal is not None
            assert program.signal.aborted
            assert program.settled.is_set() is acknowledged
            assert evidence.one.failure == results[0].failure
        finally:
            program.release.set()
            await runtime.close()


async def test_a_late_success_after_the_callers_abort_is_cancelled() -> None:
    program = Probe(late, value={"secret": "late-value"})
    controller = AbortController()
    options = ExecutionOptions(timeout_ms=30_000, abort_grace_ms=5_000)
    async with Runtime(sandbox=ProbeSandbox(p=program), execution=options) as runtime, runtime.lease() as lease:
        async with anyio.create_task_group() as tg:
            results: list[ToolResult] = []

            async def go() -> None:
                results.append(await lease.execute_tool.run("p", signal=controller.signal))

            tg.start_soon(go)
            await program.started.wait()
            controller.abort("user pressed stop")
    result = results[0]
    assert program.settled.is_set()  # the sandbox did return its value...
    assert result.failure == Cancelled(acknowledged=True, by="caller")  # ...but the abort decides
    assert result.is_error
    assert result.value is None
    assert "late-value" not in result.text


@pytest.mark.parametrize(("behaviour", "acknowledged"), [(honour, True), (ignore, False)], ids=["honours", "ignores"])
async def test_cancelling_the_awaiting_task_aborts_the_signal_and_reports_cancelled(
    behaviour: Behaviour, acknowledged: bool
) -> None:
    program = Probe(behaviour)
    evidence = Evidence()
    options = ExecutionOptions(timeout_ms=30_000, abort_grace_ms=50)
    async with Runtime(sandbox=ProbeSandbox(p=program), execution=options, on_sandbox_failure=evidence) as runtime:
        returned = False
        try:
            async with runtime.lease() as lease, anyio.create_task_group() as tg:
                scope = anyio.CancelScope()

                async def go() -> None:
                    nonlocal returned
                    with scope:
                        await lease.execute_tool.run("p", tool_call_id="call-1")
                        returned = True

                tg.start_soon(go)
                await program.started.wait()
                assert program.signal is not None
                assert not program.signal.aborted
                scope.cancel()
            assert not returned
            assert program.signal.aborted
            assert evidence.one.failure == Cancelled(acknowledged=acknowledged, by="caller")
            assert evidence.one.tool_call_id == "call-1"
        finally:
            program.release.set()
            await runtime.close()


@pytest.mark.parametrize(
    "make_error",
    [lambda: AbortError("the adapter's own"), asyncio.CancelledError],
    ids=["AbortError", "CancelledError"],
)
async def test_an_adapters_own_abort_or_cancellation_is_unknown_not_cancelled(
    make_error: Callable[[], BaseException],
) -> None:
    error = make_error()
    program = Probe(raising(error))
    evidence = Evidence()
    async with Runtime(sandbox=ProbeSandbox(p=program), on_sandbox_failure=evidence) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("p")
    assert program.signal is not None
    assert not program.signal.aborted
    assert result.failure == Unknown()
    assert evidence.one.failure == Unknown()
    assert evidence.one.cause is error


# ---------------------------------------------------------------------------------------------
# Operator evidence


async def _foreign(lease: Lease, sandbox: ProbeSandbox) -> ToolResult:
    return await lease.execute_tool.run("foreign", tool_call_id="call-7")


async def _before_dispatch(lease: Lease, sandbox: ProbeSandbox) -> ToolResult:
    controller = AbortController()
    controller.abort()
    return await lease.execute_tool.run("instant", tool_call_id="call-7", signal=controller.signal)


async def _busy(lease: Lease, sandbox: ProbeSandbox) -> ToolResult:
    blocker = sandbox.probes["blocker"]
    async with anyio.create_task_group() as tg:
        tg.start_soon(lease.execute_tool.run, "blocker")
        await blocker.started.wait()
        result = await lease.execute_tool.run("instant", tool_call_id="call-7")
        blocker.release.set()
    return result


FOREIGN = RuntimeError("boom")

SCENARIOS: dict[str, tuple[ExecutionOptions, Callable[[Lease, ProbeSandbox], Awaitable[ToolResult]], type]] = {
    "foreign": (ExecutionOptions(), _foreign, Unknown),
    "typed": (
        ExecutionOptions(),
        lambda lease, sandbox: lease.execute_tool.run("typed", tool_call_id="call-7"),
        GuestException,
    ),
    "invalid-result": (
        ExecutionOptions(),
        lambda lease, sandbox: lease.execute_tool.run("set", tool_call_id="call-7"),
        InvalidResult,
    ),
    "too-large": (
        ExecutionOptions(max_result_bytes=10),
        lambda lease, sandbox: lease.execute_tool.run("large", tool_call_id="call-7"),
        ResultTooLarge,
    ),
    "deadline": (
        ExecutionOptions(timeout_ms=50),
        lambda lease, sandbox: lease.execute_tool.run("honour", tool_call_id="call-7"),
        DeadlineExceeded,
    ),
    "cancelled": (ExecutionOptions(), _before_dispatch, Cancelled),
    "busy": (
        ExecutionOptions(sandbox_capacity=1, admission_wait_ms=20, timeout_ms=30_000),
        _busy,
        SandboxBusy,
    ),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_on_sandbox_failure_receives_evidence_for_every_failed_execute(scenario: str) -> None:
    options, run, failure_type = SCENARIOS[scenario]
    sandbox = ShaSandbox(
        foreign=Probe(raising(FOREIGN)),
        typed=Probe(raising(SandboxError(GuestException(type_name="ValueError", message="bad")))),
        set=Probe(instant, value={1, 2}),
        large=Probe(instant, value="x" * 100),
        honour=Probe(honour),
        instant=Probe(instant),
        blocker=Probe(gate),
    )
    evidence = Evidence()
    async with Runtime(
        sandbox=sandbox, execution=options, session=Session("s1"), on_sandbox_failure=evidence
    ) as runtime:
        async with runtime.lease() as lease:
            began = anyio.current_time()
            result = await run(lease, sandbox)
            took_ms = (anyio.current_time() - began) * 1000
    seen = evidence.one  # exactly one report for the one failed execute (the blocker succeeded)
    assert isinstance(result.failure, failure_type)
    assert seen.failure == result.failure
    assert seen.reference == result.reference
    assert result.reference is not None
    assert result.reference in result.text
    assert seen.session_id == "s1"
    assert seen.tool_call_id == "call-7"
    assert seen.adapter == "test"
    assert seen.build_sha == "sha-test-0123456789"
    assert 0 <= seen.duration_ms <= took_ms + 1
    assert isinstance(seen.execution_id, str)
    assert seen.execution_id
    ran = [probe for name, probe in sandbox.probes.items() if probe.calls and name != "blocker"]
    for probe in ran:
        assert probe.request is not None
        assert seen.execution_id == probe.request.execution_id
    # Evidence stays with the operator: none of it is in what the model reads.
    assert seen.execution_id not in result.text
    assert "sha-test" not in result.text
    if scenario == "foreign":
        assert seen.cause is FOREIGN
    if scenario in ("invalid-result", "too-large", "deadline", "cancelled", "busy"):
        assert seen.cause is None


async def test_on_sandbox_failure_evidence_carries_a_foreign_cause_that_never_reaches_the_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "secret-token-8f3a9c /home/operator/.aws/credentials"
    error = RuntimeError(secret)
    sandbox = ShaSandbox(fine=Probe(instant, value=1), broken=Probe(raising(error)))
    evidence = Evidence()
    async with Runtime(sandbox=sandbox, session=Session("s1"), on_sandbox_failure=evidence) as runtime:
        async with runtime.lease() as lease:
            ok = await lease.execute_tool.run("fine", tool_call_id="call-1")
            assert evidence.seen == []  # a success is not reported
            result = await lease.execute_tool.run("broken", tool_call_id="call-2")
    assert ok.value == 1
    seen = evidence.one
    assert seen.cause is error
    assert seen.failure == result.failure == Unknown()
    assert seen.reference == result.reference
    assert seen.tool_call_id == "call-2"
    assert "secret-token" not in result.text
    assert "/home/operator" not in result.text
    assert "secret-token" not in repr(result.failure)
    assert result.logs == ()


async def test_on_sandbox_failure_for_invalid_arguments_has_no_execution_id() -> None:
    program = Probe(instant)
    evidence = Evidence()
    sandbox = ShaSandbox(p=program)
    async with Runtime(sandbox=sandbox, session=Session("s1"), on_sandbox_failure=evidence) as runtime:
        async with runtime.lease() as lease:
            prepared = lease.execute_tool.prepare(ToolCall(id="call-9", name="execute", arguments={"cod": "p"}))
            result = await prepared.execute()
    assert isinstance(result.failure, InvalidArguments)
    seen = evidence.one
    assert seen.execution_id is None
    assert seen.failure == result.failure
    assert seen.reference == result.reference
    assert result.reference is not None
    assert result.reference in result.text
    assert (seen.session_id, seen.tool_call_id, seen.adapter, seen.build_sha) == (
        "s1",
        "call-9",
        "test",
        "sha-test-0123456789",
    )
    assert seen.duration_ms >= 0
    assert seen.cause is None
    assert program.calls == 0


def _raise_sync(evidence: FailureEvidence) -> None:
    raise RuntimeError("observer broke")


async def _raise_async(evidence: FailureEvidence) -> None:
    await anyio.lowlevel.checkpoint()
    raise RuntimeError("observer broke")


@pytest.mark.parametrize("observer", [_raise_sync, _raise_async], ids=["sync", "async"])
async def test_an_on_sandbox_failure_that_raises_changes_nothing_and_is_logged(
    observer: Callable[[FailureEvidence], object], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mycelium")
    sandbox = ProbeSandbox(broken=Probe(raising(RuntimeError("boom"))), fine=Probe(instant, value=2))
    async with Runtime(sandbox=sandbox, on_sandbox_failure=observer) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run("broken")
        after = await lease.execute_tool.run("fine")
    assert result.failure == Unknown()
    assert result.is_error
    assert result.reference is not None
    assert result.reference in result.text
    assert "observer broke" not in result.text
    assert (after.is_error, after.value) == (False, 2)
    logged = [r for r in caplog.records if r.name == "mycelium" and "on_sandbox_failure" in r.getMessage()]
    assert len(logged) == 1
    assert logged[0].levelno >= logging.ERROR
    assert logged[0].exc_info is not None
    assert str(logged[0].exc_info[1]) == "observer broke"
