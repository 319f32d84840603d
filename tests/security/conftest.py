"""The security suite's harness: a real Runtime over a real MontySandbox, and a host to protect.

Every adversarial program runs through ``Runtime -> lease -> execute_tool.run`` against a
small ``notes`` host module. The harness checks, for every result, what must hold whatever
the program did (no planted secret, no host path, no host traceback, a bounded typed
failure), and, when the test ends, that the host is unharmed: each runtime still runs an
ordinary program, then closes leaving no worker process and no asyncio task behind, and
the host's environment and working directory are as they were.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from mycelium import ExecutionOptions, InvocationContext, Module, Runtime, Session, ToolResult
from mycelium.failures import GuestException
from mycelium.sandbox._boundary import MAX_FAILURE_MESSAGE_CHARS
from mycelium.sandbox.monty import MontySandbox

MIB = 1024 * 1024
GUEST_MEMORY_LIMIT = 64 * MIB
TIMEOUT_MS = 1_500
GRACE_MS = 1_000
MAX_PRINT_BYTES = 4_096
MAX_OPERATION_CALLS = 50
MAX_SLEEP_MS = 200
MAX_TOTAL_SLEEP_MS = 500
# A run that hits the deadline must be over by then (timeout, grace, scheduling slack).
STOP_BOUND_S = (TIMEOUT_MS + GRACE_MS) / 1000 + 1.5
# Anything the sandbox refuses outright must come back well before the deadline.
QUICK_BOUND_S = TIMEOUT_MS / 1000

SECRET_ENV = "MYCELIUM_TEST_SECRET"
REPO_ROOT = str(Path(__file__).resolve().parents[2])
# Text that only the host has: where its code lives, and how Python prints host objects.
HOST_MARKERS = (
    REPO_ROOT,
    "site-packages",
    sys.prefix,
    "/mycelium/",
    "_GuestRun",
    "<locals>",
    'File "/',
)
# What a model reads never carries a traceback, not even the guest's own.
TEXT_ONLY_MARKERS = ("Traceback (most recent call last)",)
ORDINARY_PROGRAM = "found = await notes.search(query='ok')\nreturn {'found': found, 'n': len(found)}"
ORDINARY_TEXT = '{"found":["note about ok"],"n":1}'


@dataclass
class HostState:
    """What the host module saw; tests read it to prove the host was (or was not) reached."""

    env_secret: str
    op_secret: str
    gate: anyio.Event
    """Never set: ``notes.hang`` waits on it forever unless cancelled."""
    searches: int = 0
    hang_started: int = 0
    hang_running: int = 0
    hang_cancelled: int = 0
    held_bytes: int = 0
    peak_held_bytes: int = 0
    records: list[object] = field(default_factory=list)
    """What ``notes.record`` stored, exactly as it arrived."""


def notes_module(state: HostState) -> Module:
    """The host module every test protects: a search, a failing operation and a hanging one."""
    notes = Module(id="security-notes", name="notes", description="Notes kept by the test host")

    @notes.operation(access="read")
    async def search(query: str) -> list[str]:
        """Find notes mentioning the query."""
        state.searches += 1
        return [f"note about {query}"]

    @notes.operation(access="write")
    async def explode() -> str:
        """Fails on the host with a secret in its message."""
        raise RuntimeError(f"connection to postgres://admin:{state.op_secret}@db.internal failed")

    @notes.operation(access="read")
    async def hang() -> str:
        """Never returns unless cancelled."""
        state.hang_started += 1
        state.hang_running += 1
        try:
            await state.gate.wait()
        except anyio.get_cancelled_exc_class():
            state.hang_cancelled += 1
            raise
        finally:
            state.hang_running -= 1
        return "released"

    @notes.operation(access="write")
    async def record(data: Any) -> int:
        """Stores any JSON value as it arrives; says how many are stored."""
        state.records.append(data)
        return len(state.records)

    @notes.operation(access="read")
    async def whoami(ctx: InvocationContext) -> dict[str, str | int | None]:
        """Who the host believes is calling: injected by the host, never taken from the guest."""
        return {"session": ctx.session_id, "tool_call": ctx.tool_call_id, "ordinal": ctx.operation_ordinal}

    @notes.operation(access="read")
    async def hold(text: str) -> int:
        """Keeps its input a moment (as a slow host call would) and says how long it was."""
        state.held_bytes += len(text)
        state.peak_held_bytes = max(state.peak_held_bytes, state.held_bytes)
        try:
            await anyio.sleep(0.5)
        finally:
            state.held_bytes -= len(text)
        return len(text)

    return notes


@dataclass
class Outcome:
    result: ToolResult
    elapsed: float

    @property
    def code(self) -> str | None:
        return None if self.result.failure is None else self.result.failure.code


@dataclass
class Host:
    """Opens runtimes over the host module, runs programs and checks every result."""

    state: HostState
    running: AsyncExitStack
    """Where the host's runtimes run: left (closing them) when the fixture ends."""
    runtimes: list[Runtime] = field(default_factory=list)
    _default: Runtime | None = None

    async def open(
        self,
        *,
        timeout_ms: int = TIMEOUT_MS,
        abort_grace_ms: int = GRACE_MS,
        sandbox_capacity: int | None = None,
        session: Session | None = None,
        **sandbox_options: Any,
    ) -> Runtime:
        options: dict[str, Any] = {
            "memory_limit_bytes": GUEST_MEMORY_LIMIT,
            "max_total_sleep_ms": MAX_TOTAL_SLEEP_MS,
            "max_sleep_ms": MAX_SLEEP_MS,
            "max_print_bytes": MAX_PRINT_BYTES,
            "max_operation_calls": MAX_OPERATION_CALLS,
        }
        options.update(sandbox_options)
        runtime = Runtime(
            modules=[notes_module(self.state)],
            sandbox=MontySandbox(**options),
            session=session,
            execution=ExecutionOptions(
                timeout_ms=timeout_ms, abort_grace_ms=abort_grace_ms, sandbox_capacity=sandbox_capacity
            ),
        )
        await self.running.enter_async_context(runtime)
        self.runtimes.append(runtime)
        return runtime

    async def open_default(self) -> None:
        """Open the runtime :meth:`run` uses when it is given none; checked at teardown only once used."""
        self._default = await self.open()
        self.runtimes.remove(self._default)

    async def run(self, code: str, runtime: Runtime | None = None) -> Outcome:
        """Run ``code`` as a model would, and check what must hold for any program."""
        if runtime is None:
            assert self._default is not None, "the host fixture opens its default runtime"
            runtime = self._default
            if runtime not in self.runtimes:
                self.runtimes.append(runtime)
        started = time.monotonic()
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run(code, tool_call_id=f"call-{uuid.uuid4().hex[:8]}")
        outcome = Outcome(result, time.monotonic() - started)
        self.check_result(result, code)
        return outcome

    def check_result(self, result: ToolResult, code: str) -> None:
        assert_nothing_leaks(result, (self.state.env_secret, self.state.op_secret), code)
        if result.is_error:
            assert result.failure is not None
            assert result.value is None
            assert len(result.text) <= MAX_FAILURE_MESSAGE_CHARS
            assert result.reference is not None
            assert result.reference in result.text
        else:
            assert result.failure is None


