"""Discovery under attack: ``forage`` arguments are bounded, its work is bounded, and it keeps nothing.

A guest controls every argument of ``forage.search``, ``forage.list`` and
``forage.describe``, and these run on the host's event loop. So an over-long query, path
or prefix is refused with a message naming the limit, before any work; no call holds the
loop, even over 10,000 operations, nor does more work than it shows; and no cache keeps a
word a guest sent. The programs run in the real Monty sandbox through the security
harness (``host``); the timing and memory checks call the very bindings a run gets.
"""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from mycelium import Module, Runtime, operation
from mycelium._discovery import MAX_PATH_CHARS, MAX_QUERY_CHARS, MAX_QUERY_WORDS, Catalog, forage_bindings
from mycelium._graph import build_graph
from mycelium._values import JsonValue
from mycelium.failures import GuestException
from mycelium.sandbox.monty import MontySandbox

from .conftest import QUICK_BOUND_S, Host, loop_gaps

# --- Over-long arguments are refused, naming the limit ---------------------------------------

_REFUSED = {
    "long-query": (
        "forage.search('ab ' * 20_000)",
        f"the search query is 60000 characters; the limit is {MAX_QUERY_CHARS}",
    ),
    "long-keyword-query": (
        "forage.search(query='x' * 501, limit=3)",
        f"the search query is 501 characters; the limit is {MAX_QUERY_CHARS}",
    ),
    "many-words": (
        "forage.search(' '.join('w' + 'q' * i for i in range(2, 30)))",
        f"the search query has 28 distinct words; the limit is {MAX_QUERY_WORDS}. "
        "Search with a few words that name what you need.",
    ),
    "long-prefix": (
        "forage.list('notes.' * 1_000)",
        f"the list prefix is 6000 characters; the limit is {MAX_PATH_CHARS}",
    ),
    "long-path": (
        "forage.describe(path='x' * 100_000)",
        f"the describe path is 100000 characters; the limit is {MAX_PATH_CHARS}",
    ),
}


@pytest.mark.parametrize(("call", "message"), _REFUSED.values(), ids=_REFUSED.keys())
async def test_a_discovery_argument_longer_than_the_limit_is_refused_with_the_limit_named(
    host: Host, call: str, message: str
) -> None:
    outcome = await host.run(f"try:\n    await {call}\nexcept ValueError as e:\n    return str(e)\nreturn 'answered'")
    assert outcome.result.value == message, outcome.result.text
    assert outcome.elapsed < QUICK_BOUND_S


async def test_an_unhandled_over_long_query_is_a_guest_value_error_that_does_not_echo_the_query(host: Host) -> None:
    outcome = await host.run("return await forage.search('secret-looking-text ' * 40_000)")
    failure = outcome.result.failure
    assert isinstance(failure, GuestException), outcome.result.text
    assert failure.type_name == "ValueError"
    assert f"the limit is {MAX_QUERY_CHARS}" in outcome.result.text
    assert "secret-looking-text" not in outcome.result.text
    assert outcome.elapsed < QUICK_BOUND_S


async def test_many_unknown_forage_arguments_are_refused_naming_only_a_few(host: Host) -> None:
    outcome = await host.run(
        "args = {'k' * 200 + str(i): i for i in range(2_000)}\n"
        "try:\n    await forage.search(query='notes', **args)\nexcept TypeError as e:\n    return str(e)"
    )
    assert isinstance(outcome.result.value, str), outcome.result.text
    assert outcome.result.value.startswith("forage got unexpected argument(s)")
    assert len(outcome.result.value) < 300


async def test_gathered_huge_queries_neither_stall_the_host_loop_nor_outlive_a_quick_refusal(host: Host) -> None:
    # Before the bound, ten gathered 6 MB queries held the host's loop for 16 s.
    program = (
        "import asyncio\nq = 'ab ' * 2_000_000\n"
        "async def one():\n"
        "    try:\n"
        "        return await forage.search(q)\n"
        "    except ValueError:\n"
        "        return 'refused'\n"
        "return await asyncio.gather(*[one() for _ in range(10)])"
    )
    async with loop_gaps() as gaps:
        outcome = await host.run(program)
    assert outcome.result.value == ["refused"] * 10, outcome.result.text
    assert outcome.elapsed < QUICK_BOUND_S
    assert max(gaps) < 0.25, f"the host's event loop stalled for {max(gaps):.3f} s"


# --- Bounded work over 10,000 operations -----------------------------------------------------


@pytest.fixture(scope="module")
def big_modules() -> list[Module]:
    """1,000 modules x 10 operations whose words are all common: the hardest case for search."""
    shared = {
        f"{group}.{verb}": operation(
            input={
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": f"Which {group[:-1]} to {verb}, by its id."},
                    "limit": {"type": "integer", "description": "Maximum number of results."},
                },
            },
            execute=lambda: None,
            access="read" if verb in ("list", "get") else "write",
            description=f"{verb.capitalize()} {group} of the account, with their status, owner and date.",
        )
        for group in ("records", "settings")
        for verb in ("list", "get", "create", "update", "delete")
    }
    return [
        Module(id=f"vendor-{i:04d}", name=f"app_{i:04d}", description=f"App {i}.", operations=shared)
        for i in range(1_000)
    ]


@pytest.fixture(scope="module")
def big_catalog(big_modules: list[Module]) -> Catalog:
    return Catalog(build_graph(big_modules, revision=1))


