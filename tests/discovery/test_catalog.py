"""Discovery: the catalog (search, list, describe), ``forage`` in a guest, and the execute tool's description.

Each test is named after one rule of the discovery issue. Catalogs are built straight
from a graph (``Catalog(build_graph(...))``) or through a real ``Runtime``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio
import pytest

from mycelium import Access, InvocationContext, Module, Runtime, operation
from mycelium._discovery import (
    MAX_DESCRIBE_CHARS,
    MAX_LIST_ENTRIES,
    MAX_PATH_CHARS,
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    Catalog,
    forage_bindings,
)
from mycelium._execute import execute_description
from mycelium._graph import build_graph
from mycelium._signals import AbortSignal
from mycelium.sandbox._namespaces import GuestNamespace
from mycelium.sandbox.monty import MontySandbox
from mycelium.testing import direct_sandbox

# --- A small, realistic catalog -------------------------------------------------------------


def _op(
    input: Any = None,
    *,
    description: str | None = None,
    access: Literal["read", "write"] = "read",
    confirm: bool = False,
) -> Any:
    return operation(input=input, execute=lambda: None, description=description, access=access, confirm=confirm)


def obj(required: tuple[str, ...] = (), **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


TEXT = {"type": "string"}


def described(text: str, kind: str = "string") -> dict[str, Any]:
    return {"type": kind, "description": text}


def app_modules() -> list[Module]:
    return [
        Module(
            id="keep-notes",
            name="keep",
            operations={
                "note.create": _op(
                    obj(("title",), title=TEXT, body=TEXT), description="Create a note with a title.", access="write"
                ),
                "note.find": _op(obj(("query",), query=TEXT), description="Find a note by words it contains."),
                "note.remove": _op(
                    obj(("note_id",), note_id=TEXT), description="Remove a note for good.", access="write", confirm=True
                ),
            },
        ),
        Module(
            id="calendar",
            name="calendar",
            operations={
                "events.create": _op(
                    obj(
                        ("title", "start"),
                        title=TEXT,
                        start=described("When it begins, ISO 8601."),
                        attendees={"type": "array", "items": TEXT},
                        zone=described("IANA timezone of the start time."),
                    ),
                    description="Add an event to the calendar.",
                    access="write",
                ),
                "events.list": _op(obj(("day",), day=TEXT), description="List the events of one day."),
                "schedule": _op(
                    obj(("who",), who=TEXT), description="Schedule a meeting with someone.", access="write"
                ),
            },
        ),
        Module(
            id="files",
            name="files",
            operations={
                "read": _op(obj(("path",), path=TEXT), description="Read a file's text."),
                "write": _op(
                    obj(("path", "content"), path=TEXT, content=TEXT),
                    description="Write text to a file, replacing it.",
                    access="write",
                ),
                "delete": _op(obj(("path",), path=TEXT), description="Delete a file.", access="write", confirm=True),
            },
        ),
        Module(
            id="mail",
            name="mail",
            operations={
                "send": _op(
                    obj(
                        ("recipient", "subject"),
                        recipient=described("The address it goes to."),
                        subject=TEXT,
                        body=TEXT,
                    ),
                    description="Send an email message.",
                    access="write",
                ),
                "inbox": _op(obj(unread=described("Only unread ones.", "boolean")), description="The newest mail."),
            },
        ),
        Module(
            id="bazaar-app",
            name="bazaar",
            namespace=["apps"],
            operations={
                "windows.open": _op(obj(("url",), url=TEXT), description="Open a window on a URL.", access="write"),
                "windows.close": _op(
                    obj(("window_id",), window_id=TEXT), description="Close a window.", access="write"
                ),
                "windows.list": _op(description="The windows shown now."),
            },
        ),
        Module(
            id="github",
            name="gh",
            operations={
                "repos.list": _op(obj(("owner",), owner=TEXT), description="List the repositories of an owner."),
                "issues.create": _op(
                    obj(("repo", "title"), repo=TEXT, title=TEXT),
                    description="Open an issue in a repository.",
                    access="write",
                ),
            },
        ),
    ]


def catalog_of(modules: list[Module]) -> Catalog:
    return Catalog(build_graph(modules, revision=1))


@pytest.fixture(scope="module")
def apps() -> Catalog:
    return catalog_of(app_modules())


def paths(entries: list[Any]) -> list[str]:
    return [entry.path for entry in entries]


def wide_module(count: int, *, name: str = "bulk", description: str = "Handle item {i}.") -> Module:
    return Module(
        id=name, name=name, operations={f"op_{i:05d}": _op(description=description.format(i=i)) for i in range(count)}
    )


# --- Search ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("send an email message", "mail.send"),
        ("text of a file", "files.read"),
        ("repositories of someone", "gh.repos.list"),
    ],
)
def test_search_finds_an_operation_by_words_of_its_description(apps: Catalog, query: str, expected: str) -> None:
    assert expected in paths(apps.search(query))[:3]


def test_search_finds_operations_by_their_path_segments(apps: Catalog) -> None:
    found = paths(apps.search("bazaar windows"))
    assert set(found[:3]) == {"apps.bazaar.windows.open", "apps.bazaar.windows.close", "apps.bazaar.windows.list"}
    assert paths(apps.search("gh issues"))[0] == "gh.issues.create"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("attendees", "calendar.events.create"),  # a field name only
        ("timezone", "calendar.events.create"),  # a field description only
        ("recipient", "mail.send"),
        ("unread", "mail.inbox"),
    ],
)
def test_search_finds_an_operation_by_its_input_field_names_and_descriptions(
    apps: Catalog, query: str, expected: str
) -> None:
    assert paths(apps.search(query))[0] == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("notes", {"keep.note.create", "keep.note.find", "keep.note.remove"}),
        ("files", {"files.read", "files.write", "files.delete"}),
        ("meetings", {"calendar.schedule"}),  # the description says "a meeting"
        ("repository", {"gh.repos.list"}),  # the description says "repositories"
        ("opening a window", {"apps.bazaar.windows.open"}),
        ("closing a window", {"apps.bazaar.windows.close"}),
        ("deleting a file", {"files.delete"}),
        ("scheduling", {"calendar.schedule"}),
    ],
)
def test_search_matches_plural_singular_and_ing_forms(apps: Catalog, query: str, expected: set[str]) -> None:
    found = paths(apps.search(query))
    assert set(found[: len(expected)]) == expected, found


def test_search_ranks_an_exact_path_or_exact_operation_name_first() -> None:
    catalog = catalog_of(
        [
            Module(
                id="loud",
                name="loud",
                operations={
                    "lookup": _op(
                        obj(search=described("What to search for, searched by search.")),
                        description="Search, search and search again: the search of all searches.",
                    )
                },
            ),
            Module(id="quiet", name="quiet", operations={"search": _op(description="Look things up.")}),
            Module(
                id="deep", name="deep", namespace=["apps"], operations={"tabs.pin": _op(description="Pin pin pin.")}
            ),
            Module(id="pins", name="pins", operations={"pin": _op(description="Pin a tab, pin a pin, pin it.")}),
        ]
    )
    assert paths(catalog.search("search"))[0] == "quiet.search"  # an exact operation name
    assert paths(catalog.search("quiet.search"))[0] == "quiet.search"  # an exact path
    assert paths(catalog.search("  loud.lookup "))[0] == "loud.lookup"
    assert paths(catalog.search("apps.deep.tabs.pin"))[0] == "apps.deep.tabs.pin"
    assert paths(catalog.search("tabs.pin"))[0] == "apps.deep.tabs.pin"


def test_search_results_are_bounded_default_8_up_to_50_and_other_limits_are_refused() -> None:
    catalog = catalog_of([wide_module(60)])
    assert len(catalog.search("item")) == 8
    assert len(catalog.search("item", limit=50)) == 50
    assert len(catalog.search("item", 1)) == 1
    for bad in (0, 51, -1, True, 8.0, "8", None):
        with pytest.raises(ValueError, match="limit"):
            catalog.search("item", bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_search_with_an_empty_query_returns_nothing(apps: Catalog, query: str) -> None:
    assert apps.search(query) == []


@pytest.mark.parametrize("query", [None, 5, b"notes", [5], {"query": "notes"}])
def test_search_with_a_query_that_is_not_a_string_raises_type_error(apps: Catalog, query: object) -> None:
    with pytest.raises(TypeError):
        apps.search(query)  # type: ignore[arg-type]


# --- List and describe ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("keep", ["keep.note.create", "keep.note.find", "keep.note.remove"]),
        ("keep.note", ["keep.note.create", "keep.note.find", "keep.note.remove"]),
        ("kee", []),
        ("keep.not", []),
        ("calendar.events", ["calendar.events.create", "calendar.events.list"]),
        ("calendar.event", []),
        ("apps", ["apps.bazaar.windows.close", "apps.bazaar.windows.list", "apps.bazaar.windows.open"]),
        ("apps.bazaar.windows.open", ["apps.bazaar.windows.open"]),
        ("apps.bazaar.windows.open.x", []),
    ],
)
def test_list_prefix_uses_whole_segments(apps: Catalog, prefix: str, expected: list[str]) -> None:
    assert paths(apps.list(prefix)) == expected
    assert len(apps.list()) == len(apps) == 16


def test_list_entries_are_short_path_description_access_and_confirm(apps: Catalog) -> None:
    (entry,) = apps.list("files.delete")
    assert entry.to_json() == {
        "path": "files.delete",
        "description": "Delete a file.",
        "access": "write",
        "confirm": True,
    }


@pytest.mark.parametrize(
    ("prefix", "inside"),
    [
        ("apps.bazaar", ["apps.bazaar.windows.close", "apps.bazaar.windows.list", "apps.bazaar.windows.open"]),
        ("apps", ["apps.bazaar.windows.close", "apps.bazaar.windows.list", "apps.bazaar.windows.open"]),
        ("calendar", ["calendar.events.create", "calendar.events.list", "calendar.schedule"]),
        ("calendar.events", ["calendar.events.create", "calendar.events.list"]),
    ],
)
def test_describe_of_a_module_or_namespace_prefix_describes_every_operation_under_it(
    apps: Catalog, prefix: str, inside: list[str]
) -> None:
    text = apps.describe(prefix)
    described = re.findall(r"^# ([\w.]+)\nasync def ", text, re.MULTILINE)
    assert described == inside
    for path in inside:
        assert f"async def {path.rsplit('.', 1)[-1]}(" in text


def test_describe_of_an_unknown_path_says_so_and_suggests_close_matches(apps: Catalog) -> None:
    text = apps.describe("calendar.events.crate")
    assert "'calendar.events.crate'" in text
    assert re.search(r"\bno\b", text, re.IGNORECASE)
    assert "calendar.events.create" in text
    assert "async def" not in text
    near = apps.describe("windows.opn")
    assert "apps.bazaar.windows.open" in near
    assert "async def" not in near


def test_describe_of_an_unknown_path_is_bounded_too(apps: Catalog) -> None:
    text = apps.describe("no.such." + "x" * (MAX_PATH_CHARS - 8))
    assert len(text) <= MAX_DESCRIBE_CHARS, f"the answer for an unknown path is {len(text)} characters"


def test_describe_output_is_bounded_and_counts_the_operations_not_shown() -> None:
    catalog = catalog_of([wide_module(2_000, description="Handle item {i} with care; it is fragile and old.")])
    text = catalog.describe("")
    assert len(text) <= 8_000
    shown = len(re.findall(r"^async def ", text, re.MULTILINE))
    last = text.rstrip("\n").splitlines()[-1]
    more = re.search(r"(\d+) more operations", last)
    assert more, last
    assert 0 < shown < 2_000
    assert shown + int(more.group(1)) == 2_000
    # The same under a module prefix.
    under = catalog.describe("bulk")
    assert len(under) <= 8_000
    assert re.search(r"\d+ more operations", under.rstrip("\n").splitlines()[-1])


def _huge_schema() -> dict[str, Any]:
    """An input of 200 documented object fields: about 50,000 characters of stub."""
    properties: dict[str, Any] = {
        f"field_{i}": {
            "type": "object",
            "title": f"Part{i}",
            "description": "d" * 100,
            "properties": {"value": described("v" * 100)},
        }
        for i in range(200)
    }
    return obj(**properties)


def test_a_single_huge_schema_is_cut_with_a_marker_never_unbounded() -> None:
    catalog = catalog_of([Module(id="m", name="m", operations={"huge": _op(_huge_schema())})])
    assert len(catalog.stubs()) > 40_000
    text = catalog.describe("m.huge")
    assert len(text) <= MAX_DESCRIBE_CHARS
    assert text.rstrip("\n").splitlines()[-1].startswith("# ...")
    assert len(catalog.describe("m")) <= MAX_DESCRIBE_CHARS


@pytest.mark.parametrize(
    "names", [pytest.param(("a_small", "b_huge"), id="huge-last"), pytest.param(("a_huge", "b_small"), id="huge-first")]
)
def test_describe_stays_bounded_when_a_huge_schema_sits_beside_other_operations(names: tuple[str, str]) -> None:
    operations = {name: _op(_huge_schema()) if "huge" in name else _op() for name in names}
    catalog = catalog_of([Module(id="m", name="m", operations=operations)])
    text = catalog.describe("m")
    assert len(text) <= MAX_DESCRIBE_CHARS, f"describe('m') is {len(text)} characters"


# --- forage inside a sandbox ----------------------------------------------------------------


GuestFn = Callable[[GuestNamespace, AbortSignal], Awaitable[Any]]


async def run_direct(fn: GuestFn, modules: list[Module] | None = None, access: Access | None = None) -> Any:
    """The value the direct sandbox's ``fn`` returned through a real execute (failing the test on an error)."""
    async with (
        Runtime(
            modules=modules if modules is not None else app_modules(), sandbox=direct_sandbox(fn), access=access
        ) as runtime,
        runtime.lease() as lease,
    ):
        result = await lease.execute_tool.run("(ignored by the direct sandbox)", tool_call_id="call-1")
    assert not result.is_error, result.text
    return result.value


