"""Tool names map one to one to guest paths, whatever their order; hostile names are handled, originals shown."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from mycelium import Module, operation
from mycelium._graph import build_graph
from mycelium._modules import is_identifier
from mycelium.mcp._upstream import MAX_SEGMENT_CHARS, tool_paths
from mycelium.sandbox.monty import MontySandbox

from .conftest import runtime, upstream
from .servers import HOSTILE_NAMES

LANGUAGE = MontySandbox.language


def installable(paths: dict[str, tuple[str, ...]]) -> None:
    """The paths install as one module under a plain name: every segment is legal, nothing clashes."""
    module = Module(
        id="up", name="up", operations={".".join(p): operation(execute=lambda: None) for p in paths.values()}
    )
    build_graph([module], revision=1)


def test_distinct_names_that_normalise_alike_get_distinct_paths_and_the_exact_name_keeps_its_own() -> None:
    paths = tool_paths(["list-issues", "list_issues"], LANGUAGE)
    assert paths["list_issues"] == ("list_issues",)
    suffix = hashlib.sha256(b"list-issues").hexdigest()[:8]
    assert paths["list-issues"] == (f"list_issues_{suffix}",)


def test_dotted_and_slashed_names_become_nested_namespaces() -> None:
    assert tool_paths(["repos.list", "files/read/all"], LANGUAGE) == {
        "repos.list": ("repos", "list"),
        "files/read/all": ("files", "read", "all"),
    }


def test_an_operation_that_is_also_a_namespace_moves_aside() -> None:
    paths = tool_paths(["issues", "issues.list"], LANGUAGE)
    assert paths["issues.list"] == ("issues", "list")
    assert paths["issues"][0].startswith("issues_")


def test_hostile_names_all_get_legal_distinct_paths() -> None:
    paths = tool_paths(HOSTILE_NAMES, LANGUAGE)
    assert len(set(paths.values())) == len(HOSTILE_NAMES)
    for path in paths.values():
        assert all(is_identifier(segment) and segment.isascii() for segment in path)
        assert all(len(segment) <= MAX_SEGMENT_CHARS for segment in path)
    assert paths["class"] == ("class_",)  # a keyword cannot be typed as an attribute
    assert paths["print"] == ("print",)  # below the module, a builtin's name is fine
    assert paths["os.path.join"][0] == "os_"  # a namespace named like a sandbox module cannot be built
    assert paths["résumé"] == ("resume",)
    installable(paths)


def test_a_name_made_to_equal_another_ones_suffixed_path_is_still_kept_apart() -> None:
    suffix = hashlib.sha256(b"list-issues").hexdigest()[:8]
    names = ["list-issues", "list_issues", f"list_issues_{suffix}"]
    paths = tool_paths(names, LANGUAGE)
    assert len(set(paths.values())) == 3
    assert paths[f"list_issues_{suffix}"] == (f"list_issues_{suffix}",)


@given(st.permutations(HOSTILE_NAMES))
def test_paths_do_not_depend_on_the_order_tools_are_listed_in(names: list[str]) -> None:
    assert tool_paths(names, LANGUAGE) == tool_paths(HOSTILE_NAMES, LANGUAGE)


@given(st.lists(st.text(max_size=30), unique=True, max_size=25))
def test_any_set_of_distinct_names_maps_one_to_one_to_installable_paths(names: list[str]) -> None:
    paths = tool_paths(names, LANGUAGE)
    assert len(set(paths.values())) == len(names)
    if names:
        installable(paths)


async def test_a_program_calls_every_hostile_tool_and_describe_shows_the_original_name() -> None:
    paths = tool_paths(HOSTILE_NAMES, LANGUAGE)
    calls = ", ".join(f"await up.{'.'.join(path)}()" for path in paths.values())
    async with upstream("http", "names") as (source, _), runtime(source) as rt, rt.lease() as lease:
        called = await lease.execute_tool.run(f"return [{calls}]")
        described = await lease.execute_tool.run(f"return await forage.describe('up.{'.'.join(paths['list-issues'])}')")
        plain = await lease.execute_tool.run("return await forage.describe('up.list_issues')")
    assert called.value == list(HOSTILE_NAMES)
    assert "(MCP tool 'list-issues')" in str(described.value)
    assert "MCP tool" not in str(plain.value)
