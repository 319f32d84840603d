"""The sandbox keeps its promises: a program that cannot be checked does not run, a dead
worker is noticed at once, and nothing the sandbox starts is left behind."""

from __future__ import annotations

import gc
import os
import signal
import warnings
from types import SimpleNamespace

import anyio
import pytest

from mycelium import Module, Runtime
from mycelium.failures import GuestException, SyntaxFailure, TransportLost
from mycelium.sandbox.monty import MontySandbox
from mycelium.sandbox.monty._calls import _GuestRun
from mycelium.sandbox.monty._watch import _Exits, _Worker

from .conftest import QUICK_BOUND_S, Host, assert_guest_exception, child_pids, loop_gaps

# Each hides a call the type checker would refuse (a wrong argument type) behind a character
# that str.splitlines() treats as a line break inside a string literal.
SPLIT_INSIDE_STRINGS = {
    "line-separator": "s = 'a\u2028b'\nawait notes.record(data=s)\nawait notes.search(query=1)",
    "form-feed": "s = 'a\x0cb'\nawait notes.record(data=s)\nawait notes.search(query=1)",
    "next-line": "s = 'a\x85b'\nawait notes.record(data=s)\nawait notes.search(query=1)",
    "paragraph-separator": "s = '''a\u2029\nb'''\nawait notes.record(data=s)\nawait notes.search(query=1)",
}


@pytest.mark.parametrize("code", SPLIT_INSIDE_STRINGS.values(), ids=SPLIT_INSIDE_STRINGS.keys())
async def test_a_type_checked_program_with_line_separators_in_strings_is_still_checked(host: Host, code: str) -> None:
    outcome = await host.run(code, await host.open(type_check=True))
    assert isinstance(outcome.result.failure, SyntaxFailure), outcome.result.text
    assert outcome.result.failure.type_check
    assert outcome.result.failure.line == code.count("\n") + 1
    assert host.state.records == [], "a program that failed its check ran"


# Each would run code the checker did not see (it re-indented the program, or it takes a branch
# for one it cannot take): the program is checked as it runs, or refused.
HIDDEN_FROM_THE_CHECKER = {
    "form-feed-before-a-def": "await notes.record(data='RAN')\n\x0casync def g():\n\x0c    return 1\n"
    "await notes.record(data='UNCHECKED')\nawait notes.search(query=1)",
    "multi-line-string": 's = """\nx"""\nif s == "\\nx":\n    await notes.record(data=\'UNCHECKED\')\n'
    "    await notes.search(query=1)",
    "type-checking-branch": "import typing\nif not typing.TYPE_CHECKING:\n    await notes.record(data='UNCHECKED')\n"
    "    await notes.search(query=1)",
    "platform-branch": "import sys\nif sys.platform != 'linux':\n    await notes.record(data='UNCHECKED')\n"
    "    await notes.search(query=1)",
}


@pytest.mark.parametrize("code", HIDDEN_FROM_THE_CHECKER.values(), ids=HIDDEN_FROM_THE_CHECKER.keys())
async def test_no_code_the_type_checker_did_not_see_runs(host: Host, code: str) -> None:
    outcome = await host.run(code, await host.open(type_check=True))
    assert isinstance(outcome.result.failure, SyntaxFailure), outcome.result.text
    assert "UNCHECKED" not in host.state.records


async def test_a_form_feed_in_indentation_means_what_it_means_when_the_program_runs(host: Host) -> None:
    outcome = await host.run("x = 1\n\x0cawait notes.record(data=x)\nreturn x", await host.open(type_check=True))
    assert outcome.result.value == 1, outcome.result.text
    assert host.state.records == [1]


UNCHECKABLE = {
    "unclosed": "await notes.record(data=(1",
    "type-ignore": "await notes.record(data=1)\nawait notes.search(query=1)  # type: ignore",
    "ty-ignore-code": "await notes.record(data=1)\nawait notes.search(query=1)  # ty: ignore[invalid-argument-type]",
    "eval": "await notes.record(data=1)\nawait eval('notes.search(query=1)')",
    "exec": "await notes.record(data=1)\nexec(\"notes.record(data='hidden')\")",
}