async def test_forage_search_list_and_describe_return_json_inside_a_sandbox(apps: Catalog) -> None:
    async def guest(bindings: GuestNamespace, signal: AbortSignal) -> Any:
        forage: Any = bindings.forage
        return {
            "search": await forage.search("send an email"),
            "apps": await forage.list("apps"),
            "all": await forage.list(),
            "describe": await forage.describe("files.delete"),
        }

    value = await run_direct(guest)
    assert isinstance(value, dict)
    assert value["search"][0] == {
        "path": "mail.send",
        "description": "Send an email message.",
        "access": "write",
        "confirm": False,
    }
    assert value["apps"] == [entry.to_json() for entry in apps.list("apps")]
    assert value["all"] == [entry.to_json() for entry in apps.list()]
    assert value["describe"] == apps.describe("files.delete")
    assert "async def delete(*, path: str) -> Any:" in value["describe"]


async def test_forage_accepts_keyword_and_mapping_forms() -> None:
    async def guest(bindings: GuestNamespace, signal: AbortSignal) -> Any:
        forage: Any = bindings.forage
        return [
            await forage.search(query="window", limit=3),
            await forage.search({"query": "window", "limit": 2}),
            await forage.search(query="window"),
            await forage.list(prefix="gh"),
            await forage.describe(path="gh.repos.list"),
        ]

    value = await run_direct(guest)
    assert isinstance(value, list)
    assert len(value[0]) == 3
    assert len(value[1]) == 2
    assert len(value[2]) == 3
    assert all("window" in entry["path"] for entry in value[0])
    assert [entry["path"] for entry in value[3]] == ["gh.issues.create", "gh.repos.list"]
    assert "async def list(*, owner: str) -> Any:" in value[4]


