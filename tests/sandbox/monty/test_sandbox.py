"""The Monty adapter: guest programs run in real Monty worker processes."""

from __future__ import annotations

import os
import signal as os_signal
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel

from mycelium import (
    AbortController,
    AbortSignal,
    Access,
    ExecutionOptions,
    InvocationContext,
    Lease,
    Module,
    Runtime,
    Session,
    Suspensions,
    ToolResult,
    defer,
)
from mycelium.failures import (
    Cancelled,
    CapabilityFailed,
    DeadlineExceeded,
    GuestException,
    SyntaxFailure,
    TransportLost,
)
from mycelium.sandbox.monty import MontySandbox

MIB = 1024 * 1024


class Note(BaseModel):
    id: int
    title: str


class Host:
    """A notes module whose calls the tests can observe and steer."""

    def __init__(self) -> None:
        self.contexts: list[InvocationContext] = []
        self.release = anyio.Event()
        self.cancelled: list[str] = []
        self.contexts_started: list[InvocationContext] = []
        self.crash = False
        self.module = Module(id="notes-v1", name="notes")
        self.deep = Module(id="bazaar-app", name="bazaar", namespace=["apps"])

        @self.module.operation(access="read")
        async def search(query: str, ctx: InvocationContext) -> list[Note]:
            """Find notes."""
            self.contexts.append(ctx)
            return [Note(id=1, title=f"about {query}")]

        @self.module.operation()
        async def stuck(ctx: InvocationContext) -> int:
            self.contexts_started.append(ctx)
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(ctx.operation)
                raise
            return 1

        @self.module.operation()
        def fail() -> int:
            raise RuntimeError("host detail: /srv/secret/path")

        @self.module.operation()
        def kill_worker() -> int:
            # Kill every child of this process: the Monty workers.
            for pid in _children():
                os.kill(pid, os_signal.SIGKILL)
            return 1

        @self.deep.operation(name="windows.open")
        async def open_window(url: str) -> dict[str, str]:
            return {"opened": url}


def _children() -> list[int]:
    """This process's child processes that have not exited (a zombie waiting to be reaped has)."""
    mine = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == mine and state != "Z":
            found.append(int(entry.name))
    return found


@asynccontextmanager
async def monty_lease(
    host: Host,
    *,
    options: ExecutionOptions | None = None,
    session: Session | None = None,
    sandbox: MontySandbox | None = None,
) -> AsyncIterator[Lease]:
    runtime = Runtime(
        modules=[host.module, host.deep], sandbox=sandbox or MontySandbox(), execution=options, session=session
    )
    async with runtime, runtime.lease() as lease:
        yield lease


async def run(code: str, host: Host | None = None, **kwargs: object) -> ToolResult:
    async with monty_lease(host or Host(), **kwargs) as lease:  # type: ignore[arg-type]
        return await lease.execute_tool.run(code, tool_call_id="call-1")


async def test_top_level_return_ends_the_program_with_its_value() -> None:
    result = await run("x = 1\nreturn x + 1\nx = 5")
    assert result.value == 2


async def test_without_return_the_last_expression_is_the_result() -> None:
    result = await run("x = 20\nx * 2")
    assert result.text == "40"


async def test_module_aliases_are_top_level_names_and_also_live_under_env() -> None:
    result = await run(
        "a = await notes.search(query='x')\n"
        "b = await env.notes.search(query='y')\n"
        "c = await env.apps.bazaar.windows.open(url='u')\n"
        "d = await apps.bazaar.windows.open({'url': 'v'})\n"
        "return [a[0]['title'], b[0]['title'], c, d]"
    )
    assert result.value == ["about x", "about y", {"opened": "u"}, {"opened": "v"}]


async def test_a_program_that_computes_a_name_reaches_every_namespace_and_operation() -> None:
    # Nothing here spells `bazaar`, `windows` or `open`: the program builds each name.
    result = await run(
        "node = env\n"
        "for part in ['apps', 'baz' + 'aar', 'win' + 'dows', 'op' + 'en']:\n"
        "    node = getattr(node, part)\n"
        "first = await node(url='u')\n"
        "return [first, hasattr(env.apps, 'baz' + 'aar'), hasattr(env.apps, 'missing')]"
    )
    assert result.value == [{"opened": "u"}, True, False]


