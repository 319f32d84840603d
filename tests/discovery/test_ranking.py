"""Search that finds what a person means: several phrasings per search, and host-written phrasings.

Each test is named after one rule. Catalogs are built from real modules; the guest-side
tests run programs in the real Monty sandbox. Ranking by meaning (the ``semantic`` extra)
is tested in ``test_semantic.py``.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from mycelium import DefinitionError, Module, Runtime, operation
from mycelium._discovery import MAX_PHRASINGS, MAX_QUERY_CHARS, MAX_QUERY_WORDS, MAX_SEARCH_WORDS, Catalog
from mycelium._execute import execute_description
from mycelium._graph import build_graph
from mycelium._operations import MAX_PHRASING_CHARS
from mycelium._operations import MAX_PHRASINGS as MAX_OPERATION_PHRASINGS
from mycelium._sources import Acquired, source
from mycelium.mcp import create_mcp_catalog
from mycelium.sandbox.monty import MontySandbox


class Charge(BaseModel):
    charge: str


def _op(description: str, phrasings: list[str] | None = None) -> Any:
    return operation(input=Charge, execute=lambda: None, description=description, phrasings=phrasings)


def shop() -> list[Module]:
    return [
        Module(
            id="billing",
            name="billing",
            operations={
                "refunds.create": _op("Creates a refund for a charge.", phrasings=["reimburse the buyer"]),
                "charges.capture": _op("Capture a previously authorized charge."),
                "charges.list": _op("Returns a list of charges."),
                "customers.update": _op("Updates a customer's details."),
                "payouts.create": _op("Send funds to your bank account."),
            },
        ),
        Module(
            id="messages",
            name="messages",
            operations={
                "send": _op("Send a text message to a phone number."),
                "list": _op("Returns the messages of an account."),
            },
        ),
    ]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog(build_graph(shop(), revision=1))


def paths(entries: list[Any]) -> list[str]:
    return [entry.path for entry in entries]


# --- Several phrasings in one search --------------------------------------------------------


def test_the_operation_several_phrasings_agree_on_ranks_first(catalog: Catalog) -> None:
    # Each phrasing alone is ambiguous; together they name one operation.
    assert paths(catalog.search("reverse a charge"))[0] != "billing.refunds.create"
    found = catalog.search(["reverse a charge", "refund the order", "refunds.create"])
    assert paths(found)[0] == "billing.refunds.create"


def test_one_phrasing_in_a_list_ranks_as_the_same_string_does(catalog: Catalog) -> None:
    for query in ("send a text", "charges", "customer details", "billing.charges.list"):
        assert catalog.search([query]) == catalog.search(query)


def test_an_exact_path_in_any_phrasing_ranks_first(catalog: Catalog) -> None:
    found = catalog.search(["send a text message", "messages.list"])
    assert paths(found)[0] == "messages.list"


def test_a_search_of_several_phrasings_lists_each_operation_once(catalog: Catalog) -> None:
    found = paths(catalog.search(["charge", "charges", "a charge"], limit=50))
    assert len(found) == len(set(found))


@pytest.mark.parametrize("count", [0, MAX_PHRASINGS + 1, 50])
def test_a_search_holds_one_to_max_phrasings(catalog: Catalog, count: int) -> None:
    with pytest.raises(ValueError, match=f"1 to {MAX_PHRASINGS} phrasings"):
        catalog.search(["refund"] * count)
    assert catalog.search(["refund"] * MAX_PHRASINGS)


def test_every_phrasing_is_bounded_like_a_single_query(catalog: Catalog) -> None:
    with pytest.raises(ValueError, match=f"limit is {MAX_QUERY_CHARS}"):
        catalog.search(["refund", "x" * (MAX_QUERY_CHARS + 1)])
    many_words = " ".join(
        f"k{'bcdfghjkmnpqrtvwxz'[i // 18]}{'bcdfghjkmnpqrtvwxz'[i % 18]}k" for i in range(MAX_QUERY_WORDS + 1)
    )
    with pytest.raises(ValueError, match=f"limit is {MAX_QUERY_WORDS}"):
        catalog.search(["refund", many_words])


def test_the_phrasings_of_one_search_are_bounded_in_words_together(catalog: Catalog) -> None:
    letters = "bcdfghjkmnpqrtvwxz"
    words = [f"k{letters[i // 18]}{letters[i % 18]}k" for i in range(MAX_SEARCH_WORDS + 1)]
    within = [" ".join(words[i : i + 8]) for i in range(0, MAX_SEARCH_WORDS, 8)]
    assert catalog.search(within) == []  # 32 distinct words, none in the catalog
    over = [*within[:3], " ".join(words[24:])]
    with pytest.raises(ValueError, match=f"{MAX_SEARCH_WORDS + 1} distinct words together; the limit is"):
        catalog.search(over)


@pytest.mark.parametrize("description", ["", "\n", "   ", " \t\n "])
async def test_an_operation_whose_description_is_blank_is_searchable_and_leaves_the_runtime_usable(
    description: str,
) -> None:
    blank = Module(id="blank", name="blank", operations={"ping": _op(description)})
    async with Runtime(modules=[*shop(), blank], sandbox=MontySandbox()) as runtime, runtime.lease() as lease:
        found = lease.catalog.search("blank.ping")
        result = await lease.execute_tool.run('return await forage.describe("blank.ping")')
    assert found[0].to_json() == {
        "path": "blank.ping",
        "description": "",
        "access": "write",
        "confirm": False,
    }
    assert not result.is_error, result.text


@pytest.mark.parametrize("query", [[5], ["refund", None], [["nested"]], {"refund"}, {"query": "refund"}, b"x"])
def test_a_query_that_is_not_a_string_or_a_list_of_strings_raises_type_error(catalog: Catalog, query: Any) -> None:
    with pytest.raises(TypeError):
        catalog.search(query)


async def test_a_guest_searches_with_a_list_of_phrasings() -> None:
    program = """