async def test_forage_calls_consume_no_operation_ordinals() -> None:
    seen: list[int | None] = []
    tally = Module(id="tally", name="tally")

    @tally.operation(access="read")
    def count(ctx: InvocationContext) -> int:
        seen.append(ctx.operation_ordinal)
        return len(seen)

    async def guest(bindings: GuestNamespace, signal: AbortSignal) -> Any:
        forage: Any = bindings.forage
        await forage.search("count")
        await forage.list()
        await forage.describe("tally.count")
        first = await bindings.tally.count()  # type: ignore[union-attr,operator]
        await forage.search(query="tally")
        second = await bindings.tally.count()  # type: ignore[union-attr,operator]
        return [first, second]

    assert await run_direct(guest, [tally]) == [1, 2]
    assert seen == [0, 1]


async def test_forage_needs_no_grant_and_shows_the_labels() -> None:
    async def guest(bindings: GuestNamespace, signal: AbortSignal) -> Any:
        forage: Any = bindings.forage
        return {
            "listed": await forage.list("files"),
            "found": await forage.search(query="delete a file", limit=1),
            "described": await forage.describe("files.delete"),
            "called": await bindings.files.delete(path="/tmp/x"),  # type: ignore[union-attr,operator]
        }

    value = await run_direct(guest, access=Access(grants={"files": "none"}))
    assert isinstance(value, dict)
    assert value["called"]["refused"] is True  # the grant is real: the operation itself is refused
    assert {"path": "files.delete", "description": "Delete a file.", "access": "write", "confirm": True} in value[
        "listed"
    ]
    assert [entry["path"] for entry in value["listed"]] == ["files.delete", "files.read", "files.write"]
    assert value["found"][0]["path"] == "files.delete"
    assert "Access: write; a person confirms each call." in value["described"]