async def test_a_name_a_program_builds_in_a_string_it_evaluates_is_reached() -> None:
    result = await run("return await eval('env.apps.' + 'ba' + 'zaar.win' + 'dows.op' + 'en')(url='e')")
    assert result.value == {"opened": "e"}


async def test_gathered_calls_run_concurrently_with_distinct_ordinals_in_call_order() -> None:
    host = Host()
    result = await run(
        "import asyncio\n"
        "r = await asyncio.gather(notes.search(query='a'), notes.search(query='b'), notes.search(query='c'))\n"
        "return [x[0]['title'] for x in r]",
        host,
    )
    assert result.value == ["about a", "about b", "about c"]
    assert sorted((c.operation_ordinal, c.tool_call_id) for c in host.contexts) == [
        (0, "call-1"),
        (1, "call-1"),
        (2, "call-1"),
    ]


async def test_each_execute_runs_in_a_fresh_session() -> None:
    async with monty_lease(Host()) as lease:
        first = await lease.execute_tool.run("secret = 41\ndef helper():\n    return 1\nreturn secret")
        second = await lease.execute_tool.run("try:\n    return secret\nexcept NameError:\n    return 'fresh'")
    assert first.value == 41
    assert second.value == "fresh"


async def test_mapping_and_keywords_together_raise_type_error_the_guest_can_catch() -> None:
    result = await run(
        "try:\n    await notes.search({'query': 'a'}, query='b')\nexcept TypeError as e:\n    return str(e)"
    )
    assert isinstance(result.value, str)
    assert "not both" in result.value


async def test_invalid_input_arrives_as_a_value_error_the_guest_can_catch() -> None:
    result = await run("try:\n    await notes.search(query=5)\nexcept ValueError as e:\n    return 'caught: ' + str(e)")
    assert isinstance(result.value, str)
    assert result.value.startswith("caught: Invalid input for notes.search")


async def test_a_host_error_reaches_the_guest_with_only_the_safe_message() -> None:
    result = await run("try:\n    await notes.fail()\nexcept Exception as e:\n    return str(e)")
    assert isinstance(result.value, str)
    assert "notes.fail failed on the host (reference ref-" in result.value
    assert "/srv/secret" not in result.value


async def test_an_unhandled_host_error_is_capability_failed() -> None:
    result = await run("await notes.fail()")
    assert isinstance(result.failure, CapabilityFailed)
    assert (result.failure.module, result.failure.operation) == ("notes-v1", "fail")
    assert "/srv/secret" not in result.text


async def test_printed_output_is_captured_as_logs_and_never_mixed_into_the_value() -> None:
    result = await run("print('hello')\nprint('world', 2)\nreturn 'value'")
    assert result.value == "value"
    assert result.logs == ("hello", "world 2")


async def test_printed_output_is_bounded_and_the_logs_say_what_was_dropped() -> None:
    result = await run("for i in range(1000):\n    print('x' * 100)\n1", sandbox=MontySandbox(max_print_bytes=1000))
    assert result.value == 1
    *kept, notice = result.logs
    assert sum(len(line) + 1 for line in kept) <= 1000 + 1
    assert len(kept) == 10
    assert "dropped" in notice


async def test_a_syntax_error_reports_its_line() -> None:
    result = await run("x = 1\ny = (\n")
    assert isinstance(result.failure, SyntaxFailure)
    assert result.failure.line is not None
    assert "line" in result.text


async def test_a_guest_exception_carries_its_type_and_message() -> None:
    result = await run("x = {}\nx['missing']")
    assert isinstance(result.failure, GuestException)
    assert result.failure.type_name == "KeyError"
    assert "missing" in result.failure.message


async def test_a_call_the_program_never_awaited_still_finishes_before_the_run_settles() -> None:
    host = Host()
    async with monty_lease(host) as lease:
        async with anyio.create_task_group() as group:
            group.start_soon(_release_when_called, host)
            result = await lease.execute_tool.run("notes.stuck()\nreturn 'done'")
    assert result.value == "done"
    assert host.cancelled == []
    assert any("notes.stuck" in line and "without `await`" in line for line in result.logs)


async def _release_when_called(host: Host) -> None:
    while not host.contexts_started:
        await anyio.wait_all_tasks_blocked()
    host.release.set()


