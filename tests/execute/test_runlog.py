"""The run log: one line per execute on ``mycelium.runs``, with its fields, and never what the program holds.

Every run goes through a real ``Runtime`` and the real Monty sandbox; the lines are the
records the ``logging`` module hands a handler, as an operator's handler gets them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import anyio
import pytest

from mycelium import Access, ExecutionOptions, Module, Runtime, Session, Suspensions, ToolCall, defer
from mycelium.sandbox.monty import MontySandbox

MARKER = "zebra-quartz-7731"
"""A string that must never reach the run log: it is in the code, the arguments, the result and the prints."""

notes = Module(id="notes-v1", name="notes")


@notes.operation(access="read")
async def echo(text: str) -> str:
    """The text back."""
    return text


@notes.operation(access="read")
async def broken() -> int:
    """Fails on the host."""
    raise RuntimeError(f"the database is down {MARKER}")


@notes.operation(access="write", confirm=True)
async def delete(id: int) -> bool:
    """Delete a note, once a person confirms."""
    return True


class Lines(logging.Handler):
    """The records of the run log, as an operator's handler receives them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    @property
    def one(self) -> logging.LogRecord:
        assert len(self.records) == 1, [record.getMessage() for record in self.records]
        return self.records[0]


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    runs = logging.getLogger("mycelium.runs")
    saved = runs.level
    runs.addHandler(handler)
    runs.setLevel(logging.INFO)
    yield handler
    runs.removeHandler(handler)
    runs.setLevel(saved)


def runtime(**options: object) -> Runtime:
    return Runtime(
        modules=[notes],
        sandbox=MontySandbox(),
        session=Session("session-1", requester="member ada (admin)"),
        **options,  # type: ignore[arg-type]
    )


def everything_said(record: logging.LogRecord) -> str:
    return record.getMessage() + repr(vars(record))


async def test_a_successful_execute_logs_one_info_line_with_its_identities_counts_and_size(lines: Lines) -> None:
    code = f'a = await notes.echo(text="{MARKER}")\nb = await notes.echo(text=a)\nprint(b)\nreturn b'
    async with runtime() as held, held.lease() as lease:
        result = await lease.execute_tool.run(code, tool_call_id="call-1")
    assert result.value == MARKER
    record = lines.one
    assert record.levelno == logging.INFO
    assert record.outcome == "ok"  # type: ignore[attr-defined]
    assert record.execution_id.startswith("exec-")  # type: ignore[attr-defined]
    assert record.tool_call_id == "call-1"  # type: ignore[attr-defined]
    assert record.principal == "member ada (admin)"  # type: ignore[attr-defined]
    assert record.calls == 2  # type: ignore[attr-defined]
    assert record.result_bytes == len(result.text)  # type: ignore[attr-defined]
    assert record.printed_bytes == len(MARKER)  # type: ignore[attr-defined]
    assert record.resumed is False  # type: ignore[attr-defined]
    assert record.reference is None  # type: ignore[attr-defined]
    assert record.duration_ms >= 0  # type: ignore[attr-defined]
    message = record.getMessage()
    assert message.startswith("execute ok ")
    for shown in (f"execution_id={record.execution_id}", "tool_call_id=call-1", "calls=2"):  # type: ignore[attr-defined]
        assert shown in message
    assert 'principal="member ada (admin)"' in message
    assert MARKER not in everything_said(record)


async def test_a_call_refused_before_it_started_logs_its_code_and_reference_and_no_execution_id(
    lines: Lines,
) -> None:
    async with runtime() as held, held.lease() as lease:
        call = ToolCall(id="call-2", name="execute", arguments={"code": 5, MARKER: MARKER})
        result = await lease.execute_tool.prepare(call).execute()
    record = lines.one
    assert record.outcome == "invalid-arguments"  # type: ignore[attr-defined]
    assert record.reference == result.reference  # type: ignore[attr-defined]
    assert record.execution_id is None  # type: ignore[attr-defined]
    assert record.calls == 0  # type: ignore[attr-defined]
    message = record.getMessage()
    assert "None" not in message  # once it said `execute None`
    assert f"reference={result.reference}" in message
    assert MARKER not in record.getMessage()


async def test_a_program_mistake_is_logged_at_info_and_a_host_failure_at_warning_under_its_reference(
    lines: Lines,
) -> None:
    async with runtime() as held, held.lease() as lease:
        mistake = await lease.execute_tool.run(f'raise ValueError("{MARKER}")', tool_call_id="call-3")
        host = await lease.execute_tool.run("return await notes.broken()", tool_call_id="call-4")
    first, second = lines.records
    assert (first.levelno, first.outcome, first.reference) == (  # type: ignore[attr-defined]
        logging.INFO,
        "guest-exception",
        mistake.reference,
    )
    assert (second.levelno, second.outcome, second.reference) == (  # type: ignore[attr-defined]
        logging.WARNING,
        "capability-failed",
        host.reference,
    )
    assert second.calls == 1  # type: ignore[attr-defined]
    # The host's exception is logged once, with its operation's error, not again here.
    assert second.exc_info is None
    assert all(MARKER not in everything_said(record) for record in lines.records)


async def test_a_paused_run_logs_a_line_when_it_pauses_and_another_when_it_resumes(lines: Lines) -> None:
    async with runtime(access=Access(confirm=defer), suspensions=Suspensions()) as held:
        async with held.lease() as lease:
            paused = await lease.execute_tool.run(
                f'x = await notes.echo(text="{MARKER}")\nreturn await notes.delete(id=1)', tool_call_id="call-5"
            )
        assert paused.suspension is not None
        finished = await held.resume(paused.suspension.id, approved=True)
    assert finished.value is True
    pause, resume = lines.records
    assert (pause.outcome, pause.resumed, pause.calls) == ("suspended", False, 2)  # type: ignore[attr-defined]
    # The rest of the run keeps its identities; the decided call was placed before it paused.
    assert (resume.outcome, resume.resumed, resume.calls) == ("ok", True, 0)  # type: ignore[attr-defined]
    assert resume.execution_id == pause.execution_id  # type: ignore[attr-defined]
    assert resume.tool_call_id == "call-5"  # type: ignore[attr-defined]
    assert all(MARKER not in everything_said(record) for record in lines.records)


async def test_an_execute_whose_task_is_cancelled_is_logged_once_as_cancelled(lines: Lines) -> None:
    options = ExecutionOptions(timeout_ms=30_000, abort_grace_ms=1_000)
    async with runtime(execution=options) as held, held.lease() as lease:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(lease.execute_tool.run, "while True:\n    pass", "call-6")
                await anyio.wait_all_tasks_blocked()
                scope.cancel()
    record = lines.one
    assert record.outcome == "cancelled"  # type: ignore[attr-defined]
    assert record.tool_call_id == "call-6"  # type: ignore[attr-defined]
    assert record.reference is not None  # type: ignore[attr-defined]
    assert record.levelno == logging.WARNING


async def test_a_tool_call_id_cannot_flood_the_log_or_forge_a_line(lines: Lines) -> None:
    forged = "x\nINFO mycelium.runs: execute ok " + "y" * 10_000
    async with runtime() as held, held.lease() as lease:
        await lease.execute_tool.run("return 1", tool_call_id=forged)
    message = lines.one.getMessage()
    assert "\n" not in message
    assert len(message) < 600