_BAD_CALLS: list[tuple[str, Callable[[Any], Any]]] = [
    ("search(5)", lambda f: f.search(5)),
    ("search(None)", lambda f: f.search(None)),
    ("search()", lambda f: f.search()),
    ("search(limit=3)", lambda f: f.search(limit=3)),
    ("search(query=1)", lambda f: f.search(query=1)),
    ("search(query='x', limit='3')", lambda f: f.search(query="x", limit="3")),
    ("search(query='x', limit=True)", lambda f: f.search(query="x", limit=True)),
    ("search(query='x', extra=1)", lambda f: f.search(query="x", extra=1)),
    ("list(5)", lambda f: f.list(5)),
    ("list(prefix=None)", lambda f: f.list(prefix=None)),
    ("list(depth=2)", lambda f: f.list(depth=2)),
    ("describe()", lambda f: f.describe()),
    ("describe(3)", lambda f: f.describe(3)),
    ("describe(['files'])", lambda f: f.describe(["files"])),
    ("describe(where='files')", lambda f: f.describe(where="files")),
]


async def test_forage_bad_arguments_raise_type_error() -> None:
    async def guest(bindings: GuestNamespace, signal: AbortSignal) -> Any:
        forage: Any = bindings.forage
        outcomes: dict[str, str] = {}
        for label, call in _BAD_CALLS:
            try:
                await call(forage)
            except TypeError:
                outcomes[label] = "TypeError"
            except Exception as exc:
                outcomes[label] = type(exc).__name__
            else:
                outcomes[label] = "no error"
        return outcomes

    value = await run_direct(guest)
    assert value == {label: "TypeError" for label, _ in _BAD_CALLS}


