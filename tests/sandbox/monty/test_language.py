"""Names a guest program already has: module names that would clash with them are refused at installation.

A top-level guest name (a module's first namespace segment, else its name) that is a
module the sandbox provides breaks every run (Monty refuses to build the namespace); one
that is a builtin hides the builtin. Both are refused with a ``DefinitionError`` naming the
clash and the module id, for static modules and for modules a source builds alike. The
lists themselves are checked against the real Monty sandbox, so an upgrade that changes
what a program has fails here.
"""

from __future__ import annotations

import builtins
import keyword
import sys
from collections.abc import AsyncIterator

import pytest
from pydantic_monty import ExternalModule

from mycelium import (
    AcquireContext,
    Acquired,
    DefinitionError,
    Module,
    MyceliumSourceError,
    Operation,
    Runtime,
    operation,
    source,
)
from mycelium._modules import RESERVED_NAMES
from mycelium.failures import Unknown
from mycelium.sandbox.monty import MontySandbox
from mycelium.testing import RejectingSandbox, rejecting_sandbox


def _ping_module(module_id: str, name: str, namespace: tuple[str, ...] = ()) -> Module:
    return Module(id=module_id, name=name, namespace=namespace, operations={"ping": operation(execute=lambda: "pong")})


def _answer(value: str) -> Operation:
    return operation(execute=lambda: value)


class _MontySpeaking(RejectingSandbox):
    """A sandbox whose programs speak Monty's language, and which runs none of them."""

    language = MontySandbox.language


def _install(module: Module) -> None:
    """Install ``module`` the way a host does: a runtime checks its static modules when it is made."""
    Runtime(modules=[module], sandbox=_MontySpeaking(Unknown()))


@pytest.fixture
async def monty() -> AsyncIterator[MontySandbox]:
    async with MontySandbox() as sandbox:
        yield sandbox


async def _run_alone(code: str, sandbox: MontySandbox) -> object:
    """The value of ``code`` run through a runtime with no modules (the sandbox's own names only)."""
    async with Runtime(modules=[], sandbox=sandbox) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run(code)
    assert not result.is_error, result.text
    return result.value


# --- the lists match the real sandbox ---------------------------------------------------


async def test_guest_modules_are_exactly_what_the_sandbox_offers_or_reserves(monty: MontySandbox) -> None:
    candidates = sorted(name for name in sys.stdlib_module_names if name.isidentifier() and not keyword.iskeyword(name))
    probe = "found = []\n" + "".join(
        f"try:\n    import {name}\n    found.append({name!r})\nexcept ImportError:\n    pass\n" for name in candidates
    )
    importable = await _run_alone(probe + "return found", monty)
    assert isinstance(importable, list)
    # Monty refuses a namespace named like one of its modules, importable or not (gc).
    reserved = set()
    for name in candidates:
        try:
            ExternalModule({name: ExternalModule({})})
        except ValueError:
            reserved.add(name)
    assert set(importable) | reserved == MontySandbox.language.reserved_modules


async def test_guest_builtins_are_exactly_the_names_a_program_starts_with(monty: MontySandbox) -> None:
    candidates = sorted(
        {name for name in dir(builtins) if not keyword.iskeyword(name) and name != "__debug__"}
        | {"__file__", "__builtins__", "__annotations__", "__dict__", "__cached__", "__path__", "_"}
    )
    probe = "found = []\n" + "".join(
        f"try:\n    {name}\n    found.append({name!r})\nexcept NameError:\n    pass\n" for name in candidates
    )
    present = await _run_alone(probe + "return found", monty)
    assert isinstance(present, list)
    assert set(present) == MontySandbox.language.builtins


def test_mycelium_guest_names_are_not_sandbox_names() -> None:
    assert not RESERVED_NAMES & (MontySandbox.language.reserved_modules | MontySandbox.language.builtins)


# --- refused at installation ------------------------------------------------------------


@pytest.mark.parametrize("name", ["asyncio", "json", "re", "time", "math", "datetime", "os", "sys", "typing", "gc"])
def test_a_module_named_like_a_sandbox_module_is_refused_at_installation_naming_the_clash(name: str) -> None:
    with pytest.raises(DefinitionError, match=rf"'acme-{name}'.*top-level name '{name}'.*module the sandbox") as caught:
        _install(_ping_module(f"acme-{name}", name))
    assert caught.value.module_id == f"acme-{name}"