@pytest.mark.parametrize("code", UNCHECKABLE.values(), ids=UNCHECKABLE.keys())
async def test_a_program_the_type_checker_cannot_parse_does_not_run(host: Host, code: str) -> None:
    outcome = await host.run(code, await host.open(type_check=True))
    assert isinstance(outcome.result.failure, SyntaxFailure), outcome.result.text
    assert host.state.records == []


async def test_a_type_checked_program_with_separators_in_strings_runs_when_it_is_well_typed(host: Host) -> None:
    outcome = await host.run(
        "s = 'a\u2028b\x0cc'\nawait notes.record(data=s)\nreturn s", await host.open(type_check=True)
    )
    assert outcome.result.value == "a\u2028b\x0cc", outcome.result.text
    assert host.state.records == ["a\u2028b\x0cc"]


async def test_a_worker_the_pool_starts_only_after_the_feed_is_still_watched_and_its_death_noticed() -> None:
    # A program that makes no host call gives no later chance to find its worker.
    process = await anyio.open_process(["sleep", "30"])
    session = SimpleNamespace(worker_pid=None)
    exits = _Exits()
    worker = _Worker(session, exits)
    try:
        with anyio.fail_after(QUICK_BOUND_S), anyio.CancelScope() as scope:
            worker.watch(scope.cancel)
            session.worker_pid = process.pid  # the pool starts it only now
            process.kill()
            await anyio.sleep_forever()
    finally:
        worker.unwatch()
        exits.close()
        await process.aclose()
    assert worker.lost


# A worker runs many programs and its pidfd is kept between them: one that dies in its sixth
# run, or in the first run after another worker died, is noticed as at once as in its first.
@pytest.mark.parametrize("earlier_runs", [0, 5], ids=["first-run", "after-five-runs"])
async def test_a_worker_that_dies_during_a_host_call_is_noticed_at_once_and_the_call_is_cancelled(
    earlier_runs: int,
) -> None:
    cancelled: list[str] = []
    notes = Module(id="kill-notes", name="notes")

    @notes.operation()
    async def wait() -> int:
        called.set()
        try:
            await anyio.Event().wait()  # never set: only noticing the dead worker ends this run
        except anyio.get_cancelled_exc_class():
            cancelled.append("wait")
            raise
        return 1

    async def kill_workers() -> None:
        await called.wait()
        for pid in child_pids():
            os.kill(pid, signal.SIGKILL)

    sandbox = MontySandbox(pool_size=1)
    async with Runtime(modules=[notes], sandbox=sandbox) as runtime, runtime.lease() as lease:
        for _ in range(earlier_runs):
            assert (await lease.execute_tool.run("return 'warm'")).value == "warm"
        for round in range(2):  # the second on the worker that replaced the dead one
            called = anyio.Event()
            with anyio.fail_after(QUICK_BOUND_S):
                async with anyio.create_task_group() as group:
                    group.start_soon(kill_workers)
                    result = await lease.execute_tool.run("return await notes.wait()")
            assert result.failure == TransportLost(), result.text
            assert cancelled == ["wait"] * (round + 1)
        after = await lease.execute_tool.run("return 'alive'")
        assert after.value == "alive"


async def test_cancelling_the_caller_mid_gather_leaves_no_coroutine_unawaited(host: Host) -> None:
    runtime = await host.open()
    program = "import asyncio\nreturn await asyncio.gather(*[notes.hang() for _ in range(20)])"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(15):
            async with runtime.lease() as lease:
                with anyio.move_on_after(0.05):
                    await lease.execute_tool.run(program)
        gc.collect()
    unawaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert unawaited == []
    assert host.state.hang_running == 0


async def test_runs_of_one_revision_share_their_guest_namespaces_and_leave_no_run_behind(host: Host) -> None:
    runtime = await host.open()
    for _ in range(10):
        outcome = await host.run("return await notes.search(query='x')", runtime)
        assert not outcome.result.is_error
    sandbox = runtime.sandbox
    assert isinstance(sandbox, MontySandbox)
    assert len(sandbox._revisions) == 1
    gc.collect()
    assert not [item for item in gc.get_objects() if isinstance(item, _GuestRun)]