async def test_forage_search_out_of_range_limits_raise_value_error() -> None:
    async def guest(bindings: GuestNamespace, signal: AbortSignal) -> Any:
        forage: Any = bindings.forage
        outcomes: list[object] = []
        for limit in (0, 51, -1):
            try:
                await forage.search(query="x", limit=limit)
            except ValueError:
                outcomes.append("ValueError")
        outcomes.append(len(await forage.search(query="window", limit=50)))
        return outcomes

    assert await run_direct(guest) == ["ValueError", "ValueError", "ValueError", 3]


async def test_forage_list_over_200_operations_returns_200_entries_then_a_more_element() -> None:
    modules = [wide_module(250), wide_module(3, name="small")]

    async def guest(bindings: GuestNamespace, signal: AbortSignal) -> Any:
        forage: Any = bindings.forage
        return {"all": await forage.list(), "bulk": await forage.list("bulk"), "small": await forage.list("small")}

    value = await run_direct(guest, modules)
    assert isinstance(value, dict)
    everything = value["all"]
    assert len(everything) == MAX_LIST_ENTRIES + 1 == 201
    assert all(set(entry) == {"path", "description", "access", "confirm"} for entry in everything[:200])
    assert everything[-1]["more"] == 53
    assert isinstance(everything[-1]["hint"], str)
    assert everything[-1]["hint"]
    assert set(everything[-1]) == {"more", "hint"}
    assert value["bulk"][-1]["more"] == 50
    assert len(value["bulk"]) == 201
    assert [entry["path"] for entry in value["small"]] == ["small.op_00000", "small.op_00001", "small.op_00002"]


async def test_forage_search_runs_in_the_real_monty_sandbox() -> None:
    async with Runtime(modules=app_modules(), sandbox=MontySandbox()) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run('return await forage.search("open a window on a url")')
    assert not result.is_error, result.text
    assert isinstance(result.value, list)
    assert result.value[0] == {
        "path": "apps.bazaar.windows.open",
        "description": "Open a window on a URL.",
        "access": "write",
        "confirm": False,
    }