def assert_nothing_leaks(result: ToolResult, secrets: tuple[str, ...], code: str) -> None:
    """No secret anywhere in the result; no host marker in what the model or guest sees.

    A marker the program itself wrote (a path it tried to open) is echoed back, not leaked.
    """
    shown = {
        "text": result.text,
        "logs": "\n".join(result.logs),
        "failure": str(result.failure),
        "value": repr(result.value),
    }
    for where, text in shown.items():
        for secret in secrets:
            assert secret not in text, f"a host secret reached result.{where}"
        for marker in HOST_MARKERS + (TEXT_ONLY_MARKERS if where == "text" else ()):
            if marker in code:
                continue
            assert marker not in text, f"host detail {marker!r} reached result.{where}: {text[:300]!r}"


def assert_guest_exception(outcome: Outcome, type_name: str | None = None) -> GuestException:
    """The run failed quickly with an exception the program raised (of ``type_name`` if given)."""
    failure = outcome.result.failure
    assert isinstance(failure, GuestException), outcome.result.text
    if type_name is not None:
        assert failure.type_name == type_name, failure
    assert outcome.elapsed < QUICK_BOUND_S
    return failure


@asynccontextmanager
async def loop_gaps(tick_s: float = 0.005) -> AsyncIterator[list[float]]:
    """The gaps between the ticks of a task on the host's event loop while the block runs.

    A guest must never hold the loop: the largest gap is how long something did.
    """
    gaps: list[float] = []
    done = anyio.Event()

    async def tick() -> None:
        last = time.monotonic()
        while not done.is_set():
            await anyio.sleep(tick_s)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        try:
            yield gaps
        finally:
            done.set()