@pytest.mark.parametrize("name", ["list", "len", "print", "dict", "str", "id", "type", "ValueError", "__name__"])
def test_a_module_named_like_a_builtin_is_refused_at_installation_naming_the_clash(name: str) -> None:
    with pytest.raises(DefinitionError, match=rf"'acme-x'.*top-level name '{name}'.*builtin") as caught:
        _install(_ping_module("acme-x", name))
    assert caught.value.module_id == "acme-x"


@pytest.mark.parametrize("first", ["json", "list", "time"])
def test_a_first_namespace_segment_that_clashes_is_refused_as_the_top_level_name(first: str) -> None:
    with pytest.raises(DefinitionError, match=rf"'acme-tools'.*top-level name '{first}'"):
        _install(_ping_module("acme-tools", "tools", (first,)))


@pytest.mark.parametrize(
    ("build", "namespace"),
    [
        (lambda: _ping_module("acme-json", "json", ("apps",)), "apps.json"),
        (lambda: _ping_module("acme-re", "tools", ("apps", "re")), "apps.re"),
        (
            lambda: Module(id="acme-files", name="files", operations={"json.read": operation(execute=lambda: 1)}),
            "files.json",
        ),
        (
            lambda: Module(id="acme-files", name="files", operations={"time": _ping_module("acme-clock", "clock")}),
            "files.time",
        ),
    ],
    ids=["module-name-in-a-namespace", "deeper-namespace", "dotted-key", "child-module-key"],
)
def test_a_namespace_named_like_a_sandbox_module_is_refused_at_any_depth(build: object, namespace: str) -> None:
    module = build()  # type: ignore[operator]
    with pytest.raises(DefinitionError, match=rf"namespace '{namespace}'.*sandbox's module") as caught:
        _install(module)
    assert caught.value.module_id == module.id


async def test_the_refusal_reaches_modules_a_source_builds_at_acquire_time() -> None:
    released: list[str] = []

    async def release() -> None:
        released.append("computer")

    async def acquire(context: AcquireContext) -> Acquired:
        return Acquired(version="v1", modules=[_ping_module("computer-json", "json")], release=release)

    sources = [source(id="computer", acquire=acquire)]
    async with Runtime(sources=sources, sandbox=_MontySpeaking(Unknown())) as runtime:
        with pytest.raises(MyceliumSourceError) as caught:
            await runtime.acquire()
    assert caught.value.source_id == "computer"
    assert isinstance(caught.value.__cause__, DefinitionError)
    assert "'computer-json'" in str(caught.value)
    assert "top-level name 'json'" in str(caught.value)
    assert released == ["computer"]


def test_the_names_refused_are_the_sandboxs_own_language_and_a_sandbox_that_reserves_none_refuses_none() -> None:
    Runtime(modules=[_ping_module("acme-json", "json"), _ping_module("acme-list", "list")], sandbox=rejecting_sandbox())
    with pytest.raises(DefinitionError, match="top-level name 'json'"):
        _install(_ping_module("acme-json", "json"))


# --- what stays allowed, in the real sandbox ---------------------------------------------


async def test_builtin_names_below_the_top_level_and_operation_names_work_in_the_real_sandbox(
    monty: MontySandbox,
) -> None:
    deep = _ping_module("apps-list", "list", ("apps",))
    names = ("json", "list", "print", "time")
    notes = Module(id="notes-v1", name="notes", operations={name: _answer(name) for name in names})
    program = (
        "import json\n"
        "names = [await notes.json(), await notes.list(), await notes.print(), await notes.time()]\n"
        "return {'names': names, 'deep': await apps.list.ping(), 'len': len(list(range(3))), "
        "'json': json.dumps([1])}"
    )
    async with Runtime(modules=[deep, notes], sandbox=monty) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run(program)
    assert result.value == {"names": ["json", "list", "print", "time"], "deep": "pong", "len": 3, "json": "[1]"}