# --- One catalog per revision ---------------------------------------------------------------


async def test_the_catalog_is_built_once_per_revision() -> None:
    async with Runtime(modules=app_modules(), sandbox=direct_sandbox(lambda b, s: None)) as runtime:
        async with runtime.lease() as lease, runtime.lease() as lease2:
            assert lease.revision == lease2.revision
            assert lease.catalog is lease2.catalog
            first = lease.catalog
        async with runtime.lease() as later:
            assert later.catalog is first
        assert paths(first.list()) == paths(catalog_of(app_modules()).list())


# --- The execute tool's description ---------------------------------------------------------


def test_a_small_catalog_is_declared_in_full_in_the_execute_description(apps: Catalog) -> None:
    small = catalog_of(app_modules()[:3])
    assert len(small.stubs()) <= 4_096
    description = execute_description(small, MontySandbox.language)
    for target in small.targets:
        assert f"# {target.path}\nasync def {target.relative.rsplit('.', 1)[-1]}(" in description
    assert small.stubs() in description
    assert len(description) <= 8_192


def test_a_larger_catalog_shows_the_namespace_tree_with_counts_and_points_to_forage_search() -> None:
    modules = [
        *app_modules(),
        wide_module(40, name="bulk", description="Handle item {i}; " + "it is long. " * 8),
        Module(id="deep-two", name="shop", namespace=["apps"], operations={"cart.add": _op(), "cart.clear": _op()}),
    ]
    catalog = catalog_of(modules)
    assert len(catalog.stubs()) > 4_096
    description = execute_description(catalog, MontySandbox.language)
    assert len(description) <= 8_192
    assert "async def" not in description
    assert "forage.search" in description
    lines = description.splitlines()
    for line in ("apps (5 operations)", "  bazaar (3 operations)", "  shop (2 operations)", "bulk (40 operations)"):
        assert line in lines, description
    assert "gh (2 operations)" in lines
    assert "keep (3 operations)" in lines


def test_the_execute_description_is_bounded_even_for_10000_operations() -> None:
    # Operations are immutable and may sit in many modules: ten shared ones keep this test fast.
    shared = {
        f"{group}.{verb}": _op(
            obj(("target",), target=described(f"What to {verb}.")), description=f"{verb.capitalize()} the {group}."
        )
        for group in ("records", "settings")
        for verb in ("list", "get", "create", "update", "delete")
    }
    modules = [
        Module(
            id=f"vendor-{i:04d}",
            name=f"app_{i:04d}",
            namespace=["apps", f"suite_{i % 7}"] if i % 3 else [],
            description=f"Application number {i}.",
            operations=shared,
        )
        for i in range(1_000)
    ]
    catalog = catalog_of(modules)
    assert len(catalog) == 10_000
    description = execute_description(catalog, MontySandbox.language)
    assert len(description) <= 8_192
    assert "forage.search" in description
    assert len(catalog.describe("")) <= MAX_DESCRIBE_CHARS


def test_the_execute_description_states_the_language_rules(apps: Catalog) -> None:
    for catalog in (apps, catalog_of([wide_module(300)])):
        description = execute_description(catalog, MontySandbox.language)
        assert "await" in description
        assert "return" in description
        assert "JSON" in description
        assert "asyncio.gather" in description
        assert re.search(r"(no|missing)[^.]*\bimports?\b", description, re.IGNORECASE | re.DOTALL), description
        assert "forage.search" in description
        assert "forage.describe" in description


def test_search_finds_an_operation_by_what_it_returns() -> None:
    from pydantic import BaseModel, Field

    class FileInfo(BaseModel):
        size_bytes: int = Field(description="How big the file is.")
        modified: str = Field(description="When the file last changed.")

    files = Module(
        id="files",
        name="files",
        operations={
            "stat": operation(output=list[FileInfo], execute=lambda: [], description="Look a file up."),
            "read": operation(execute=lambda: "", description="Read a file's text."),
        },
    )
    catalog = Catalog(build_graph([files], revision=1))
    assert catalog.search("how big is the file and when was it modified", 1)[0].path == "files.stat"


