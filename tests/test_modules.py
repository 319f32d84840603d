"""Modules: ids, names, operation keys, child modules, and what installation refuses."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from mycelium import DefinitionError, InvocationContext, Module, Runtime, operation
from mycelium._graph import OperationGraph, build_graph
from mycelium.testing import direct_sandbox

Installer = Callable[[Sequence[Module]], object]


def _op(value: Any = None) -> Any:
    return operation(execute=lambda: value)


def _install_with_build_graph(modules: Sequence[Module]) -> object:
    return build_graph(list(modules), revision=1)


def _install_with_runtime(modules: Sequence[Module]) -> object:
    return Runtime(modules=list(modules), sandbox=direct_sandbox(lambda bindings, signal: None))


@pytest.fixture(params=[_install_with_build_graph, _install_with_runtime], ids=["build_graph", "Runtime"])
def install(request: pytest.FixtureRequest) -> Installer:
    """Both ways a host installs modules; every installation rule holds for each."""
    installer: Installer = request.param
    return installer


def _paths(graph: OperationGraph) -> list[str]:
    return [target.path for target in graph.operations()]


# --- Module id -------------------------------------------------------------------------


def test_module_id_of_160_characters_is_accepted() -> None:
    module = Module(id="m" * 160, name="demo")
    assert module.id == "m" * 160


def test_module_id_over_160_characters_is_refused() -> None:
    with pytest.raises(DefinitionError):
        Module(id="m" * 161, name="demo")


@pytest.mark.parametrize("bad_id", ["", None, 7, b"demo", ["demo"]], ids=repr)
def test_module_id_must_be_a_non_empty_string(bad_id: object) -> None:
    with pytest.raises(DefinitionError):
        Module(id=bad_id, name="demo")  # type: ignore[arg-type]


# --- Module name -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["demo", "_private", "gh2", "Bazaar", "envs", "forager"])
def test_module_name_that_is_an_identifier_is_accepted(name: str) -> None:
    assert Module(id="mod", name=name).name == name


@pytest.mark.parametrize(
    "bad_name",
    ["", "1x", "bad-name", "a.b", "has space", "class", "import", "None", "env", "forage", 3, None],
    ids=repr,
)
def test_module_name_must_be_an_identifier_not_a_keyword_nor_reserved(bad_name: object) -> None:
    with pytest.raises(DefinitionError):
        Module(id="mod", name=bad_name)  # type: ignore[arg-type]


@pytest.mark.parametrize("segment", ["bad-seg", "1x", "class", "", "a.b"])
def test_module_namespace_segments_must_be_identifiers(segment: str) -> None:
    with pytest.raises(DefinitionError, match="namespace"):
        Module(id="mod", name="demo", namespace=["apps", segment])


def test_module_namespace_given_as_a_bare_string_is_refused() -> None:
    # "apps" would otherwise be read as the segments a, p, p, s.
    with pytest.raises(DefinitionError, match="namespace"):
        Module(id="mod", name="demo", namespace="apps")


def test_module_refuses_the_same_key_registered_twice() -> None:
    module = Module(id="mod", name="demo", operations={"ping": _op()})
    with pytest.raises(DefinitionError, match="ping"):
        module.add("ping", _op())


def test_module_refuses_a_value_that_is_neither_operation_nor_module() -> None:
    with pytest.raises(DefinitionError, match="ping"):
        Module(id="mod", name="demo", operations={"ping": lambda: None})  # type: ignore[dict-item]


# --- Dotted keys and child modules -------------------------------------------------------


def _recording_list(seen: list[InvocationContext], value: str) -> Any:
    async def list_repos(input: object, ctx: InvocationContext) -> str:
        seen.append(ctx)
        return value

    return operation(execute=list_repos)


@pytest.mark.parametrize("form", ["dotted-key", "child-module"])
async def test_dotted_operation_key_is_called_exactly_like_a_child_module(form: str) -> None:
    seen: list[InvocationContext] = []
    list_op = _recording_list(seen, "repos")
    if form == "dotted-key":
        gh = Module(id="github", name="gh", operations={"repos.list": list_op})
    else:
        repos = Module(id="github-repos", name="repositories", operations={"list": list_op})
        gh = Module(id="github", name="gh", operations={"repos": repos})

    async def program(bindings: Any, signal: object) -> list[Any]:
        return [await bindings.gh.repos.list(), await bindings.env.gh.repos.list()]

    async with Runtime(modules=[gh], sandbox=direct_sandbox(program)) as runtime, runtime.lease() as lease:
        assert [entry.path for entry in lease.catalog.list()] == ["gh.repos.list"]
        result = await lease.execute_tool.run("return [await gh.repos.list(), await env.gh.repos.list()]")

    assert not result.is_error, result.text
    assert result.value == ["repos", "repos"]
    assert [(ctx.module_id, ctx.operation) for ctx in seen] == [("github", "repos.list")] * 2


def test_dotted_key_and_child_module_install_to_the_same_paths() -> None:
    dotted = Module(id="github", name="gh", operations={"repos.list": _op(), "repos.get": _op()})
    nested = Module(
        id="github",
        name="gh",
        operations={"repos": Module(id="github-repos", name="repos", operations={"list": _op(), "get": _op()})},
    )
    dotted_graph = build_graph([dotted], revision=1)
    nested_graph = build_graph([nested], revision=1)
    assert _paths(dotted_graph) == _paths(nested_graph) == ["gh.repos.get", "gh.repos.list"]
    assert [t.relative for t in dotted_graph.operations()] == [t.relative for t in nested_graph.operations()]


def test_child_module_namespace_adds_segments_after_its_registration_key() -> None:
    child = Module(id="child", name="ignored_name", namespace=["v1", "admin"], operations={"reset": _op()})
    parent = Module(id="parent", name="svc", operations={"tools": child, "ping": _op()})
    graph = build_graph([parent], revision=1)
    assert _paths(graph) == ["svc.ping", "svc.tools.v1.admin.reset"]
    installed = graph.module("parent")
    assert installed is not None
    assert sorted(installed.operations) == ["ping", "tools.v1.admin.reset"]
    # The child's name is not part of the path; only its key and its namespace are.
    assert graph.module("child") is None


def test_child_module_namespace_applies_at_every_nesting_level() -> None:
    leaf = Module(id="leaf", name="leaf", namespace=["deep"], operations={"go": _op()})
    middle = Module(id="middle", name="middle", namespace=["mid"], operations={"inner": leaf})
    root = Module(id="root", name="root", operations={"outer.x": middle})
    assert _paths(build_graph([root], revision=1)) == ["root.outer.x.mid.inner.deep.go"]


# --- What installation refuses --------------------------------------------------------------


def _prefix_conflict_direct() -> Module:
    return Module(id="conflict-direct", name="store", operations={"files": _op(), "files.read": _op()})


def _prefix_conflict_via_child() -> Module:
    files = Module(id="files-child", name="files", operations={"read": _op()})
    return Module(id="conflict-child", name="store", operations={"files": files, "files_op": _op(), "x": _op()})


def _prefix_conflict_child_key_under_operation() -> Module:
    child = Module(id="inner-child", name="inner", operations={"files.read": _op()})
    return Module(id="conflict-nested", name="store", operations={"a.files": _op(), "a": child})


def _prefix_conflict_child_namespace() -> Module:
    child = Module(id="ns-child", name="inner", namespace=["files"], operations={"read": _op()})
    return Module(id="conflict-namespace", name="store", operations={"x.files": _op(), "x": child})


@pytest.mark.parametrize(
    ("build", "culprit_id", "culprit_path"),
    [
        (_prefix_conflict_direct, "conflict-direct", "files"),
        (_prefix_conflict_child_key_under_operation, "conflict-nested", "a.files"),
        (_prefix_conflict_child_namespace, "conflict-namespace", "x.files"),
    ],
    ids=["dotted-keys", "child-module-key", "child-module-namespace"],
)
def test_installation_refuses_a_path_that_is_both_an_operation_and_a_namespace_prefix(
    install: Installer, build: Callable[[], Module], culprit_id: str, culprit_path: str
) -> None:
    with pytest.raises(DefinitionError) as caught:
        install([Module(id="bystander", name="ok", operations={"ping": _op()}), build()])
    message = str(caught.value)
    assert culprit_id in message
    assert culprit_path in message


def test_installation_accepts_child_module_keys_that_only_share_a_text_prefix(install: Installer) -> None:
    # "files" (a child namespace) and "files_op" are different segments: no conflict.
    install([_prefix_conflict_via_child()])


@pytest.mark.parametrize("key", ["bad-key", "a..b", "1x", "class", "repos.class", ".lead", "trail.", "", "a b"])
def test_installation_refuses_a_key_segment_that_is_not_an_identifier(install: Installer, key: str) -> None:
    module = Module(id="bad-keys", name="demo", operations={"ok": _op(), key: _op()})
    with pytest.raises(DefinitionError) as caught:
        install([module])
    assert "bad-keys" in str(caught.value)
    assert repr(key) in str(caught.value)


def test_installation_refuses_a_bad_key_segment_inside_a_child_module(install: Installer) -> None:
    child = Module(id="child-mod", name="child", operations={"bad-key": _op()})
    parent = Module(id="parent-mod", name="parent", operations={"child": child})
    with pytest.raises(DefinitionError) as caught:
        install([parent])
    assert "parent-mod" in str(caught.value)
    assert "bad-key" in str(caught.value)


def test_installation_refuses_the_same_path_registered_twice(install: Installer) -> None:
    repos = Module(id="gh-repos", name="repos", operations={"list": _op()})
    gh = Module(id="github", name="gh", operations={"repos.list": _op(), "repos": repos})
    with pytest.raises(DefinitionError) as caught:
        install([gh])
    assert "github" in str(caught.value)
    assert "repos.list" in str(caught.value)


def test_installation_refuses_duplicate_module_ids(install: Installer) -> None:
    first = Module(id="same-id", name="first", operations={"ping": _op()})
    second = Module(id="same-id", name="second", operations={"pong": _op()})
    with pytest.raises(DefinitionError, match=re.escape("same-id")):
        install([first, second])


def test_installation_accepts_1000_modules(install: Installer) -> None:
    modules = [Module(id=f"mod-{index:04d}", name=f"m{index}", operations={"ping": _op()}) for index in range(1_000)]
    install(modules)


def test_installation_refuses_more_than_1000_modules(install: Installer) -> None:
    modules = [Module(id=f"mod-{index:04d}", name=f"m{index}", operations={"ping": _op()}) for index in range(1_001)]
    with pytest.raises(DefinitionError, match=r"1001|1,001|1000|1,000"):
        install(modules)


def test_installation_refuses_a_module_that_contains_itself(install: Installer) -> None:
    loop = Module(id="loop-mod", name="loop", operations={"ping": _op()})
    loop.add("again", loop)
    with pytest.raises(DefinitionError, match="loop-mod"):
        install([loop])


def test_installation_refuses_a_module_that_contains_itself_through_a_child(install: Installer) -> None:
    outer = Module(id="outer-mod", name="outer", operations={"ping": _op()})
    inner = Module(id="inner-mod", name="inner", operations={"back": outer})
    outer.add("inner", inner)
    with pytest.raises(DefinitionError, match="outer-mod"):
        install([outer])


def test_installation_accepts_the_same_child_module_under_two_keys(install: Installer) -> None:
    # Sharing is not containment: a child reused in two places is not a cycle.
    shared = Module(id="shared", name="shared", operations={"ping": _op()})
    parent = Module(id="parent", name="parent", operations={"left": shared, "right": shared})
    install([parent])
    assert _paths(build_graph([parent], revision=1)) == ["parent.left.ping", "parent.right.ping"]


def test_installation_is_all_or_nothing_naming_the_broken_module_among_good_ones(install: Installer) -> None:
    good = [Module(id=f"good-{index}", name=f"good{index}", operations={"ping": _op()}) for index in range(3)]
    broken = Module(id="broken-one", name="broken", operations={"bad-key": _op()})
    with pytest.raises(DefinitionError) as caught:
        install([*good[:2], broken, good[2]])
    assert "broken-one" in str(caught.value)
    assert "good-" not in str(caught.value)


def test_module_name_must_be_in_the_form_a_guest_can_type() -> None:
    # Python normalises identifiers (NFKC): a guest typing "ﬁle" reaches "file".
    with pytest.raises(DefinitionError):
        Module(id="ligature", name="\ufb01le")