def child_pids() -> set[int]:
    """Processes whose parent is this test process (the Monty workers among them)."""
    me = os.getpid()
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except OSError:
            continue  # gone meanwhile
        # The command name may hold spaces and parentheses: the fields follow the last ")".
        fields = text.rsplit(")", 1)[1].split()
        if int(fields[1]) == me:
            found.add(int(entry))
    return found


async def wait_for_no_new_children(baseline: set[int], within_s: float = 5.0) -> set[int]:
    """Poll (bounded by an anyio deadline) until no child beyond ``baseline`` remains; the rest."""
    left = child_pids() - baseline
    with anyio.move_on_after(within_s):
        while left:
            await anyio.sleep(0.02)
            left = child_pids() - baseline
    return left


async def assert_runtime_still_works_then_close(host: Host, runtime: Runtime) -> None:
    """The next ordinary execute on the same runtime succeeds; then the runtime closes."""
    try:
        outcome = await host.run(ORDINARY_PROGRAM, runtime)
        assert not outcome.result.is_error, f"the runtime was harmed: {outcome.result.text}"
        assert outcome.result.text == ORDINARY_TEXT
    finally:
        with anyio.fail_after(30):
            await runtime.close()


def _environ() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "PYTEST_CURRENT_TEST"}


def _is_test_runner(task: asyncio.Task[Any]) -> bool:
    """anyio's pytest runner drives each fixture and test from a task of its own."""
    return getattr(task.get_coro(), "__qualname__", "").startswith("TestRunner.")


@pytest.fixture
def env_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    """A secret planted in the host process environment (inherited by any worker it starts)."""
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    monkeypatch.setenv(SECRET_ENV, secret)
    return secret


@pytest.fixture
async def host(env_secret: str, caplog: pytest.LogCaptureFixture) -> AsyncIterator[Host]:
    """A host to attack. On teardown it proves the host unharmed (see the module docstring)."""
    caplog.set_level(logging.DEBUG)
    environ_before = _environ()
    cwd_before = os.getcwd()
    children_before = child_pids()
    state = HostState(env_secret=env_secret, op_secret=f"op-secret-{uuid.uuid4().hex}", gate=anyio.Event())
    async with AsyncExitStack() as running:
        host = Host(state=state, running=running)
        # Opened before the test, so it runs outside anything the test enters.
        await host.open_default()
        try:
            yield host
        finally:
            for runtime in host.runtimes:
                await assert_runtime_still_works_then_close(host, runtime)
    left = await wait_for_no_new_children(children_before)
    assert not left, f"worker processes left behind after the runtime closed: {sorted(left)}"
    others = {task for task in asyncio.all_tasks() - {asyncio.current_task()} if not _is_test_runner(task)}
    assert not others, f"asyncio tasks left behind: {others}"
    assert state.hang_running == 0, "a host operation is still running after every runtime closed"
    assert _environ() == environ_before, "the host environment changed"
    assert os.getcwd() == cwd_before
    assert env_secret not in caplog.text, "the planted environment secret reached the host's logs"
    for record in caplog.records:
        assert env_secret not in record.getMessage()
