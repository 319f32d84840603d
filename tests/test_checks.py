"""`check_catalog`: every problem a model would meet is reported before it does, and nothing is left held."""

from __future__ import annotations

from pydantic import BaseModel

from mycelium import AcquireContext, Acquired, Module, operation, source
from mycelium._checks import check_catalog
from mycelium.sandbox.monty import MontySandbox

LANGUAGE = MontySandbox.language


class Done(BaseModel):
    ok: bool


def done() -> Done:
    return Done(ok=True)


def module(id: str, name: str, **operations: str) -> Module:
    """A module whose operations all return ``Done``, described as given."""
    return Module(
        id=id,
        name=name,
        operations={key: operation(output=Done, execute=done, description=text) for key, text in operations.items()},
    )


async def test_every_module_that_cannot_be_installed_is_reported_not_only_the_first() -> None:
    found = await check_catalog(language=LANGUAGE, modules=[module("a", "list", go="Go."), module("b", "re", go="Go.")])
    assert [(f.severity, f.code, f.where) for f in found] == [("error", "definition", m) for m in ("a", "b")]
    assert "builtin" in found[0].message
    assert "module the sandbox provides" in found[1].message


async def test_modules_that_install_alone_but_not_together_are_reported() -> None:
    found = await check_catalog(
        language=LANGUAGE, modules=[module("same", "one", go="Go."), module("same", "two", go="Go.")]
    )
    assert [(f.code, f.where) for f in found] == [("definition", "same")]
    assert "registered twice" in found[0].message


async def test_a_sources_modules_are_checked_and_its_snapshot_released() -> None:
    released: list[str] = []

    async def acquire(context: AcquireContext) -> Acquired:
        async def release() -> None:
            released.append("v1")

        return Acquired(version="v1", modules=[module("live", "live", go="")], release=release)

    found = await check_catalog(language=LANGUAGE, sources=[source(id="live", acquire=acquire)])
    assert [(f.code, f.where) for f in found] == [("no-description", "live.go")]
    assert released == ["v1"]


async def test_a_catalog_too_large_to_declare_inline_gets_a_note() -> None:
    many = {f"op{index}": f"Operation number {index}, which does one small thing." for index in range(80)}
    small = await check_catalog(language=LANGUAGE, modules=[module("few", "few", op="Does one thing.")])
    large = await check_catalog(language=LANGUAGE, modules=[module("many", "many", **many)])
    assert small == []
    assert [(f.severity, f.code) for f in large] == [("note", "not-inline")]


async def test_a_long_description_is_a_warning_naming_its_length() -> None:
    found = await check_catalog(
        language=LANGUAGE, modules=[module("m", "m", go="Short first line.\n\n" + "More detail. " * 100)]
    )
    assert [(f.code, f.where) for f in found] == [("long-description", "m.go")]
    assert "1318 characters" in found[0].message


async def test_parameters_without_a_type_are_a_warning_naming_them_and_what_to_write() -> None:
    tools = Module(id="tools-v1", name="tools")

    @tools.operation(access="read")
    def search(query, limit=10, exact: bool = False) -> list[str]:  # type: ignore[no-untyped-def]
        """Find things."""
        return []

    @tools.operation(access="read")
    def ping(target) -> str:  # type: ignore[no-untyped-def]
        """Ping a host."""
        return "pong"

    found = await check_catalog(language=LANGUAGE, modules=[tools])
    assert [(f.severity, f.code, f.where) for f in found] == [
        ("warning", "untyped-input", "tools.ping"),
        ("warning", "untyped-input", "tools.search"),
    ]
    assert found[0].message == (
        "parameter 'target' has no type: the model must guess what to pass, and any value gets through; "
        'annotate it (`target: str`), or give it a "type" in the input schema'
    )
    assert "parameters 'query', 'limit' have no type" in found[1].message
    assert "annotate each one (e.g. `query: str`, `limit: int = 10`)" in found[1].message  # a default's type


async def test_an_input_schema_property_without_a_type_is_the_same_warning() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "extra": {"description": "Anything."}}}
    raw = Module(id="raw-v1", name="raw", operations={"get": operation(input=schema, output=Done, execute=done)})
    found = await check_catalog(language=LANGUAGE, modules=[raw])
    untyped = [f for f in found if f.code == "untyped-input"]
    assert [f.message.split(":")[0] for f in untyped] == ["parameter 'extra' has no type"]