def _maximal_query() -> str:
    """The big catalog's commonest words (and their relatives), as many as a query may hold."""
    words = "list get create update delete records settings account status owner date id limit maximum number "
    words += "results which by their with change remove new add show make set edit"
    query = " ".join(words.split()[:MAX_QUERY_WORDS])
    assert len(query) <= MAX_QUERY_CHARS
    return query


async def test_no_discovery_call_over_10000_operations_holds_the_event_loop(big_catalog: Catalog) -> None:
    # How long each call takes is bench/discovery.py's to measure (its worst case: under 5 ms of
    # stall); here, that none of them, with the longest arguments a guest may send, holds the loop.
    assert len(big_catalog) == 10_000
    forage = forage_bindings(big_catalog)
    query = _maximal_query()
    calls: list[tuple[str, JsonValue]] = [
        ("search", {"query": query, "limit": 50}),
        ("search", {"query": "records", "limit": 50}),
        ("search", {"query": "list", "limit": 50}),
        ("describe", {"path": query}),
        ("describe", {"path": ""}),
        ("describe", {"path": "app_0500"}),
        ("list", {"prefix": ""}),
        ("list", {"prefix": "app_0500." + "x" * (MAX_PATH_CHARS - 9)}),
    ]
    async with loop_gaps() as gaps:
        for helper, arguments in calls * 3:
            await forage[helper](arguments)
    assert max(gaps) < 0.25, f"the host's event loop stalled for {max(gaps):.3f} s"


def _huge_operation_catalog(fields: int) -> Catalog:
    properties = {
        f"field_{i}": {"type": "object", "title": f"Part{i}", "properties": {"v": {"type": "string"}}}
        for i in range(fields)
    }
    huge = operation(input={"type": "object", "properties": properties}, execute=lambda: None)
    return Catalog(build_graph([Module(id="big", name="big", operations={"huge": huge})], revision=1))


async def _describe_peak_bytes(catalog: Catalog, path: str) -> int:
    describe = forage_bindings(catalog)["describe"]
    tracemalloc.start()
    try:
        await describe({"path": path})
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def test_describing_a_huge_operation_costs_what_it_shows_not_what_it_declares() -> None:
    # Rendering every field of a huge declaration took 65 ms a call; describe now stops at what it shows,
    # which both of these declarations overflow.
    await _describe_peak_bytes(_huge_operation_catalog(10), "big.huge")  # one-time set-up is not the call's
    huge, ten_times_huger = _huge_operation_catalog(500), _huge_operation_catalog(5_000)
    for path in ("big.huge", "big", ""):
        declared = await _describe_peak_bytes(huge, path)
        ten_times = await _describe_peak_bytes(ten_times_huger, path)
        assert ten_times < 1.5 * declared, (path, declared, ten_times)
        assert ten_times < 1024 * 1024, (path, ten_times)


async def test_discovery_calls_in_the_real_sandbox_over_10000_operations_do_not_stall_the_host_loop(
    big_modules: list[Module],
) -> None:
    program = (
        "import asyncio\n"
        f"q = {_maximal_query()!r}\n"
        "calls = [forage.search(q, limit=50), forage.describe(''), forage.list(''), forage.describe(q)] * 5\n"
        "found = await asyncio.gather(*calls)\n"
        "return len(found)"
    )
    async with Runtime(modules=big_modules, sandbox=MontySandbox()) as runtime, runtime.lease() as lease:
        await lease.execute_tool.run("return 1")  # a warm worker and catalog: measure discovery, not start-up
        async with loop_gaps() as gaps:
            result = await lease.execute_tool.run(program)
    assert result.value == 20, result.text
    assert max(gaps) < 0.25, f"the host's event loop stalled for {max(gaps):.3f} s"


# --- Nothing a guest sends is kept -------------------------------------------------------------


async def test_discovery_keeps_no_word_a_guest_sends(big_catalog: Catalog) -> None:
    forage = forage_bindings(big_catalog)

    async def hostile_round(round_: int) -> None:
        unique = f"{round_:04d}".join("zq" for _ in range(MAX_QUERY_CHARS // 8))
        await forage["search"](unique[:MAX_QUERY_CHARS])
        await forage["search"](" ".join(f"w{round_}x{i}" for i in range(MAX_QUERY_WORDS)))
        await forage["describe"](f"app_{round_}.{unique}"[:MAX_PATH_CHARS])
        await forage["list"](f"app_{round_}.{unique}"[:MAX_PATH_CHARS])
        with pytest.raises(ValueError, match="the limit is"):
            await forage["search"]("w" * 30_000_000)  # one 30 MB word

    await hostile_round(0)  # anything allocated once, on first use, is not growth
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for round_ in range(1, 60):
            await hostile_round(round_)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, f"discovery kept {grown} bytes after 59 rounds of distinct guest words"


async def test_discovery_calls_count_against_the_run_call_budget(host: Host) -> None:
    runtime = await host.open(max_operation_calls=3)
    outcome = await host.run(
        "n = 0\ntry:\n    for _ in range(10):\n        await forage.search('notes')\n        n += 1\n"
        "except RuntimeError as e:\n    return [n, str(e)]",
        runtime,
    )
    assert outcome.result.value == [3, "this run made more than 3 operation calls"], outcome.result.text
