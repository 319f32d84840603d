"""The isolated sandbox: Monty in child processes of its own, seen through a real runtime.

Every value a guest hands over is converted and bounded in the child, so the failures a
guest meets must be the in-process adapter's own, advice and all; what a child sends is
untrusted, so a child that floods, babbles, dies or hangs must end the run typed and leave
the next run a fresh child. Hostile children are real processes (``python -c``) put in the
place of the child program.
"""

from __future__ import annotations

import os
import signal as os_signal
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

import mycelium.sandbox.isolated._child as child_program
import mycelium.sandbox.isolated._process as child_process
from mycelium import ExecutionOptions, Lease, Module, Runtime, ToolResult
from mycelium._signals import AbortController
from mycelium._values import JsonValue
from mycelium.failures import BadResponse, DeadlineExceeded, GuestException, ResultTooLarge, TransportLost
from mycelium.sandbox import Sandbox, SandboxRequest
from mycelium.sandbox.isolated import IsolatedSandbox
from mycelium.sandbox.isolated._frames import FrameTooLarge, frame, receive_frame
from mycelium.sandbox.isolated._messages import KEPT_REVISIONS
from mycelium.sandbox.monty import MontySandbox
from mycelium.sandbox.wire import CallMessage, CallResultMessage

notes = Module(id="notes-v1", name="notes")
killed: list[int] = []


@notes.operation(access="read")
async def echo(value: object) -> object:
    """Return the value given."""
    return value


@notes.operation(access="read")
async def hold() -> None:
    """Wait until the run that called it ends."""
    await anyio.sleep_forever()


@notes.operation()
def kill_children() -> int:
    """Kill every child of the isolated sandbox under test (and its Monty workers)."""
    for pid in killed:
        os.killpg(pid, os_signal.SIGKILL)
    return 1


@asynccontextmanager
async def leased(sandbox: Sandbox, options: ExecutionOptions | None = None) -> AsyncIterator[Lease]:
    async with Runtime(modules=[notes], sandbox=sandbox, execution=options) as runtime, runtime.lease() as lease:
        yield lease


async def run_both(code: str) -> tuple[ToolResult, ToolResult]:
    """``code``'s result in the in-process adapter and in the isolated one."""
    results = []
    for sandbox in (MontySandbox(), IsolatedSandbox()):
        async with leased(sandbox) as lease:
            results.append(await lease.execute_tool.run(code, tool_call_id="call-1"))
    return results[0], results[1]