async def test_a_syntax_error_raised_by_exec_after_a_write_is_an_exception_not_nothing_ran(host: Host) -> None:
    outcome = await host.run("await notes.record(data='ran')\nexec('x = (')")
    assert_guest_exception(outcome, "SyntaxError")
    assert "nothing ran" not in outcome.result.text
    assert host.state.records == ["ran"]


async def test_calls_in_flight_are_capped_and_stopping_them_at_the_deadline_does_not_stall_the_host(
    host: Host,
) -> None:
    runtime = await host.open(max_operation_calls=5_000, timeout_ms=2_000)
    async with loop_gaps(0.001) as gaps:
        outcome = await host.run(
            "try:\n    while True:\n        notes.hang()\nexcept RuntimeError as e:\n    print(e)", runtime
        )
    assert outcome.code == "deadline-exceeded", outcome.result.text
    assert "1000 operation calls still running" in outcome.result.logs[0]
    assert host.state.hang_started == host.state.hang_cancelled <= 1_000
    assert host.state.hang_running == 0
    assert max(gaps) < 0.2, f"the loop stalled {max(gaps) * 1000:.0f} ms"


async def test_a_call_beyond_the_calls_in_flight_raises_until_some_settle(host: Host) -> None:
    runtime = await host.open(max_calls_in_flight=3)
    outcome = await host.run(
        "import asyncio\ncalls = []\ntry:\n    for _ in range(5):\n        calls.append(notes.hold(text='x'))\n"
        "except RuntimeError as e:\n    refused = str(e)\n"
        "done = await asyncio.gather(*calls)\nafter = await notes.search(query='again')\n"
        "return [len(calls), refused, after]",
        runtime,
    )
    assert outcome.result.value == [
        3,
        "this run has 3 operation calls still running; await some before starting more",
        ["note about again"],
    ], outcome.result.text


async def test_a_construct_the_sandbox_does_not_support_is_named_as_such(host: Host) -> None:
    outcome = await host.run("raise ValueError(42)")
    assert_guest_exception(outcome, "NotImplementedError")
    assert "Internal error" not in outcome.result.text
    assert "does not support" in outcome.result.text


async def test_terminal_escapes_in_printed_output_are_shown_escaped(host: Host) -> None:
    outcome = await host.run("print('\\x1b[31mred\\x1b[0m\\x07')\nreturn 1")
    assert outcome.result.logs[0] == "\\x1b[31mred\\x1b[0m\\x07"
    assert not any("\x1b" in line for line in outcome.result.logs)


@pytest.mark.parametrize(
    ("code", "hinted"),
    [
        ("x = await notes.search(query='a')", True),
        ("for i in range(2):\n    y = i", True),
        ("x = 1\nx", False),
        ("return None", False),
    ],
    ids=["assignment", "loop", "expression", "explicit-return"],
)
async def test_a_program_ending_in_a_statement_is_told_how_to_return_a_value(
    host: Host, code: str, hinted: bool
) -> None:
    outcome = await host.run(code)
    assert not outcome.result.is_error, outcome.result.text
    assert any("return <value>" in line for line in outcome.result.logs) is hinted


async def test_a_call_stopped_because_the_program_failed_is_named_in_the_output(host: Host) -> None:
    outcome = await host.run("notes.hang()\nawait notes.search(query='x')\nraise ValueError('boom')")
    assert isinstance(outcome.result.failure, GuestException), outcome.result.text
    assert any("notes.hang" in line and "stopped" in line for line in outcome.result.logs), outcome.result.logs
    assert host.state.hang_running == 0


async def test_a_worker_monty_ends_for_its_memory_limit_is_a_memory_error_not_a_lost_transport() -> None:
    # Monty ends the worker itself and reports the error: the worker watch must not beat it to it.
    async with Runtime(modules=[], sandbox=MontySandbox()) as runtime, runtime.lease() as lease:
        for _ in range(3):
            result = await lease.execute_tool.run("return list(range(5_000_000))")
            assert isinstance(result.failure, GuestException), result.text
            assert result.failure.type_name == "MemoryError"
