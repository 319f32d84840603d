"""`ToolError`: an operation's own failure, written for its caller, reaches the model as written (bounded)."""

from __future__ import annotations

import pytest

from mycelium import Module, OperationEvidence, Runtime, ToolError, direct_tool
from mycelium._exceptions import MAX_ERROR_MESSAGE_CHARS
from mycelium.sandbox.monty import MontySandbox


def notes(errors: list[OperationEvidence]) -> Runtime:
    module = Module(id="notes-v1", name="notes")

    @module.operation(access="read")
    async def find(id: int) -> str:
        """A note by id."""
        if id == 2:
            raise ToolError("the upstream has no note 2", origin="server 'files'")
        raise ToolError(f"no note has id {id}; " + "x" * 5_000)

    return Runtime(modules=[module], sandbox=MontySandbox(), on_operation_error=errors.append)


async def test_a_program_catches_an_operations_own_error_with_its_message() -> None:
    errors: list[OperationEvidence] = []
    program = "try:\n    await notes.find(id=2)\nexcept RuntimeError as e:\n    return str(e)"
    async with notes(errors) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run(program)
    assert result.value == "notes.find failed; server 'files' says: the upstream has no note 2"
    assert errors == []  # not a host failure: no evidence, no reference


async def test_an_unhandled_operation_error_is_the_programs_exception_and_its_message_is_bounded() -> None:
    errors: list[OperationEvidence] = []
    async with notes(errors) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run("return await notes.find(id=1)")
    assert result.failure is not None
    assert result.failure.code == "guest-exception"
    assert "RuntimeError: notes.find failed: no note has id 1; xxx" in result.text
    assert len(result.text) < MAX_ERROR_MESSAGE_CHARS + 400


async def test_a_direct_tools_own_error_is_an_error_result_the_model_reads() -> None:
    def refuse() -> str:
        raise ToolError("the calendar is read-only today")

    runtime = Runtime(
        tools=[direct_tool(name="book", description="Book a slot.", output=str, execute=refuse, access="read")],
        sandbox=MontySandbox(),
    )
    async with runtime, runtime.lease() as lease:
        (tool,) = lease.tools
        result = await tool.call({})
    assert result.is_error
    assert result.text == "book failed: the calendar is read-only today"


@pytest.mark.parametrize("origin", [None, "server 'files'"])
def test_the_message_names_the_path_and_where_it_came_from(origin: str | None) -> None:
    said = str(ToolError("gone", origin=origin, path="files.read"))
    assert said == ("files.read failed: gone" if origin is None else "files.read failed; server 'files' says: gone")