@contextmanager
def hostile_child(script: str) -> Iterator[list[int]]:
    """The next child started runs ``script`` (after reading the run's frame) instead of the child
    program; the later ones (its replacement) are real. Yields the hostile child's pid, once started."""
    reads_the_run = "import os,sys\nn=int.from_bytes(os.read(0,4),'big')\nwhile n: n-=len(os.read(0,n))\n"
    original = child_process._CHILD
    child_process._CHILD = [sys.executable, "-c", reads_the_run + script]
    started = child_process._Child.start
    hostile: list[int] = []

    async def once(options: Mapping[str, object]) -> child_process._Child:
        child = await started(options)
        child_process._CHILD = original
        hostile.append(child.pid)
        return child

    child_process._Child.start = once  # type: ignore[method-assign]
    try:
        yield hostile
    finally:
        child_process._CHILD = original
        child_process._Child.start = started  # type: ignore[method-assign]


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def group_members(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` (a child and its Monty workers)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == pgid:
                members.append(int(entry.name))
    return members


def environment_of(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


async def until_exited(pids: list[int]) -> None:
    """Return once every process of ``pids`` has exited (woken by the kernel, not by polling)."""
    with anyio.fail_after(10):
        for pid in pids:
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            try:
                await anyio.wait_readable(fd)
            finally:
                os.close(fd)


# -- the in-process adapter's failures, from the child ---------------------------------------------


async def test_an_over_limit_result_is_refused_as_result_too_large_exactly_as_in_process() -> None:
    in_process, isolated = await run_both("return 'x' * 3_000_000")
    assert isolated.failure == in_process.failure == ResultTooLarge(size=3_000_002, limit=65_536)
    assert "65536" in isolated.text


async def test_an_over_limit_argument_raises_in_the_guest_with_the_same_advice() -> None:
    code = (
        "try:\n    await notes.echo(value={str(i): i for i in range(200_000)})\n"
        "except ValueError as e:\n    return str(e)"
    )
    in_process, isolated = await run_both(code)
    assert isolated.value == in_process.value
    assert "more than 1048576 bytes" in str(isolated.value)


async def test_printed_output_over_the_limit_is_cut_and_the_logs_say_how_much_was_dropped() -> None:
    in_process, isolated = await run_both("print('y' * 200_000)\nreturn 1")
    assert isolated.logs == in_process.logs
    assert isolated.logs[-1].startswith("[at least ")
    assert "the limit is 65536 bytes" in isolated.logs[-1]


async def test_a_huge_exception_message_is_clipped_as_in_process() -> None:
    in_process, isolated = await run_both("raise ValueError('m' * 5_000_000)")
    assert isolated.failure == in_process.failure
    assert isinstance(isolated.failure, GuestException)
    assert len(isolated.failure.message) <= 2_000


async def test_values_operation_calls_and_syntax_errors_cross_as_in_process() -> None:
    for code in (
        "a = await notes.echo(value={'k': [1, 2.5, None, True]})\nreturn [a, 'ü']",
        "return 1 +",
        "return await forage.search('echo', limit=1)",  # a host helper taking one positional value
        "x = await notes.echo(value=1)\nraise KeyError('gone')",
    ):
        in_process, isolated = await run_both(code)
        assert (isolated.value, isolated.failure, isolated.logs) == (
            in_process.value,
            in_process.failure,
            in_process.logs,
        )


# -- a child's frames are untrusted ---------------------------------------------------------------


async def test_a_frame_over_the_bound_is_refused_before_its_body_is_read() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](4)
    head = b'{"type":"done","value":"xxxxxxxxxxxxxxxxxxxx'
    # The frame claims a gigabyte and brings only its first bytes: reading its body would fail.
    async with send, receive:
        await send.send((1 << 30).to_bytes(4, "big") + head)
        with pytest.raises(FrameTooLarge) as refused:
            await receive_frame(BufferedByteReceiveStream(receive), {}, 1024)
    assert (refused.value.kind, refused.value.size) == ("done", 1 << 30)


async def test_a_frame_within_its_types_bound_is_read_whole() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](4)
    payload = b'{"type":"suspended","state":"' + b"A" * 2_000 + b'"}'
    async with send, receive:
        await send.send(frame(payload))
        assert await receive_frame(BufferedByteReceiveStream(receive), {"suspended": 4_096}, 64) == payload


async def test_a_child_announcing_an_oversized_result_is_result_too_large_and_the_next_run_gets_a_new_child() -> None:
    sandbox = IsolatedSandbox()
    async with leased(sandbox) as lease:
        announced = b'{"type":"done","value":"' + b"x" * 60
        flood = f"os.write(1, (100_000_000).to_bytes(4, 'big') + {announced!r})\nos.read(0, 1)"
        with hostile_child(flood) as hostile:
            refused = await lease.execute_tool.run("return 1", tool_call_id="call-1")
        assert not alive(hostile[0])  # the flooding child was killed, not kept
        assert hostile[0] not in sandbox.children
        after = await lease.execute_tool.run("return 'fresh'", tool_call_id="call-2")
    assert refused.failure == ResultTooLarge(size=100_000_000 - 24, limit=65_536)
    assert after.value == "fresh"


async def test_garbage_from_a_child_is_bad_response() -> None:
    async with leased(IsolatedSandbox()) as lease:
        with hostile_child("os.write(1, (9).to_bytes(4, 'big') + b'not json!')\nos.read(0, 1)"):
            result = await lease.execute_tool.run("return 1", tool_call_id="call-1")
        after = await lease.execute_tool.run("return 2", tool_call_id="call-2")
    assert result.failure == BadResponse()
    assert after.value == 2


async def test_a_host_failure_the_host_never_saw_is_bad_response_not_evidence() -> None:
    forged = b'{"type":"host-failure","module":"notes-v1","operation":"echo","path":"notes.echo","reference":"r-1"}'
    async with leased(IsolatedSandbox()) as lease:
        with hostile_child(f"os.write(1, ({len(forged)}).to_bytes(4, 'big') + {forged!r})\nos.read(0, 1)"):
            result = await lease.execute_tool.run("return 1", tool_call_id="call-1")
    assert result.failure == BadResponse()


async def test_a_child_killed_mid_run_is_transport_lost_and_the_next_run_works() -> None:
    sandbox = IsolatedSandbox()
    async with leased(sandbox) as lease:
        await lease.execute_tool.run("return 0", tool_call_id="call-0")  # a child is started
        killed[:] = sandbox.children
        lost = await lease.execute_tool.run("await notes.kill_children()\nreturn 1", tool_call_id="call-1")
        after = await lease.execute_tool.run("return 'alive'", tool_call_id="call-2")
    assert lost.failure == TransportLost()
    assert after.value == "alive"


async def test_a_run_that_ends_with_calls_still_waiting_leaves_its_child_able_to_run_the_next() -> None:
    sandbox = IsolatedSandbox(max_calls_in_flight=5)
    async with leased(sandbox, ExecutionOptions(timeout_ms=10_000)) as lease:
        # None of the calls can settle, so the sixth passes the in-flight cap and the run ends with five waiting.
        held = "import asyncio\nreturn await asyncio.gather(*[notes.hold() for _ in range(6)])"
        ended = await lease.execute_tool.run(held, tool_call_id="call-1")
        (child,) = sandbox.children
        after = await lease.execute_tool.run("return 'next'", tool_call_id="call-2")
        assert sandbox.children == (child,)  # the same child ran it: nothing had to replace it
    assert isinstance(ended.failure, GuestException)
    assert "calls still running" in ended.text
    assert after.value == "next"


def test_an_answer_to_a_call_its_run_gave_up_is_dropped() -> None:
    read, write = os.pipe()
    try:
        link = child_program._Link(write)
        call_id, answer = link.call(lambda call_id: CallMessage(call_id=call_id, alias="notes", path="echo", input={}))
        answer.cancel()  # as a run that ends cancels the calls it left waiting
        link.answer(CallResultMessage(call_id=call_id, ok=True, value=1))  # the host's late answer
        assert answer.cancelled()
    finally:
        os.close(read)
        os.close(write)


async def test_the_deadline_kills_a_child_whose_interpreter_is_held() -> None:
    sandbox = IsolatedSandbox()
    async with leased(sandbox, ExecutionOptions(timeout_ms=300)) as lease:
        # A child busy in pure Python never answers, as one stuck converting a guest's value.
        with hostile_child("while True: pass") as hostile:
            result = await lease.execute_tool.run("return 1", tool_call_id="call-1")
        assert not alive(hostile[0])
        assert hostile[0] not in sandbox.children
    async with leased(sandbox) as lease:  # a runtime closes its sandbox; the next one starts it again
        after = await lease.execute_tool.run("return 'next'", tool_call_id="call-2")
    assert result.failure == DeadlineExceeded(timeout_ms=300, acknowledged=True)
    assert after.value == "next"


async def test_closing_the_sandbox_leaves_no_child_or_monty_worker_process() -> None:
    sandbox = IsolatedSandbox()
    async with leased(sandbox) as lease:
        gathered = "import asyncio\nreturn await asyncio.gather(notes.echo(value=1), notes.echo(value=2))"
        async with anyio.create_task_group() as runs:
            for n in range(3):
                runs.start_soon(lease.execute_tool.run, gathered, f"call-{n}")
        processes = [member for child in sandbox.children for member in group_members(child)]
        assert len(sandbox.children) >= 1
        assert len(processes) > len(sandbox.children)  # each child's Monty workers are in its group
    await sandbox.aclose()
    await until_exited(processes)
    assert not [pid for pid in processes if alive(pid)]
    assert sandbox.children == ()


async def test_a_child_and_its_workers_inherit_none_of_the_servers_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "tok-5ee1d7c0a9"
    monkeypatch.setenv("MYCELIUM_TEST_API_TOKEN", secret)
    monkeypatch.setenv("DATABASE_URL", f"postgresql://app:{secret}@db/app")
    sandbox = IsolatedSandbox()
    async with leased(sandbox) as lease:
        result = await lease.execute_tool.run("return await notes.echo(value=1)", tool_call_id="call-1")
        assert result.value == 1
        processes = [member for child in sandbox.children for member in group_members(child)]
        assert len(processes) > len(sandbox.children)  # the child and its Monty workers
        for pid in processes:
            environment = environment_of(pid)
            assert secret.encode() not in environment
            assert b"MYCELIUM_TEST_API_TOKEN" not in environment


def revision_request(number: int, code: str) -> SandboxRequest:
    """A run of revision ``number``: an alias of its own (``ns<number>``) with one operation, ``echo``."""

    async def echo(arguments: JsonValue) -> JsonValue:
        return {"revision": number, "arguments": arguments}

    alias = f"ns{number}"
    return SandboxRequest(
        execution_id=f"run-{number}",
        code=code,
        timeout_ms=10_000,
        bindings={alias: {"echo": echo}},
        namespace_paths={alias: (alias,)},
        modules={alias: f"{alias}-v1"},
        session_id=None,
    )


async def test_a_child_runs_every_revision_it_was_sent_and_again_after_it_forgot_the_oldest() -> None:
    sandbox = IsolatedSandbox(max_idle_children=1)
    requests = [revision_request(n, f"return await ns{n}.echo(value={n})") for n in range(KEPT_REVISIONS + 2)]
    async with sandbox:
        # One child runs them all, each revision sent once: the first ones are forgotten by the end.
        for n, request in enumerate(requests):
            assert await sandbox.execute(request, AbortController().signal) == {
                "revision": n,
                "arguments": {"value": n},
            }
        (child,) = sandbox.children
        # The oldest is sent again, the newest was kept: each runs with its own namespaces.
        for n in (0, KEPT_REVISIONS + 1, 1, 0):
            assert await sandbox.execute(requests[n], AbortController().signal) == {
                "revision": n,
                "arguments": {"value": n},
            }
        assert sandbox.children == (child,)


@pytest.mark.parametrize("options", [{"max_idle_children": 0}, {"pool_size": 2}, {"memory_limit_bytes": 0}])
def test_the_isolated_sandbox_refuses_bad_options_naming_them(options: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        IsolatedSandbox(**options)  # type: ignore[arg-type]
