"""The guest's ``forage`` namespace: ``search``, ``list`` and ``describe`` over the catalog of its run.

A guest calls them as it calls operations (``await forage.search("refund")``), but they
run nothing and need no grant: they only read the catalog. This module holds their
bindings, how they read a guest's arguments, and their stub for sandboxes that type-check.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import anyio
import anyio.to_thread

from .._bindings import BindingCallback
from .._text import clip
from .._values import JsonValue
from ._catalog import DEFAULT_SEARCH_LIMIT, MAX_LIST_ENTRIES, MAX_PATH_CHARS, Catalog, check_text
from ._stubs import STUB_HEADER

FORAGE_MODULE_ID = "mycelium.forage"
"""The stable id under which ``forage`` appears in a sandbox request's ``modules``."""
_ENTRIES = "builtins.list[builtins.dict[builtins.str, Any]]"
FORAGE_STUB = (
    STUB_HEADER
    + "async def search(\n"
    + f"    query: builtins.str | builtins.list[builtins.str], limit: builtins.int = {DEFAULT_SEARCH_LIMIT}\n"
    + f") -> {_ENTRIES}: ...\n"
    + f'async def list(prefix: builtins.str = "") -> {_ENTRIES}: ...\n'
    + "async def describe(path: builtins.str) -> builtins.str: ...\n"
)
"""The stub of the guest's ``forage`` namespace, for type checking programs."""
# Searches and describes of one catalog running at once, each in a worker thread.
_DISCOVERY_THREADS = 2


def forage_bindings(catalog: Catalog) -> dict[str, BindingCallback]:
    """``forage.search``, ``forage.list`` and ``forage.describe`` as a guest calls them.

    Each takes one string (``search`` also a list of phrasings) or keyword arguments and
    returns JSON. They consume no operation ordinals and need no grant: discovery shows
    labels, never runs anything. Search and describe rank the whole catalog, which takes
    milliseconds over a large one: they run in worker threads, at most two at once for
    these bindings, so no guest holds the event loop with them however many it gathers.
    Make them for each run: a run's gathered searches then wait only for each other.
    """
    threads: anyio.CapacityLimiter | None = None

    async def off_loop(call: Callable[[], JsonValue]) -> JsonValue:
        nonlocal threads
        if threads is None:  # made in the event loop that first needs it
            threads = anyio.CapacityLimiter(_DISCOVERY_THREADS)
        return await anyio.to_thread.run_sync(call, limiter=threads)

    async def search(value: JsonValue) -> JsonValue:
        query, limit = _arguments(value, "query", {"limit": DEFAULT_SEARCH_LIMIT})
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise TypeError("forage.search(limit=...) must be an int")
        # Checked here, so a refused query (however large) never reaches a worker thread,
        # whose idle state keeps its last job alive.
        texts, stems = catalog.checked_query(query, limit)
        return await off_loop(lambda: [entry.to_json() for entry in catalog.ranked(texts, stems, limit)])  # type: ignore[misc]

    async def list_(value: JsonValue) -> JsonValue:
        prefix, _ = _arguments(value, "prefix", {}, default="")
        found = catalog.list(prefix)  # type: ignore[arg-type]  # the catalog checks it
        shown: list[JsonValue] = [entry.to_json() for entry in found[:MAX_LIST_ENTRIES]]  # type: ignore[misc]
        if len(found) > MAX_LIST_ENTRIES:
            more = len(found) - MAX_LIST_ENTRIES
            shown.append({"more": more, "hint": f"{more} more operations: list a longer prefix or search"})
        return shown

    async def describe(value: JsonValue) -> JsonValue:
        path, _ = _arguments(value, "path", {})
        check_text(path, "describe path", MAX_PATH_CHARS)
        return await off_loop(lambda: catalog.describe(path))  # type: ignore[arg-type]  # checked just above

    # A positional value is the first keyword: forage.search("query", limit=3).
    search.positional_name = "query"  # type: ignore[attr-defined]
    list_.positional_name = "prefix"  # type: ignore[attr-defined]
    describe.positional_name = "path"  # type: ignore[attr-defined]
    return {"search": search, "list": list_, "describe": describe}


def _arguments(
    value: JsonValue, main: str, options: dict[str, JsonValue], default: JsonValue = None
) -> tuple[JsonValue, JsonValue]:
    """Read ``(main, option)`` from a guest's one positional value or keyword mapping."""
    if not isinstance(value, dict):
        return value, next(iter(options.values()), None)
    allowed = {main, *options}
    # Checked without walking (or echoing) however many keys a guest sent.
    if len(value) > len(allowed) or not value.keys() <= allowed:
        unknown = itertools.islice((key for key in value if key not in allowed), 3)
        raise TypeError(f"forage got unexpected argument(s) {', '.join(repr(clip(key, 40)) for key in unknown)}")
    if main not in value and default is None:
        raise TypeError(f"forage needs the argument {main!r}")
    option = next(iter(options), None)
    return value.get(main, default), value.get(option, options[option]) if option else None