async def test_a_call_the_program_never_awaited_is_stopped_at_the_deadline_if_it_never_finishes() -> None:
    host = Host()
    result = await run("notes.stuck()\nreturn 'done'", host, options=ExecutionOptions(timeout_ms=300))
    assert result.failure == DeadlineExceeded(timeout_ms=300, acknowledged=True)
    assert host.cancelled == ["stuck"]


async def test_using_the_result_of_an_unawaited_call_fails_naming_the_operation() -> None:
    result = await run("x = notes.search(query='a')\nreturn x")
    assert isinstance(result.failure, GuestException)
    assert "notes.search" in result.failure.message
    assert "await" in result.failure.message


async def test_the_deadline_stops_an_endless_program_and_is_acknowledged() -> None:
    result = await run("while True:\n    pass", options=ExecutionOptions(timeout_ms=300))
    assert result.failure == DeadlineExceeded(timeout_ms=300, acknowledged=True)


async def test_the_deadline_counts_time_spent_in_host_calls() -> None:
    host = Host()
    result = await run("await notes.stuck()", host, options=ExecutionOptions(timeout_ms=200))
    assert result.failure == DeadlineExceeded(timeout_ms=200, acknowledged=True)
    assert host.cancelled == ["stuck"]


async def test_each_sleep_is_capped_and_the_total_is_bounded() -> None:
    result = await run(
        "import time\ntime.sleep(1000)\ntime.sleep(1000)\n'slept'",
        sandbox=MontySandbox(max_sleep_ms=50, max_total_sleep_ms=80),
    )
    assert isinstance(result.failure, GuestException)
    assert result.failure.type_name == "TimeoutError"


async def test_more_operation_calls_than_the_limit_fail_in_the_guest() -> None:
    result = await run(
        "for i in range(20):\n    await notes.search(query='a')", sandbox=MontySandbox(max_operation_calls=10)
    )
    assert isinstance(result.failure, GuestException)
    assert "more than 10 operation calls" in result.failure.message


async def test_memory_is_limited() -> None:
    result = await run("x = 'a' * (10 ** 9)", sandbox=MontySandbox(memory_limit_bytes=32 * 1024 * 1024))
    assert isinstance(result.failure, GuestException)
    assert result.failure.type_name == "MemoryError"


async def test_recursion_depth_is_limited() -> None:
    result = await run("def f(n):\n    return f(n + 1)\nf(0)", sandbox=MontySandbox(max_recursion_depth=150))
    assert isinstance(result.failure, GuestException)
    assert result.failure.type_name == "RecursionError"


async def test_a_killed_worker_is_transport_lost_and_the_next_execute_works() -> None:
    async with monty_lease(Host()) as lease:
        lost = await lease.execute_tool.run("await notes.kill_worker()\nreturn 1")
        after = await lease.execute_tool.run("return 'alive'")
    assert lost.failure == TransportLost()
    assert after.value == "alive"


async def test_the_workspace_is_off_by_default() -> None:
    result = await run("open('/workspace/notes.txt', 'w').write('x')")
    assert result.is_error


async def test_a_session_workspace_keeps_files_between_executes_and_isolates_sessions(tmp_path: Path) -> None:
    def workspace(session_id: str | None) -> Path:
        folder = tmp_path / str(session_id)
        folder.mkdir(exist_ok=True)
        return folder

    write = "f = open('/workspace/state.txt', 'w')\nf.write('remembered')\nf.close()\n'saved'"
    read = "try:\n    return open('/workspace/state.txt').read()\nexcept OSError:\n    return 'nothing'"
    async with monty_lease(Host(), session=Session("alice"), sandbox=MontySandbox(workspace=workspace)) as lease:
        assert (await lease.execute_tool.run(write)).value == "saved"
        assert (await lease.execute_tool.run(read)).value == "remembered"
    async with monty_lease(Host(), session=Session("bob"), sandbox=MontySandbox(workspace=workspace)) as lease:
        assert (await lease.execute_tool.run(read)).value == "nothing"
        escape = await lease.execute_tool.run("open('/workspace/../alice/state.txt').read()")
    assert escape.is_error
    assert (tmp_path / "alice" / "state.txt").read_text() == "remembered"