async def test_forage_takes_its_main_argument_positionally_beside_keywords() -> None:
    notes = Module(
        id="notes",
        name="notes",
        operations={f"op_{i}": operation(execute=lambda: 1, description="Find notes.") for i in range(5)},
    )

    async def discover(bindings: GuestNamespace, signal: AbortSignal) -> object:
        found = await bindings.forage.search("notes", limit=2)
        listed = await bindings.forage.list("notes")
        with pytest.raises(TypeError, match="twice"):
            bindings.forage.search("notes", query="again")
        return [len(found), len(listed)]

    async with Runtime(modules=[notes], sandbox=direct_sandbox(discover)) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run("...")
    assert result.value == [2, 5]


# --- Bounded arguments and bounded work (hardening) -----------------------------------------


def test_a_search_query_longer_than_the_limit_is_refused_with_the_limit_named(apps: Catalog) -> None:
    for query in ("x" * (MAX_QUERY_CHARS + 1), "ab " * 10_000_000):
        with pytest.raises(ValueError, match=rf"the limit is {MAX_QUERY_CHARS}") as raised:
            apps.search(query)
        assert len(str(raised.value)) < 200, "the refusal echoes the query"
    assert apps.search("a" * MAX_QUERY_CHARS) == []  # at the limit it is an ordinary (fruitless) search


def test_a_search_query_with_more_distinct_words_than_the_limit_is_refused(apps: Catalog) -> None:
    nato = "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa"
    words = f"{nato} quebec romeo sierra tango uniform victor whiskey xray yankee zulu".split()[: MAX_QUERY_WORDS + 1]
    assert len(words) == MAX_QUERY_WORDS + 1
    with pytest.raises(ValueError, match=rf"{MAX_QUERY_WORDS + 1} distinct words; the limit is {MAX_QUERY_WORDS}"):
        apps.search(" ".join(words))
    assert apps.search(" ".join(words[:MAX_QUERY_WORDS])) == []
    # Repeated words and stopwords are not distinct words.
    assert paths(apps.search("send " * 60 + "the a of an email"))[0] == "mail.send"


@pytest.mark.parametrize("method", ["list", "describe"])
def test_list_prefixes_and_describe_paths_longer_than_the_limit_are_refused(apps: Catalog, method: str) -> None:
    call = getattr(apps, method)
    with pytest.raises(ValueError, match=rf"is {MAX_PATH_CHARS + 1} characters; the limit is {MAX_PATH_CHARS}"):
        call("a" * (MAX_PATH_CHARS + 1))
    with pytest.raises(TypeError):
        call(5)
    assert call("a" * MAX_PATH_CHARS) in ([], f"# No operation or namespace {'a' * 97 + '...'!r}.")


def test_a_prefix_matches_whole_segments_only_even_with_a_trailing_dot_or_a_partial_segment(apps: Catalog) -> None:
    assert paths(apps.list("apps.")) == []
    assert paths(apps.list("apps.bazaar.windows.open.")) == []
    assert paths(apps.list("files.rea")) == []
    assert paths(apps.list("files.read")) == ["files.read"]
    assert apps.describe("apps.").startswith("# No operation or namespace")


def test_words_past_the_merge_budget_still_rank_the_documents_that_have_them(monkeypatch: pytest.MonkeyPatch) -> None:
    modules = [
        Module(
            id="big",
            name="big",
            operations={
                **{f"op_{i:03d}": _op(description=f"Handle a record, number {i}.") for i in range(150)},
                "archive_record": _op(description="Archive one record and handle it."),
            },
        )
    ]
    catalog = catalog_of(modules)
    unbounded = paths(catalog.search("archive handle record", 5))
    # Only the rarest word is merged in full: the common ones score the shortlist alone.
    monkeypatch.setattr("mycelium._discovery._ranking._MERGE_BUDGET", 1)
    monkeypatch.setattr("mycelium._discovery._ranking._SHORTLIST", 3)
    bounded = paths(catalog.search("archive handle record", 5))
    assert bounded[0] == unbounded[0] == "big.archive_record"
    # Too few documents to answer: the next word is merged in full after all.
    assert len(bounded) == 5


def test_forage_refuses_many_unknown_arguments_naming_only_a_few_clipped() -> None:
    catalog = catalog_of(app_modules())
    search = forage_bindings(catalog)["search"]
    arguments: dict[str, Any] = {f"{'k' * 1_000}{i}": i for i in range(100_000)}
    arguments["query"] = "notes"
    with pytest.raises(TypeError, match="unexpected argument") as raised:
        anyio.run(search, arguments)
    assert len(str(raised.value)) < 300