one = await forage.search(["reverse a charge", "refund the order", "refunds.create"], limit=2)
keyword = await forage.search(query=["refunds.create"], limit=1)
try:
    await forage.search(["a", "b", "c", "d", "e"])
except ValueError as exc:
    refused = str(exc)
return [[e["path"] for e in one], keyword[0]["path"], refused]
"""
    async with Runtime(modules=shop(), sandbox=MontySandbox()) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run(program)
    assert not result.is_error, result.text
    found, keyword, refused = result.value  # type: ignore[misc]
    assert found[0] == "billing.refunds.create"
    assert keyword == "billing.refunds.create"
    assert f"1 to {MAX_PHRASINGS} phrasings" in refused


def test_the_execute_description_teaches_searching_several_ways(catalog: Catalog) -> None:
    text = execute_description(catalog, MontySandbox.language)
    assert "forage.search([" in text
    assert "two or three ways" in text


# --- Host-written phrasings -----------------------------------------------------------------


def test_a_host_phrasing_finds_an_operation_its_description_never_words(catalog: Catalog) -> None:
    # "reimburse" is in no path, name, description or field of refunds.create: only its phrasing.
    assert paths(catalog.search("reimburse the buyer please"))[0] == "billing.refunds.create"
    plain = Catalog(
        build_graph(
            [Module(id="b", name="billing", operations={"refunds.create": _op("Creates a refund.")})], revision=1
        )
    )
    assert plain.search("reimburse the buyer please") == []


def test_phrasings_are_for_search_and_never_shown_to_the_model(catalog: Catalog) -> None:
    assert "reimburse" not in catalog.describe("billing.refunds.create")
    assert "reimburse" not in str([entry.to_json() for entry in catalog.search("reimburse")])
    assert "reimburse" not in execute_description(catalog, MontySandbox.language)


def test_the_decorator_takes_phrasings_too() -> None:
    module = Module(id="home", name="home")

    @module.operation(phrasings=["make it warmer", "turn up the heat"])
    def set_thermostat(celsius: float) -> None:
        """Set the target temperature."""

    catalog = Catalog(build_graph([module], revision=1))
    assert paths(catalog.search("turn up the heat"))[0] == "home.set_thermostat"


@pytest.mark.parametrize(
    ("phrasings", "message"),
    [
        ("give money back", "must be a list of strings"),
        ([""], "non-empty string"),
        (["   "], "non-empty string"),
        ([3], "non-empty string"),
        (["x" * (MAX_PHRASING_CHARS + 1)], f"limit is {MAX_PHRASING_CHARS}"),
        (["ask"] * (MAX_OPERATION_PHRASINGS + 1), f"at most {MAX_OPERATION_PHRASINGS} phrasings"),
    ],
)
def test_bad_phrasings_are_refused_when_the_operation_is_defined(phrasings: Any, message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        operation(execute=lambda: None, phrasings=phrasings)


def test_phrasings_are_kept_with_their_whitespace_collapsed() -> None:
    made = operation(execute=lambda: None, phrasings=("  give the\n customer  their money back ",))
    assert made.phrasings == ("give the customer their money back",)


@pytest.mark.parametrize("text", ["Refund \ud800 a charge", "\udfff"])
def test_text_that_is_not_valid_unicode_is_refused_when_the_operation_is_defined(text: str) -> None:
    with pytest.raises(DefinitionError, match="lone surrogate"):
        operation(execute=lambda: None, description=text)
    with pytest.raises(DefinitionError, match="lone surrogate"):
        operation(execute=lambda: None, phrasings=["fine", text])
    schema = {"type": "object", "properties": {"charge": {"type": "string", "description": text}}}
    with pytest.raises(DefinitionError, match="input schema is not valid Unicode"):
        operation(execute=lambda: None, input=schema)
    with pytest.raises(DefinitionError, match="output schema is not valid Unicode"):
        operation(execute=lambda: None, output=schema)


# --- A revision's catalog is built once -----------------------------------------------------


class CountingRanker:
    """A host's ranking by meaning that counts the catalogs it indexes.

    It can fail its first ``failures`` builds, and hold each build until ``go`` is set
    (``started`` tells when one is held), to race acquires against a build deterministically.
    """

    def __init__(self, failures: int = 0, hold: bool = False) -> None:
        self.indexed = 0
        self._failures = failures
        self.started, self.go = threading.Event(), threading.Event()
        if not hold:
            self.go.set()

    def index(self, documents: Sequence[Sequence[str]]) -> CountingRanker:
        self.indexed += 1
        self.started.set()
        self.go.wait(30)
        if self._failures:
            self._failures -= 1
            raise RuntimeError("the ranker broke")
        return self

    def nearest(self, queries: Sequence[str], depth: int) -> list[int]:
        return []


async def test_concurrent_acquires_of_a_new_revision_build_its_catalog_once() -> None:
    ranker = CountingRanker()
    async with Runtime(modules=shop(), sandbox=MontySandbox(), semantic=ranker) as runtime:
        leases: list[Any] = []

        async def acquire() -> None:
            leases.append(await runtime.acquire())

        async with anyio.create_task_group() as group:
            for _ in range(20):
                group.start_soon(acquire)
        assert ranker.indexed == 1
        assert len({id(lease.catalog) for lease in leases}) == 1
        for lease in leases:
            await lease.release()
        assert runtime.leases_held == 0


async def test_a_failed_catalog_build_fails_its_acquire_and_the_next_acquire_builds_again() -> None:
    ranker = CountingRanker(failures=1)
    async with Runtime(modules=shop(), sandbox=MontySandbox(), semantic=ranker) as runtime:
        with pytest.raises(RuntimeError, match="the ranker broke"):
            await runtime.acquire()
        assert runtime.leases_held == 0
        async with runtime.lease() as lease:
            assert paths(lease.catalog.search("refunds.create"))[0] == "billing.refunds.create"
        assert ranker.indexed == 2


async def test_acquires_waiting_on_a_failed_build_share_its_failure() -> None:
    ranker = CountingRanker(failures=1, hold=True)
    async with Runtime(modules=shop(), sandbox=MontySandbox(), semantic=ranker) as runtime:
        waiting = [asyncio.ensure_future(runtime.acquire()) for _ in range(10)]
        await anyio.to_thread.run_sync(ranker.started.wait, 30)
        ranker.go.set()
        results = await asyncio.gather(*waiting, return_exceptions=True)
        assert all(isinstance(result, RuntimeError) for result in results)
        assert ranker.indexed == 1
        assert runtime.leases_held == 0


async def test_a_build_whose_acquire_gave_up_is_kept_for_the_next_acquire() -> None:
    ranker = CountingRanker(hold=True)
    async with Runtime(modules=shop(), sandbox=MontySandbox(), semantic=ranker) as runtime:
        first = asyncio.ensure_future(runtime.acquire())
        await anyio.to_thread.run_sync(ranker.started.wait, 30)
        first.cancel()  # the host's request timed out, the asyncio way
        await asyncio.gather(first, return_exceptions=True)
        assert first.cancelled()
        ranker.go.set()
        async with runtime.lease():
            pass
        assert ranker.indexed == 1
        assert runtime.leases_held == 0


async def test_a_revision_no_lease_holds_any_more_is_dropped_with_its_catalog() -> None:
    versions = 0

    async def acquire(context: Any) -> Acquired:
        nonlocal versions
        versions += 1
        context.invalidate()  # the next lease sees a new revision, as a changing MCP server makes
        return Acquired(version=str(versions), modules=shop(), release=release)

    async def release() -> None:
        return None

    async with Runtime(sources=[source(id="s", acquire=acquire)], sandbox=MontySandbox()) as runtime:
        async with runtime.lease() as lease:
            first = weakref.ref(lease.graph)
            catalog = weakref.ref(lease.catalog)
        del lease
        for _ in range(3):
            async with runtime.lease():
                pass
        gc.collect()
        assert versions == 4
        assert first() is None
        assert catalog() is None


@pytest.mark.parametrize("semantic", ["wordllama", object(), 3])
def test_a_runtime_refuses_a_semantic_ranker_that_is_not_one(semantic: Any) -> None:
    with pytest.raises(ValueError, match="semantic must be a SemanticRanker"):
        Runtime(modules=shop(), sandbox=MontySandbox(), semantic=semantic)


def test_a_served_catalog_refuses_a_semantic_ranker_that_is_not_one_when_it_is_made() -> None:
    with pytest.raises(ValueError, match="semantic must be a SemanticRanker"):
        create_mcp_catalog(load=lambda principal: None, sandbox=MontySandbox(), semantic="wordllama")  # type: ignore[arg-type]