async def test_workspace_writes_are_limited(tmp_path: Path) -> None:
    sandbox = MontySandbox(workspace=lambda session_id: tmp_path, workspace_write_limit_bytes=100)
    result = await run("f = open('/workspace/big.txt', 'w')\nf.write('x' * 1000)\nf.close()", sandbox=sandbox)
    assert isinstance(result.failure, GuestException)
    assert result.failure.type_name == "OSError"


async def test_closing_is_idempotent_and_a_closed_sandbox_starts_again_on_use() -> None:
    sandbox = MontySandbox()
    async with sandbox:
        pass
    await sandbox.aclose()
    result = await run("return 3", sandbox=sandbox)
    assert result.value == 3


@pytest.mark.parametrize(
    "options",
    [
        {"memory_limit_bytes": 0},
        {"max_operation_calls": -1},
        {"max_print_bytes": 1.5},
        {"pool_size": 0},
        {"workspace": "/tmp"},
        {"unenforced_limits": ["gpu"]},
    ],
)
def test_monty_sandbox_refuses_bad_options_naming_them(options: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        MontySandbox(**options)  # type: ignore[arg-type]


def test_the_adapter_identifies_itself_for_operator_evidence() -> None:
    sandbox = MontySandbox()
    assert sandbox.adapter == "monty"
    assert sandbox.build_sha is not None
    assert "1.4.0" in sandbox.build_sha


async def test_a_workspace_is_announced_to_the_model_in_the_tool_description(tmp_path: Path) -> None:
    async with monty_lease(Host(), sandbox=MontySandbox(workspace=lambda session_id: tmp_path)) as lease:
        with_workspace = lease.execute_tool.definition.description
    async with monty_lease(Host()) as lease:
        without = lease.execute_tool.definition.description
    assert "/workspace" in with_workspace
    assert "/workspace" not in without


async def run_checked(code: str, host: Host | None = None) -> ToolResult:
    return await run(code, host, sandbox=MontySandbox(type_check=True))


async def test_type_checking_refuses_a_wrong_argument_type_before_anything_runs() -> None:
    host = Host()
    result = await run_checked("x = 1\nfound = await notes.search(query=5)\nreturn found", host)
    assert isinstance(result.failure, SyntaxFailure)
    assert result.failure.type_check
    assert (result.failure.line, result.failure.column) == (2, 28)  # at `query=5`
    assert "Expected `str`" in result.failure.message
    assert host.contexts == [], "the operation ran although the program failed its type check"


async def test_type_checking_catches_a_result_used_without_await() -> None:
    result = await run_checked("found = notes.search(query='x')\nreturn found[0]")
    assert isinstance(result.failure, SyntaxFailure)
    assert result.failure.type_check
    assert result.failure.line == 2


async def test_type_checking_catches_an_unknown_operation_in_a_nested_namespace() -> None:
    result = await run_checked("return await env.apps.bazaar.windows.close(url='u')")
    assert isinstance(result.failure, SyntaxFailure)
    assert "close" in result.failure.message


async def test_type_checked_programs_may_return_at_top_level_gather_and_use_forage() -> None:
    result = await run_checked(
        "import asyncio\n"
        "a, b = await asyncio.gather(notes.search(query='a'), apps.bazaar.windows.open(url='u'))\n"
        "found = await forage.search('notes')\n"
        "match a:\n    case {'refused': True}:\n        return 'refused'\n"
        "match b:\n    case {'refused': True}:\n        return 'refused'\n"
        "return [a[0]['title'], b['opened'], len(found) > 0]"
    )
    assert result.value == ["about a", "u", True]


async def test_a_syntax_error_is_still_reported_at_its_own_line_when_type_checking() -> None:
    result = await run_checked("x = 1\ny = (\n")
    assert isinstance(result.failure, SyntaxFailure)
    assert not result.failure.type_check
    assert result.failure.line is not None
    assert result.failure.line >= 2


async def test_forage_is_available_in_monty_with_a_positional_query_and_keywords() -> None:
    result = await run("found = await forage.search('notes', limit=1)\nreturn [len(found), found[0]['path']]")
    assert result.value == [1, "notes.search"]


@pytest.mark.parametrize(
    ("code", "hinted"),
    [
        ("x = 1", True),
        ("1 + 1", False),
        ("x = 1\nx", False),
        ("if a:\n    b = 1\nelse:\n    c = 2", True),
        ("y = [\n1,\n2,\n]", True),
        ("f(\n  1,\n)", False),
        ("s = '''\nline\n'''", True),
        ("x = (", False),
        ("\n".join(["a = 1"] * 40_000), True),
        ("\n".join(["a = 1"] * 40_000) + "\na", False),
    ],
    ids=repr,
)
def test_the_no_result_hint_reads_the_last_statement_from_the_programs_tail(code: str, hinted: bool) -> None:
    from mycelium.sandbox.monty._output import _ends_without_value

    assert _ends_without_value(code) is hinted


async def test_a_runtime_left_because_its_scope_was_cancelled_stops_montys_worker_processes() -> None:
    before = set(_children())
    with anyio.fail_after(30), anyio.CancelScope() as scope:
        async with Runtime(modules=[], sandbox=MontySandbox()) as runtime, runtime.lease() as lease:
            assert (await lease.execute_tool.run("return 1 + 1")).value == 2
            assert set(_children()) - before, "the run started no worker process"
            scope.cancel()  # the host is stopped (a signal, a timeout) while the runtime is open
            await anyio.sleep_forever()
    assert set(_children()) - before == set()


@pytest.mark.parametrize("may_pause", [False, True], ids=["fed", "fed-may-pause"])
async def test_an_abort_while_a_run_waits_for_a_worker_stops_its_program_as_soon_as_it_is_fed(may_pause: bool) -> None:
    # A program aborted before its feed is awaited must still be stopped, never left spinning in
    # the only worker until its own time limit. A run that may pause is fed through a wrapper.
    host = Host()
    holding = anyio.Event()

    @host.module.operation()
    async def hold() -> int:
        holding.set()
        await host.release.wait()
        return 1

    @host.module.operation(confirm=True)
    def remove(id: int) -> bool:
        return True

    controller = AbortController()
    results: dict[str, ToolResult] = {}
    options = ExecutionOptions(sandbox_capacity=2, timeout_ms=120_000)
    pausing = {"access": Access(confirm=defer), "suspensions": Suspensions()} if may_pause else {}
    async with (
        MontySandbox(pool_size=1) as sandbox,
        Runtime(
            modules=[host.module],
            sandbox=sandbox,
            execution=options,
            **pausing,  # type: ignore[arg-type]
        ) as runtime,
        runtime.lease() as lease,
    ):

        async def run(name: str, code: str, signal: AbortSignal | None = None) -> None:
            results[name] = await lease.execute_tool.run(code, signal=signal)

        async with anyio.create_task_group() as group:
            group.start_soon(run, "holding", "return await notes.hold()")
            await holding.wait()
            group.start_soon(run, "spinning", "x = 0\nwhile True:\n    x += 1", controller.signal)
            await anyio.wait_all_tasks_blocked()  # it waits for the only worker
            controller.abort("stop")
            host.release.set()
        # The worker is free again long before the spinning program's own limit.
        with anyio.fail_after(30):
            after = await lease.execute_tool.run("return 1 + 1")
    assert results["holding"].value == 1
    assert results["spinning"].failure == Cancelled(acknowledged=True, by="caller")
    assert after.value == 2


async def test_a_run_holds_no_settled_calls_input_until_it_ends() -> None:
    # Calls refused one after another, each with 100 KiB of input: what a settled call raised
    # (its input in its frames) must go with it, or one run grows the host by every input it sent.
    notes = Module(id="notes-v1", name="notes")
    held: list[int] = []

    @notes.operation()
    async def count(n: int) -> int:
        return n

    @notes.operation()
    async def measure() -> int:
        held.append(tracemalloc.get_traced_memory()[0])
        return 0

    code = (
        "s = 'x' * 102400\nawait notes.measure()\nfor i in range(200):\n    try:\n"
        "        await notes.count(n=s)\n    except ValueError:\n        pass\nawait notes.measure()\nreturn 1"
    )
    async with MontySandbox() as sandbox, Runtime(modules=[notes], sandbox=sandbox) as runtime:
        async with runtime.lease() as lease:
            tracemalloc.start()
            try:
                result = await lease.execute_tool.run(code)
            finally:
                tracemalloc.stop()
    assert result.value == 1, result.text
    grown = held[1] - held[0]
    assert grown < 5 * MIB, f"the run held {grown / MIB:.1f} MiB after 200 calls of 0.1 MiB each"
