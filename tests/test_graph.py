"""Nested namespaces: where modules appear, how names are allocated, how bindings are called."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mycelium import InvalidInput, InvocationContext, Module, Runtime, ToolResult, UnknownOperation, operation
from mycelium._discovery import Catalog
from mycelium._graph import OperationGraph, build_graph
from mycelium.testing import direct_sandbox


def _op(value: Any = None) -> Any:
    return operation(execute=lambda: value)


def _layout(graph: OperationGraph) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {module.id: (module.alias, module.path) for module in graph.modules}


async def _run(modules: Sequence[Module], program: Any) -> ToolResult:
    async with Runtime(modules=list(modules), sandbox=direct_sandbox(program)) as runtime, runtime.lease() as lease:
        return await lease.execute_tool.run("# direct_sandbox ignores the code")


def _bazaar(seen: list[InvocationContext]) -> Module:
    async def open_window(input: Any, ctx: InvocationContext) -> dict[str, Any]:
        seen.append(ctx)
        return {"opened": input["url"]}

    window_module = Module(
        id="bazaar-windows",
        name="windows",
        operations={
            "open": operation(
                input={"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
                execute=open_window,
            )
        },
    )
    return Module(id="app-bazaar", name="bazaar", namespace=["apps"], operations={"windows": window_module})


# --- Placement and authority -----------------------------------------------------------------


async def test_namespace_places_a_child_operation_under_env_and_at_top_level() -> None:
    seen: list[InvocationContext] = []

    async def program(bindings: Any, signal: object) -> list[Any]:
        return [
            await bindings.env.apps.bazaar.windows.open({"url": "https://a.example"}),
            await bindings.apps.bazaar.windows.open(url="https://b.example"),
        ]

    result = await _run([_bazaar(seen)], program)

    assert not result.is_error, result.text
    assert result.value == [{"opened": "https://a.example"}, {"opened": "https://b.example"}]
    assert len(seen) == 2


async def test_operation_context_names_the_enclosing_module_and_the_relative_path() -> None:
    seen: list[InvocationContext] = []

    async def program(bindings: Any, signal: object) -> Any:
        return await bindings.env.apps.bazaar.windows.open(url="https://a.example")

    result = await _run([_bazaar(seen)], program)

    assert not result.is_error, result.text
    [ctx] = seen
    # Child ids create no authority: the enclosing module is the one a gate sees.
    assert ctx.module_id == "app-bazaar"
    assert ctx.operation == "windows.open"


async def test_child_module_ids_create_no_authority_of_their_own() -> None:
    seen: list[InvocationContext] = []
    async with Runtime(modules=[_bazaar(seen)], sandbox=direct_sandbox(lambda b, s: None)) as runtime:
        with pytest.raises(UnknownOperation):
            await runtime.invoke("bazaar-windows", "open", {"url": "u"})
        assert await runtime.invoke("app-bazaar", "windows.open", {"url": "u"}) == {"opened": "u"}
    [ctx] = seen
    assert (ctx.module_id, ctx.operation) == ("app-bazaar", "windows.open")


# --- Alias allocation -----------------------------------------------------------------------


def test_names_are_allocated_within_their_logical_namespace() -> None:
    top = Module(id="z-top-bazaar", name="bazaar", operations={"ping": _op()})
    app = Module(id="a-app-bazaar", name="bazaar", namespace=["apps"], operations={"ping": _op()})
    graph = build_graph([top, app], revision=1)
    assert _layout(graph) == {
        "z-top-bazaar": ("bazaar", ("bazaar",)),
        "a-app-bazaar": ("bazaar", ("apps", "bazaar")),
    }


async def test_same_name_in_different_namespaces_is_callable_at_both_paths() -> None:
    top = Module(id="top-bazaar", name="bazaar", operations={"ping": _op("top")})
    app = Module(id="app-bazaar", name="bazaar", namespace=["apps"], operations={"ping": _op("app")})

    async def program(bindings: Any, signal: object) -> list[Any]:
        return [await bindings.bazaar.ping(), await bindings.apps.bazaar.ping(), await bindings.env.bazaar.ping()]

    result = await _run([top, app], program)
    assert not result.is_error, result.text
    assert result.value == ["top", "app", "top"]


@given(st.permutations(["id-a", "id-b", "id-c"]))
def test_contested_names_get_suffixes_in_module_id_order_whatever_the_registration_order(
    ids: list[str],
) -> None:
    modules = [Module(id=module_id, name="notes", operations={"ping": _op()}) for module_id in ids]
    graph = build_graph(modules, revision=1)
    assert _layout(graph) == {
        "id-a": ("notes", ("notes",)),
        "id-b": ("notes_2", ("notes_2",)),
        "id-c": ("notes_3", ("notes_3",)),
    }


@given(st.permutations(["a", "b", "c"]))
def test_a_requested_suffixed_name_is_kept_and_the_collision_skips_past_it(order: list[str]) -> None:
    requested = {"a": "x", "b": "x", "c": "x_2"}
    modules = [Module(id=module_id, name=requested[module_id], operations={"ping": _op()}) for module_id in order]
    graph = build_graph(modules, revision=1)
    assert {module_id: alias for module_id, (alias, _) in _layout(graph).items()} == {
        "a": "x",
        "c": "x_2",
        "b": "x_3",
    }


@given(st.permutations(["app", "top"]))
def test_a_top_level_name_equal_to_a_namespace_segment_gets_a_suffix(order: list[str]) -> None:
    # "top" sorts after "app", yet the namespace segment still wins: no half-merged `apps`.
    made = {
        "app": Module(id="app", name="bazaar", namespace=["apps"], operations={"ping": _op()}),
        "top": Module(id="top", name="apps", operations={"ping": _op()}),
    }
    graph = build_graph([made[key] for key in order], revision=1)
    assert _layout(graph) == {
        "app": ("bazaar", ("apps", "bazaar")),
        "top": ("apps_2", ("apps_2",)),
    }


def test_a_name_equal_to_a_deeper_namespace_segment_gets_a_suffix() -> None:
    inner = Module(id="a-inner", name="windows", namespace=["apps", "bazaar"], operations={"open": _op()})
    bazaar = Module(id="z-bazaar", name="bazaar", namespace=["apps"], operations={"ping": _op()})
    graph = build_graph([inner, bazaar], revision=1)
    assert _layout(graph) == {
        "a-inner": ("windows", ("apps", "bazaar", "windows")),
        "z-bazaar": ("bazaar_2", ("apps", "bazaar_2")),
    }


def test_a_suffixed_alias_never_lands_on_a_namespace_segment() -> None:
    first = Module(id="a", name="x", operations={"ping": _op()})
    second = Module(id="b", name="x", operations={"ping": _op()})
    deeper = Module(id="c", name="y", namespace=["x_2"], operations={"ping": _op()})
    graph = build_graph([second, deeper, first], revision=1)
    assert _layout(graph) == {
        "a": ("x", ("x",)),
        "b": ("x_3", ("x_3",)),
        "c": ("y", ("x_2", "y")),
    }


_NAMES = ["a", "b", "a_2", "apps", "x"]
_NAMESPACES: list[tuple[str, ...]] = [(), ("apps",), ("apps", "a"), ("x",)]


@st.composite
def _module_specs(draw: st.DrawFn) -> list[tuple[str, str, tuple[str, ...]]]:
    count = draw(st.integers(min_value=1, max_value=8))
    ids = draw(st.lists(st.text("pqrs", min_size=1, max_size=3), min_size=count, max_size=count, unique=True))
    return [(module_id, draw(st.sampled_from(_NAMES)), draw(st.sampled_from(_NAMESPACES))) for module_id in ids]


@settings(max_examples=200)
@given(_module_specs(), st.data())
def test_any_registration_order_gives_the_same_aliases_and_distinct_paths(
    specs: list[tuple[str, str, tuple[str, ...]]], data: st.DataObject
) -> None:
    def make(order: Sequence[tuple[str, str, tuple[str, ...]]]) -> OperationGraph:
        return build_graph(
            [Module(id=i, name=n, namespace=ns, operations={"ping": _op()}) for i, n, ns in order], revision=1
        )

    reference = _layout(make(specs))
    assert _layout(make(data.draw(st.permutations(specs)))) == reference
    # Every module sits at its own path, which is never a namespace another module passes through.
    paths = [path for _, path in reference.values()]
    assert len(set(paths)) == len(paths)
    through = {ns[: depth + 1] for _, _, ns in specs for depth in range(len(ns))}
    assert not through & set(paths)
    # In each namespace, the smallest id asking for a free name keeps it.
    for module_id, name, namespace in specs:
        rivals = [i for i, n, ns in specs if n == name and ns == namespace]
        if module_id == min(rivals) and (*namespace, name) not in through:
            assert reference[module_id] == (name, (*namespace, name))


def _varied_modules() -> list[Module]:
    return [
        Module(id="m-notes-1", name="notes", operations={"search": _op()}),
        Module(id="m-notes-0", name="notes", operations={"search": _op()}),
        Module(id="m-notes-2", name="notes_2", operations={"search": _op()}),
        Module(id="m-apps", name="apps", operations={"list": _op()}),
        Module(id="m-bazaar-top", name="bazaar", operations={"ping": _op()}),
        Module(id="m-bazaar-app", name="bazaar", namespace=["apps"], operations={"ping": _op()}),
        Module(id="m-bazaar-app-2", name="bazaar", namespace=["apps"], operations={"ping": _op()}),
        Module(id="m-deep", name="windows", namespace=["apps", "bazaar"], operations={"open": _op()}),
        Module(id="m-gh", name="gh", operations={"repos.list": _op(), "repos.get": _op()}),
        Module(id="m-gh-2", name="gh", namespace=["vendors"], operations={"issues.list": _op()}),
    ]


_REFERENCE = build_graph(_varied_modules(), revision=1)


@settings(max_examples=60)
@given(st.permutations(range(len(_varied_modules()))))
def test_input_ordering_never_changes_an_id_alias_or_path(order: list[int]) -> None:
    modules = _varied_modules()
    graph = build_graph([modules[index] for index in order], revision=1)
    assert _layout(graph) == _layout(_REFERENCE)
    assert [entry.path for entry in Catalog(graph).entries] == [entry.path for entry in Catalog(_REFERENCE).entries]


def test_every_installed_module_has_a_distinct_logical_path() -> None:
    paths = [path for _, path in _layout(_REFERENCE).values()]
    assert len(set(paths)) == len(paths)
    operation_paths = [target.path for target in _REFERENCE.operations()]
    assert len(set(operation_paths)) == len(operation_paths)


# --- Binding call shapes ----------------------------------------------------------------------


def _echo_module() -> Module:
    async def echo(input: Any) -> Any:
        return input

    ping = operation(
        input={"type": "object", "properties": {"query": {"type": "string"}}, "additionalProperties": False},
        execute=echo,
    )
    return Module(id="demo-mod", name="demo", operations={"ping": ping})


async def test_binding_accepts_one_mapping_or_keyword_arguments() -> None:
    async def program(bindings: Any, signal: object) -> list[Any]:
        ping = bindings.demo.ping
        return [await ping({}), await ping(), await ping(query="x"), await ping({"query": "x"})]

    result = await _run([_echo_module()], program)
    assert not result.is_error, result.text
    assert result.value == [{}, {}, {"query": "x"}, {"query": "x"}]


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (({"query": "a"},), {"query": "b"}),
        (({},), {"query": "b"}),
        (({"query": "a"}, {"query": "b"}), {}),
        (({}, {}), {}),
    ],
    ids=["mapping-and-keywords", "empty-mapping-and-keywords", "two-mappings", "two-empty"],
)
async def test_binding_refuses_a_wrong_call_shape_with_type_error(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    raised = await _refusal_of_call(args, kwargs, TypeError)
    assert "demo.ping" in str(raised)


@pytest.mark.parametrize(
    ("args", "kwargs", "field"),
    [
        (({"query": {1, 2}},), {}, "/query"),
        (({1, 2},), {}, "the value is a set"),
        ((), {"query": {1, 2}}, "/query"),
        (({"query": float("nan")},), {}, "/query"),
        (({"query": [{"deep": b"x"}]},), {}, "/query/0/deep"),
    ],
    ids=["set-in-mapping", "set-argument", "set-keyword", "nan", "bytes-deep-inside"],
)
async def test_binding_refuses_input_that_is_not_json_as_invalid_input_naming_the_field(
    args: tuple[Any, ...], kwargs: dict[str, Any], field: str
) -> None:
    raised = await _refusal_of_call(args, kwargs, InvalidInput)
    assert "demo.ping" in str(raised)
    assert field in str(raised)


async def _refusal_of_call(args: tuple[Any, ...], kwargs: dict[str, Any], kind: type[Exception]) -> BaseException:
    called: list[object] = []

    async def record(input: Any) -> Any:
        called.append(input)
        return input

    module = Module(id="demo-mod", name="demo", operations={"ping": operation(input={}, execute=record)})
    raised: list[BaseException] = []

    async def program(bindings: Any, signal: object) -> str:
        with pytest.raises(kind) as caught:
            bindings.demo.ping(*args, **kwargs)
        raised.append(caught.value)
        return "refused"

    result = await _run([module], program)
    assert not result.is_error, result.text
    assert len(raised) == 1
    assert called == []
    return raised[0]


@pytest.mark.parametrize(
    ("walk", "missing"),
    [
        (lambda b: b.nope, "nope"),
        (lambda b: b.demo.nope, "nope"),
        (lambda b: b.env.nope, "nope"),
        (lambda b: b.env.apps.bazaar.missing_child, "missing_child"),
        (lambda b: b.apps.bazar, "bazar"),
    ],
    ids=["top-level", "in-module", "under-env", "deep", "typo"],
)
async def test_missing_binding_attribute_raises_attribute_error_naming_it(walk: Any, missing: str) -> None:
    raised: list[AttributeError] = []

    async def program(bindings: Any, signal: object) -> None:
        with pytest.raises(AttributeError) as caught:
            walk(bindings)
        raised.append(caught.value)

    result = await _run([_echo_module(), _bazaar([])], program)
    assert not result.is_error, result.text
    [error] = raised
    assert missing in str(error)


async def test_hasattr_on_bindings_reports_presence_without_raising() -> None:
    async def program(bindings: Any, signal: object) -> list[bool]:
        return [hasattr(bindings, "demo"), hasattr(bindings, "nope"), hasattr(bindings.env.apps, "bazaar")]

    result = await _run([_echo_module(), _bazaar([])], program)
    assert not result.is_error, result.text
    assert result.value == [True, False, True]


# --- Catalog --------------------------------------------------------------------------------


def _catalog_modules() -> list[Module]:
    return [
        _bazaar([]),
        Module(id="appsx", name="appsx", operations={"run": _op()}),
        Module(id="bazaar-top", name="bazaar", operations={"ping": _op()}),
        Module(id="bazaarx", name="bazaarx", namespace=["apps"], operations={"ping": _op()}),
        Module(id="github", name="gh", operations={"repos.list": _op(), "repos.get": _op(), "reposx.list": _op()}),
    ]


async def test_catalog_entries_use_complete_logical_paths() -> None:
    async with (
        Runtime(modules=_catalog_modules(), sandbox=direct_sandbox(lambda b, s: None)) as runtime,
        runtime.lease() as lease,
    ):
        paths = [entry.path for entry in lease.catalog.list()]
    assert paths == [
        "apps.bazaar.windows.open",
        "apps.bazaarx.ping",
        "appsx.run",
        "bazaar.ping",
        "gh.repos.get",
        "gh.repos.list",
        "gh.reposx.list",
    ]


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("apps", ["apps.bazaar.windows.open", "apps.bazaarx.ping"]),
        ("apps.bazaar", ["apps.bazaar.windows.open"]),
        ("apps.bazaar.windows.open", ["apps.bazaar.windows.open"]),
        ("app", []),
        ("apps.baz", []),
        ("gh.repos", ["gh.repos.get", "gh.repos.list"]),
        ("gh.repos.li", []),
        ("bazaar", ["bazaar.ping"]),
        ("", None),
    ],
)
async def test_catalog_list_prefix_matches_whole_segments_only(prefix: str, expected: list[str] | None) -> None:
    async with (
        Runtime(modules=_catalog_modules(), sandbox=direct_sandbox(lambda b, s: None)) as runtime,
        runtime.lease() as lease,
    ):
        everything = [entry.path for entry in lease.catalog.list()]
        listed = [entry.path for entry in lease.catalog.list(prefix)]
    assert listed == (everything if expected is None else expected)
