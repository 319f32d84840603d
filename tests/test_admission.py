"""Sandbox admission: the resolved policy, the runtime-wide slots, queueing and its expiry, declared limits.

Every run goes through a real ``Runtime`` and ``lease.execute_tool.run``. The sandbox here
is a test double keyed by the submitted code: each program has a :class:`Probe` the test
controls (an event that releases it) and that records what the sandbox saw. Ordering is
established with events and ``anyio.wait_all_tasks_blocked()``, never with sleeps; the
only timed waits are the deadlines under test.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from anyio.abc import TaskGroup

import mycelium._runtime as runtime_module
from mycelium import (
    AbortController,
    AbortSignal,
    AdmissionPolicy,
    ExecutionOptions,
    FailureEvidence,
    Lease,
    Runtime,
    ToolResult,
)
from mycelium.failures import Cancelled, DeadlineExceeded, SandboxBusy
from mycelium.sandbox import Sandbox, SandboxRequest
from tests.support.probes import Probe, ProbeSandbox, honour, instant, works_for


class Pending:
    """A run started in the background; ``result`` is set once ``done`` is."""

    def __init__(self) -> None:
        self.result: ToolResult | None = None
        self.done = anyio.Event()
        self.started_at = 0.0


def spawn(tg: TaskGroup, lease: Lease, code: str, signal: AbortSignal | None = None) -> Pending:
    pending = Pending()

    async def go() -> None:
        pending.started_at = anyio.current_time()
        pending.result = await lease.execute_tool.run(code, tool_call_id=f"call-{code}", signal=signal)
        pending.done.set()

    tg.start_soon(go)
    return pending


def outcome(pending: Pending) -> ToolResult:
    assert pending.result is not None, "the run has not finished"
    return pending.result


# ---------------------------------------------------------------------------------------------
# AdmissionPolicy.resolve


def test_admission_policy_resolve() -> None:
    normalize = AdmissionPolicy.resolve

    # An explicit capacity is used as given, whatever the cores, and is not clamped (above 32 too).
    for capacity in (1, 2, 5, 32, 33, 64):
        for cores in (None, 1, 8, 100):
            policy = normalize(ExecutionOptions(sandbox_capacity=capacity), cores)
            assert policy.capacity == capacity

    # Omitted: the observed cores clamped to 2..32; no observation means 2.
    derived = {cores: normalize(ExecutionOptions(), cores).capacity for cores in (1, 2, 8, 32, 33, 100)}
    assert derived == {1: 2, 2: 2, 8: 8, 32: 32, 33: 32, 100: 32}
    assert normalize(ExecutionOptions()).capacity == 2
    assert normalize(ExecutionOptions(), None).capacity == 2

    # Omitted wait: the invocation's timeout budget, 180,000 ms when that is omitted too.
    assert normalize(ExecutionOptions()).admission_wait_ms == 180_000
    assert normalize(ExecutionOptions(timeout_ms=5_000)).admission_wait_ms == 5_000
    # An explicit wait is used as given, at both ends of its range.
    for wait in (1, 1_234, 900_000):
        assert normalize(ExecutionOptions(timeout_ms=5_000, admission_wait_ms=wait)).admission_wait_ms == wait

    assert normalize(ExecutionOptions(sandbox_capacity=64, admission_wait_ms=250), 8) == AdmissionPolicy(
        capacity=64, admission_wait_ms=250
    )


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("sandbox_capacity", 0),
        ("sandbox_capacity", -1),
        ("sandbox_capacity", 1.5),
        ("sandbox_capacity", "2"),
        ("sandbox_capacity", True),
        ("admission_wait_ms", 0),
        ("admission_wait_ms", 900_001),
        ("admission_wait_ms", 2.5),
    ],
)
def test_admission_policy_resolve_refuses_invalid_values_naming_the_option(option: str, value: object) -> None:
    # Refused as soon as the options (and so the Runtime that takes them) are constructed.
    with pytest.raises(ValueError, match=option):
        Runtime(sandbox=ProbeSandbox(), execution=ExecutionOptions(**{option: value}))  # type: ignore[arg-type]

    # Options that slipped past their own validation are refused when a Runtime resolves them.
    smuggled = ExecutionOptions()
    object.__setattr__(smuggled, option, value)
    with pytest.raises(ValueError, match=option):
        AdmissionPolicy.resolve(smuggled, 8)
    with pytest.raises(ValueError, match=option):
        Runtime(sandbox=ProbeSandbox(), execution=smuggled)


async def test_admission_policy_resolve_reserves_nothing() -> None:
    sandbox = ProbeSandbox(a=Probe(instant, value=1))
    options = ExecutionOptions(sandbox_capacity=1, admission_wait_ms=50, timeout_ms=5_000)
    async with Runtime(sandbox=sandbox, execution=options) as runtime:
        for _ in range(10):
            assert AdmissionPolicy.resolve(runtime.options, 8) == runtime.admission
        # The runtime-wide tracker (private) has nothing in flight...
        assert runtime._slots.in_flight == 0
        # ...and the one slot is free: a run is admitted at once rather than being sandbox-busy.
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("a")
        assert (result.is_error, result.value) == (False, 1)
        assert runtime._slots.in_flight == 0


# ---------------------------------------------------------------------------------------------
# Runtime.admission


async def test_runtime_admission_exposes_the_resolved_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = Runtime(
        sandbox=ProbeSandbox(), execution=ExecutionOptions(timeout_ms=9_000, sandbox_capacity=64, admission_wait_ms=70)
    )
    assert explicit.admission == AdmissionPolicy(capacity=64, admission_wait_ms=70)

    observations: list[int | None] = []

    def observe(cores: int | None) -> Callable[[], int | None]:
        def available_cores() -> int | None:
            observations.append(cores)
            return cores

        return available_cores

    monkeypatch.setattr(runtime_module, "available_cores", observe(100))
    many = Runtime(sandbox=ProbeSandbox(), execution=ExecutionOptions(timeout_ms=9_000))
    assert many.admission == AdmissionPolicy(capacity=32, admission_wait_ms=9_000)

    monkeypatch.setattr(runtime_module, "available_cores", observe(None))
    unobserved = Runtime(sandbox=ProbeSandbox())
    assert unobserved.admission == AdmissionPolicy(capacity=2, admission_wait_ms=180_000)

    monkeypatch.setattr(runtime_module, "available_cores", observe(1))
    one = Runtime(sandbox=ProbeSandbox(), execution=ExecutionOptions(admission_wait_ms=5))
    assert one.admission == AdmissionPolicy(capacity=2, admission_wait_ms=5)

    # The cores are observed once per runtime, when it is constructed.
    assert observations == [100, None, 1]
    for runtime in (explicit, many, unobserved, one):
        await runtime.close()


# ---------------------------------------------------------------------------------------------
# Queueing for a slot


async def test_a_full_pool_makes_the_next_run_wait_until_a_slot_opens() -> None:
    first, second = Probe(value="first"), Probe(instant, value="second")
    sandbox = ProbeSandbox(first=first, second=second)
    options = ExecutionOptions(sandbox_capacity=1, timeout_ms=30_000)
    async with Runtime(sandbox=sandbox, execution=options) as runtime, runtime.lease() as lease:
        async with anyio.create_task_group() as tg:
            one = spawn(tg, lease, "first")
            await first.started.wait()
            two = spawn(tg, lease, "second")
            await anyio.wait_all_tasks_blocked()
            # The pool is full: the second run is queued, not started.
            assert second.calls == 0
            assert not two.done.is_set()

            first.release.set()
            await two.done.wait()
        assert outcome(one).value == "first"
        assert outcome(two).value == "second"
        assert (outcome(one).is_error, outcome(two).is_error) == (False, False)
    # The second program started only after the first had settled.
    assert sandbox.timeline == [("start", "first"), ("end", "first"), ("start", "second"), ("end", "second")]


async def test_admission_wait_expiry_is_sandbox_busy_and_the_program_never_runs() -> None:
    blocker, queued = Probe(value="blocker"), Probe(instant)
    sandbox = ProbeSandbox(blocker=blocker, queued=queued)
    options = ExecutionOptions(sandbox_capacity=1, admission_wait_ms=50, timeout_ms=30_000)
    async with Runtime(sandbox=sandbox, execution=options) as runtime, runtime.lease() as lease:
        async with anyio.create_task_group() as tg:
            held = spawn(tg, lease, "blocker")
            await blocker.started.wait()

            result = await lease.execute_tool.run("queued", tool_call_id="call-queued")

            assert isinstance(result.failure, SandboxBusy)
            assert result.failure.capacity == 1
            assert 50 <= result.failure.waited_ms < 30_000
            assert result.is_error
            assert result.failure.code == "sandbox-busy"
            # Contention, not a health alert: the model is told to retry later.
            assert "retry later" in result.text.lower()
            assert result.reference is not None
            assert result.reference in result.text

            # The expired waiter never starts, not even once the slot opens.
            blocker.release.set()
            await held.done.wait()
            await anyio.wait_all_tasks_blocked()
        assert outcome(held).value == "blocker"
    assert queued.calls == 0
    assert sandbox.timeline == [("start", "blocker"), ("end", "blocker")]


@pytest.mark.parametrize("admission_wait_ms", [None, 150, 5_000], ids=["omitted", "coincides", "longer"])
async def test_admission_wait_at_or_past_the_deadline_expires_as_deadline_exceeded(
    admission_wait_ms: int | None,
) -> None:
    blocker, queued = Probe(), Probe(instant)
    sandbox = ProbeSandbox(blocker=blocker, queued=queued)
    options = ExecutionOptions(sandbox_capacity=1, timeout_ms=150, admission_wait_ms=admission_wait_ms)
    async with Runtime(sandbox=sandbox, execution=options) as runtime, runtime.lease() as lease:
        async with anyio.create_task_group() as tg:
            # The blocker ignores its own deadline's abort until released, so its slot stays taken.
            held = spawn(tg, lease, "blocker")
            await blocker.started.wait()
            result = await lease.execute_tool.run("queued")
            blocker.release.set()
            await held.done.wait()
    assert result.failure == DeadlineExceeded(timeout_ms=150, acknowledged=True)
    assert queued.calls == 0


async def test_queueing_does_not_restart_the_execution_timeout() -> None:
    # The blocker's program takes 300 ms of a 600 ms budget; the queued run waits that long.
    blocker, queued = Probe(works_for(0.3), value="blocker"), Probe(honour)
    sandbox = ProbeSandbox(blocker=blocker, queued=queued)
    options = ExecutionOptions(sandbox_capacity=1, timeout_ms=600, abort_grace_ms=5_000)
    async with Runtime(sandbox=sandbox, execution=options) as runtime, runtime.lease() as lease:
        async with anyio.create_task_group() as tg:
            held = spawn(tg, lease, "blocker")
            await blocker.started.wait()
            waiting = spawn(tg, lease, "queued")
            await waiting.done.wait()
    assert outcome(held).value == "blocker"
    result = outcome(waiting)
    assert result.failure == DeadlineExceeded(timeout_ms=600, acknowledged=True)

    # It ran, after queueing, with only what was left of its budget...
    assert queued.calls == 1
    assert queued.request is not None
    assert queued.started_at is not None
    assert queued.aborted_at is not None
    assert queued.started_at - waiting.started_at >= 0.25
    assert queued.request.timeout_ms <= 350
    # ...and was aborted at its original deadline, not a full timeout after it was dispatched.
    assert queued.aborted_at - waiting.started_at >= 0.6 - 1e-6
    assert queued.aborted_at - queued.started_at < 0.6


async def test_caller_cancellation_while_queued_is_cancelled_and_never_starts_later() -> None:
    blocker, queued, after = Probe(value="blocker"), Probe(instant), Probe(instant, value="after")
    sandbox = ProbeSandbox(blocker=blocker, queued=queued, after=after)
    options = ExecutionOptions(sandbox_capacity=1, timeout_ms=30_000)
    controller = AbortController()
    async with Runtime(sandbox=sandbox, execution=options) as runtime, runtime.lease() as lease:
        async with anyio.create_task_group() as tg:
            held = spawn(tg, lease, "blocker")
            await blocker.started.wait()
            waiting = spawn(tg, lease, "queued", signal=controller.signal)
            await anyio.wait_all_tasks_blocked()
            assert not waiting.done.is_set()

            controller.abort("user pressed stop")
            await waiting.done.wait()
            assert outcome(waiting).failure == Cancelled(acknowledged=True, by="caller")

            blocker.release.set()
            await held.done.wait()
            await anyio.wait_all_tasks_blocked()
        # The cancelled waiter was removed: the slot went to nobody, and the next run gets it at once.
        assert queued.calls == 0
        result = await lease.execute_tool.run("after")
    assert result.value == "after"
    assert queued.calls == 0
    assert sandbox.timeline == [("start", "blocker"), ("end", "blocker"), ("start", "after"), ("end", "after")]


async def test_cancelling_the_task_of_a_queued_run_is_cancelled_and_never_starts_later() -> None:
    blocker, queued = Probe(value="blocker"), Probe(instant)
    sandbox = ProbeSandbox(blocker=blocker, queued=queued)
    options = ExecutionOptions(sandbox_capacity=1, timeout_ms=30_000)
    evidence: list[FailureEvidence] = []
    runtime = Runtime(sandbox=sandbox, execution=options, on_sandbox_failure=evidence.append)
    async with runtime, runtime.lease() as lease:
        async with anyio.create_task_group() as tg:
            held = spawn(tg, lease, "blocker")
            await blocker.started.wait()
            scope = anyio.CancelScope()
            returned = False

            async def run_queued() -> None:
                nonlocal returned
                with scope:
                    await lease.execute_tool.run("queued")
                    returned = True

            tg.start_soon(run_queued)
            await anyio.wait_all_tasks_blocked()
            scope.cancel()
            await anyio.wait_all_tasks_blocked()

            blocker.release.set()
            await held.done.wait()
            await anyio.wait_all_tasks_blocked()
        assert not returned
        assert outcome(held).value == "blocker"
    assert queued.calls == 0
    # Cancelling the awaiting task is the caller's cancellation, and every failed execute is
    # reported to the operator (as it is when the task is cancelled mid-run).
    assert [seen.failure for seen in evidence] == [Cancelled(acknowledged=True, by="caller")]


# ---------------------------------------------------------------------------------------------
# Declared unenforced limits


class LocalDevSandbox(Sandbox):
    """A sandbox its host declares does not enforce CPU or memory limits where it runs."""

    adapter = "test"
    unenforced_limits = ("cpu", "memory")

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> Any:
        return 1


def notices(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "mycelium" and "not enforced" in record.getMessage()
    ]


async def test_declared_unenforced_limits_are_logged_once_per_limit_per_runtime(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mycelium")
    sandbox = LocalDevSandbox()
    async with Runtime(sandbox=sandbox) as runtime, runtime.lease() as lease:
        for _ in range(3):
            assert (await lease.execute_tool.run("1")).value == 1
    once = notices(caplog)
    assert sorted(once) == ["CPU limits are not enforced in local dev", "Memory limits are not enforced in local dev"]

    # Another runtime says it again, once, for itself (here with the same sandbox instance).
    caplog.clear()
    async with Runtime(sandbox=sandbox) as second, second.lease() as lease:
        for _ in range(2):
            await lease.execute_tool.run("1")
    async with Runtime(sandbox=LocalDevSandbox()) as third, third.lease() as lease:
        await lease.execute_tool.run("1")
    again = notices(caplog)
    assert again.count("CPU limits are not enforced in local dev") == 2
    assert again.count("Memory limits are not enforced in local dev") == 2
    assert len(again) == 4

    # A sandbox that declares nothing gets no notice; declaring adds no enforcement (the runs succeed).
    caplog.clear()
    async with Runtime(sandbox=ProbeSandbox(a=Probe(instant))) as quiet, quiet.lease() as lease:
        await lease.execute_tool.run("a")
    assert notices(caplog) == []
