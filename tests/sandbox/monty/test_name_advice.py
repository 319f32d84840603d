"""A name a program types that its namespaces lack is answered with the names it may have meant
and with how to find an operation: as the program runs, and when it is type-checked."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from mycelium import AbortSignal, JsonValue, Module, Runtime, SharedSandbox, ToolResult
from mycelium.failures import GuestException, SyntaxFailure
from mycelium.sandbox._namespaces import GuestNamespace
from mycelium.sandbox.monty import MontySandbox
from mycelium.testing import direct_sandbox

FIND_OPERATIONS = 'forage.search("what it should do") finds operations'


class Note(BaseModel):
    id: int
    title: str


def _modules() -> list[Module]:
    notes = Module(id="notes-v1", name="notes")
    bazaar = Module(id="bazaar-app", name="bazaar", namespace=["apps"])

    @notes.operation(access="read")
    async def search(query: str) -> list[Note]:
        """Find notes."""
        return [Note(id=1, title=query)]

    @bazaar.operation(name="windows.open", access="read")
    async def open_window(url: str) -> str:
        """Open a window."""
        return url

    return [notes, bazaar]


async def _run(code: str, *, type_check: bool = False) -> ToolResult:
    async with Runtime(modules=_modules(), sandbox=MontySandbox(type_check=type_check)) as runtime:
        async with runtime.lease() as lease:
            return await lease.execute_tool.run(code, tool_call_id="call-1")


@pytest.mark.parametrize(
    ("code", "meant", "listing"),
    [
        ('return await notes.serch(query="x")', "notes.search", 'forage.list("notes") lists notes'),
        ('return await env.notes.serch(query="x")', "env.notes.search", 'forage.list("notes") lists env.notes'),
        ('return await env.apps.bazar.windows.open(url="u")', "env.apps.bazaar", 'forage.list("apps") lists env.apps'),
        ('return await apps.bazaar.window.open(url="u")', "apps.bazaar.windows", 'forage.list("apps.bazaar")'),
    ],
)
async def test_a_misspelt_operation_or_namespace_names_the_closest_ones_and_forage(
    code: str, meant: str, listing: str
) -> None:
    result = await _run(code)
    assert isinstance(result.failure, GuestException)
    assert result.failure.type_name == "AttributeError"
    assert f"did you mean {meant}?" in result.text
    assert listing in result.text
    assert FIND_OPERATIONS in result.text


async def test_a_misspelt_top_level_namespace_names_the_closest_one() -> None:
    result = await _run('return await note.search(query="x")')
    assert isinstance(result.failure, GuestException)
    assert "did you mean notes?" in result.text
    assert FIND_OPERATIONS in result.text


async def test_an_operation_called_without_its_namespace_names_where_it_lives() -> None:
    result = await _run('return await search(query="x")')
    assert "notes.search" in result.text
    assert FIND_OPERATIONS in result.text


async def test_an_undefined_name_unlike_any_namespace_of_the_program_gets_no_advice() -> None:
    result = await _run("return total_count + 1")
    assert isinstance(result.failure, GuestException)
    assert "name 'total_count' is not defined" in result.text
    assert "did you mean" not in result.text
    assert "forage" not in result.text


async def test_a_missing_attribute_of_a_sandbox_module_gets_no_namespace_advice() -> None:
    result = await _run("import math\nreturn math.tau2")
    assert isinstance(result.failure, GuestException)
    assert "forage" not in result.text


async def test_a_type_checked_program_is_told_the_closest_names_before_anything_runs() -> None:
    result = await _run('return await notes.serch(query="x")', type_check=True)
    assert isinstance(result.failure, SyntaxFailure)
    assert result.failure.type_check
    assert "did you mean notes.search?" in result.text
    assert FIND_OPERATIONS in result.text


async def test_suggestions_name_only_operations_of_the_programs_own_runtime() -> None:
    # One sandbox serves several runtimes (as a server's principals share one): a typo in one
    # must not be answered with a name only another offers.
    other = Module(id="admin-v1", name="notes_admin")

    @other.operation(access="read")
    async def serch_all() -> list[Note]:
        """Every note of every user."""
        return []

    shared = SharedSandbox(MontySandbox(), capacity=2)
    async with (
        Runtime(modules=[other], sandbox=shared) as theirs,
        Runtime(modules=_modules(), sandbox=shared) as mine,
    ):
        async with theirs.lease() as lease:
            assert (await lease.execute_tool.run("return await notes_admin.serch_all()")).value == []
        async with mine.lease() as lease:
            result = await lease.execute_tool.run('return await notes.serch_all(query="x")')
    assert "did you mean notes.search?" in result.text
    assert "serch_all" not in result.text.replace("has no attribute 'serch_all'", "")
    assert "notes_admin" not in result.text


async def test_the_direct_sandbox_namespaces_give_the_same_advice() -> None:
    def program(bindings: GuestNamespace, signal: AbortSignal) -> JsonValue:
        try:
            bindings.notes.serch  # noqa: B018  # the lookup is what is tested
        except AttributeError as exc:
            return str(exc)
        return None

    async with Runtime(modules=_modules(), sandbox=direct_sandbox(program)) as runtime:
        async with runtime.lease() as lease:
            told = (await lease.execute_tool.run("unused")).value
    assert isinstance(told, str)
    assert "did you mean notes.search?" in told
    assert FIND_OPERATIONS in told