def test_a_combined_describe_says_the_comment_above_each_stub_is_the_path_to_call(apps: Catalog) -> None:
    catalog = catalog_of(
        [
            Module(id="gh", name="gh", operations={"repos.list": _op(), "issues.list": _op(), "pulls.list": _op()}),
        ]
    )
    text = catalog.describe("gh")
    first = text.splitlines()[0]
    assert first.startswith("# Call each operation by the full path in the comment above it")
    assert "`await gh.issues.list(...)`" in first
    assert re.findall(r"^# ([\w.]+)\nasync def list\(", text, re.MULTILINE) == [
        "gh.issues.list",
        "gh.pulls.list",
        "gh.repos.list",
    ]
    assert len(catalog.describe("gh", max_chars=600)) <= 600
    assert not apps.describe("files.read").startswith("# Call each")  # one stub needs no key


def test_the_execute_description_example_keeps_namespaces_and_names_no_module_the_app_lacks() -> None:
    tally = Module(id="tally", name="tally", operations={"count": _op(description="Count.")})
    description = execute_description(catalog_of([tally]), MontySandbox.language)
    assert not re.search(r"\b(\w+) = await \1\.", description), "an example overwrites a namespace"
    for absent in ("notes", "bazaar", "apps", "calendar", "windows"):
        assert not re.search(rf"\b{absent}\b", description), f"the description names {absent!r}, absent here"
    assert "found = await <ns>.<op>(" in description


def _imports_named_in(description: str) -> list[str]:
    listed = re.search(r"Modules you can import \(no other imports work\): ([\w,\s]+)\.", description)
    assert listed, description
    return [name.strip() for name in listed.group(1).split(",")]


async def _run_in_monty(*programs: str) -> list[Any]:
    async with Runtime(modules=app_modules(), sandbox=MontySandbox()) as runtime, runtime.lease() as lease:
        return [await lease.execute_tool.run(program) for program in programs]


async def test_every_module_the_execute_description_lists_imports_in_the_real_sandbox_and_others_do_not() -> None:
    modules = _imports_named_in(execute_description(catalog_of(app_modules()), MontySandbox.language))
    assert {"asyncio", "json", "datetime", "os", "sys", "pathlib", "typing"} <= set(modules)
    unlisted = ("socket", "subprocess", "urllib", "string", "enum", "requests")
    results = await _run_in_monty(
        f"import {', '.join(modules)}\nreturn 'imported'", *(f"import {name}\nreturn 'imported'" for name in unlisted)
    )
    assert results[0].value == "imported", results[0].text
    for name, result in zip(unlisted, results[1:], strict=True):
        assert "ModuleNotFoundError" in result.text, (name, result.text)


async def test_what_the_execute_description_says_is_out_of_reach_is_out_of_reach_in_the_real_sandbox() -> None:
    description = execute_description(catalog_of(app_modules()), MontySandbox.language)
    assert "os and pathlib see no host file (unless a workspace is described below)" in " ".join(description.split())
    for construct in ("class inheritance", "generators (yield)", "`del`", "@property"):
        assert construct in description
    results = await _run_in_monty(
        "return open('/etc/hostname').read()",
        "import pathlib\nreturn pathlib.Path('/').exists()",
        "import os\nreturn os.listdir('/')",
        "import os\nreturn dict(os.environ)",
        "class A:\n    pass\nclass B(A):\n    pass\nreturn 1",
        "def g():\n    yield 1\nreturn [x for x in g()]",
        "x = 1\ndel x\nreturn 1",
        "class A:\n    @property\n    def p(self):\n        return 1\nreturn A().p",
    )
    for result in results:
        assert result.is_error, result.text
    works = await _run_in_monty(
        "import os, sys, pathlib, typing\nfrom dataclasses import dataclass\n"
        "@dataclass\nclass P:\n    x: int\n"
        "match P(1).x:\n    case 1:\n        y = 'one'\n"
        "try:\n    raise ValueError('v')\nexcept ValueError as e:\n    z = str(e)\n"
        "return [y, z, sys.platform != '', os.path.join('a', 'b')]"
    )
    assert works[0].value == ["one", "v", True, "a/b"], works[0].text
