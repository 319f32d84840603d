"""Discovery under attack: ``forage`` arguments are bounded, its work is bounded, and it keeps nothing.

A guest controls every argument of ``forage.search``, ``forage.list`` and
``forage.describe``, and these run on the host's event loop. So an over-long query, path
or prefix is refused with a message naming the limit, before any work; no call holds the
loop for more than a few milliseconds even over 10,000 operations; and no cache keeps a
word a guest sent. The programs run in the real Monty sandbox through the security
harness (``host``); the timing and memory checks call the very bindings a run gets.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Awaitable, Callable

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


async def _best_of(call: Callable[[], Awaitable[JsonValue]], repeats: int = 3) -> float:
    """The fastest of a few runs of ``call``, in seconds: what the call costs without scheduler noise."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        await call()
        best = min(best, time.perf_counter() - started)
    return best


async def test_no_discovery_call_over_10000_operations_holds_the_event_loop_for_more_than_a_few_ms(
    big_catalog: Catalog,
) -> None:
    assert len(big_catalog) == 10_000
    forage = forage_bindings(big_catalog)
    query = _maximal_query()
    calls: dict[str, JsonValue] = {
        "search-maximal": {"query": query, "limit": 50},
        "search-one-common-word": {"query": "records", "limit": 50},
        "search-exact-name": {"query": "list", "limit": 50},
        "describe-unknown-maximal": {"path": query},
        "describe-everything": {"path": ""},
        "describe-a-module": {"path": "app_0500"},
        "list-everything": {"prefix": ""},
        "list-a-long-prefix": {"prefix": "app_0500." + "x" * (MAX_PATH_CHARS - 9)},
    }
    costs: dict[str, float] = {}
    for name, arguments in calls.items():
        helper = forage[name.split("-")[0]]
        costs[name] = await _best_of(lambda helper=helper, arguments=arguments: helper(arguments))
    slowest = max(costs, key=costs.__getitem__)
    # A few milliseconds on the build machine; the margin is for a loaded test runner.
    assert costs[slowest] < 0.025, f"{slowest} took {costs[slowest] * 1000:.1f} ms"


async def test_describing_a_huge_operation_costs_no_more_than_what_it_shows() -> None:
    # Rendering all 1,500 object fields takes about 65 ms; describe used to do it on every call.
    fields = {
        f"field_{i}": {"type": "object", "title": f"Part{i}", "properties": {"v": {"type": "string"}}}
        for i in range(1_500)
    }
    huge = operation(input={"type": "object", "properties": fields}, execute=lambda: None)
    catalog = Catalog(build_graph([Module(id="big", name="big", operations={"huge": huge})], revision=1))
    forage = forage_bindings(catalog)
    for path in ("big.huge", "big", ""):
        cost = await _best_of(lambda path=path: forage["describe"](path))
        assert cost < 0.025, f"describe({path!r}) took {cost * 1000:.1f} ms"


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
