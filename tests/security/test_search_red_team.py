"""Search under attack: a hostile guest's ``forage.search`` and a careless host's catalog.

The guest programs run in the real Monty sandbox through a real Runtime, with and without
the semantic ranker (WordLlama, where the extra is installed). Whatever a guest sends, it
gets results or a ``ValueError``/``TypeError`` naming the problem, never a host exception,
a traceback or a host path; nothing it sends is kept; ranking does not depend on the
process. Whatever a host defines, and however many tasks acquire a new revision at once,
every lease sees one catalog and every hold is given back, even when the build fails or
its acquire is cancelled.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest

from mycelium import ExecutionOptions, Module, Runtime, operation
from mycelium._discovery import (
    MAX_PHRASINGS,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    MAX_SEARCH_WORDS,
    Catalog,
    SemanticRanker,
)
from mycelium._execute import RevisionView
from mycelium._graph import build_graph
from mycelium.failures import GuestException
from mycelium.sandbox.monty import MontySandbox

from .conftest import QUICK_BOUND_S, assert_nothing_leaks
from .test_upstream_red_team import PLAIN, raw_source

REPO_ROOT = Path(__file__).resolve().parents[2]


def wordllama_ranker() -> SemanticRanker:
    pytest.importorskip("wordllama", reason="the semantic extra (WordLlama) is not installed")
    from mycelium.semantic import WordLlamaRanker

    return WordLlamaRanker()


def shop() -> list[Module]:
    def op(description: str | None, phrasings: list[str] | None = None) -> Any:
        return operation(execute=lambda: "done", description=description, phrasings=phrasings)

    return [
        Module(
            id="pay",
            name="pay",
            operations={
                "refunds.create": op("Creates a refund for a charge.", ["give the customer their money back"]),
                "charges.list": op("Returns a list of charges."),
                "customers.update": op("Updates a customer's details."),
                "blank": op(None),
            },
        ),
        Module(
            id="chat",
            name="chat",
            operations={
                "messages.post": op("Post a message to a channel."),
                "channels.create": op("Create a channel."),
            },
        ),
    ]


SHOP_PATHS = {entry.path for entry in Catalog(build_graph(shop(), revision=1)).entries}


@pytest.fixture(params=["lexical", "semantic"])
async def runtime(request: pytest.FixtureRequest) -> AsyncIterator[Runtime]:
    semantic = wordllama_ranker() if request.param == "semantic" else None
    async with Runtime(modules=shop(), sandbox=MontySandbox(), semantic=semantic) as runtime:
        yield runtime


async def run(runtime: Runtime, code: str) -> Any:
    async with runtime.lease() as lease:
        return await lease.execute_tool.run(code)


# --- Whatever a guest sends ------------------------------------------------------------------

_REFUSED = {
    "a-huge-list": ("['refund'] * 100_000", "ValueError", "1 to 4 phrasings of one need, got 100000"),
    "no-phrasings": ("[]", "ValueError", "1 to 4 phrasings of one need, got 0"),
    "five-phrasings": ("['a', 'b', 'c', 'd', 'e']", "ValueError", "1 to 4 phrasings of one need, got 5"),
    "numbers": ("[1, 2]", "TypeError", "the search query must be a string, got int"),
    "a-nested-list": ("[['refund']]", "TypeError", "the search query must be a string, got list"),
    "a-dict-in-a-list": ("[{'query': 'refund'}]", "TypeError", "the search query must be a string, got dict"),
    "none": ("None", "TypeError", "must be a string or a list of strings, got NoneType"),
    "bytes": ("b'refund'", "ValueError", "is a bytes, not a JSON value"),
    "a-set": ("{'refund'}", "ValueError", "is a set, not a JSON value"),
    "a-long-phrasing": ("['refund', 'x' * 501]", "ValueError", f"the limit is {MAX_QUERY_CHARS}"),
    "too-many-words-together": (
        "[' '.join('k' + c + d + 'k' for d in 'bcdfghjkmnpq') for c in 'bcdf']",
        "ValueError",
        f"48 distinct words together; the limit is {MAX_SEARCH_WORDS}",
    ),
    "a-query-list-in-keywords": ("{'query': ['a'] * 9, 'limit': 3}", "ValueError", "got 9"),
    "an-unknown-keyword": ("{'query': 'refund', 'zzz': 1}", "TypeError", "unexpected argument(s) 'zzz'"),
}
_BAD_LIMITS = {
    "bool": ("True", "TypeError", "must be an int"),
    "float": ("3.0", "TypeError", "must be an int"),
    "zero": ("0", "ValueError", f"from 1 to {MAX_SEARCH_LIMIT}, got 0"),
    "huge": ("10 ** 30", "ValueError", f"from 1 to {MAX_SEARCH_LIMIT}, got 1000000000000000000000000000000"),
}


def _refused_calls() -> Iterator[Any]:
    for name, (argument, type_name, message) in _REFUSED.items():
        yield pytest.param(f"forage.search({argument})", type_name, message, id=name)
    for name, (limit, type_name, message) in _BAD_LIMITS.items():
        yield pytest.param(f"forage.search('refund', limit={limit})", type_name, message, id=f"limit-{name}")


@pytest.mark.parametrize(("call", "type_name", "message"), list(_refused_calls()))
async def test_a_hostile_search_argument_reaches_the_guest_as_a_value_or_type_error_naming_it(
    runtime: Runtime, call: str, type_name: str, message: str
) -> None:
    program = f"return await {call}"
    result = await run(runtime, program)
    assert_nothing_leaks(result, (), program)
    assert isinstance(result.failure, GuestException), result.text
    assert result.failure.type_name == type_name, result.text
    assert message in result.failure.message, result.text
    assert "Traceback" not in result.text


_ODD_BUT_VALID = {
    "zero-width": "'\\u200b' * 500",
    "right-to-left": "'\\u202e refund \\u202d' * 30",
    "combining-marks": "'e' + '\\u0301' * 499",
    "500-emoji": "'\\U0001F600' * 500",
    "nul": "'\\x00' * 500",
    "a-surrogate-escape": "'\\ud800 refund'",
    "rare-cjk": "''.join(chr(0x20000 + i * 7) for i in range(500))",
    "only-whitespace": "['  ', '\\t', '\\n']",
    "only-dots": "'.' * 500",
    "four-at-every-limit": (
        "[(' '.join('k' + c + d + 'k' for c in 'bcd' for d in 'bcdfghjk') + ' ' + '\\U0001F600' * 500)"
        f"[:{MAX_QUERY_CHARS}]] * {MAX_PHRASINGS}"
    ),
    "an-exact-path-among-noise": "['\\U0001F600' * 400, 'pay.refunds.create', '!!!']",
    "a-tuple": "('refund', 'money back')",
}


@pytest.mark.parametrize("query", _ODD_BUT_VALID.values(), ids=_ODD_BUT_VALID.keys())
async def test_odd_unicode_and_phrasings_at_the_limits_are_searched_without_failing(
    runtime: Runtime, query: str
) -> None:
    program = f"found = await forage.search({query}, limit={MAX_SEARCH_LIMIT})\nreturn [e['path'] for e in found]"
    result = await run(runtime, program)
    assert_nothing_leaks(result, (), program)
    assert not result.is_error, result.text
    assert isinstance(result.value, list)
    assert len(result.value) <= MAX_SEARCH_LIMIT
    assert set(result.value) <= SHOP_PATHS
    if "pay.refunds.create" in query:
        assert result.value[0] == "pay.refunds.create"


async def test_gathered_and_looped_searches_each_get_an_answer(runtime: Runtime) -> None:
    program = (
        "import asyncio\n"
        "q = ['\\U0001F600' * 500, 'refund the charge', 'give the customer their money back']\n"
        "gathered = await asyncio.gather(*[forage.search(q) for _ in range(200)])\n"
        "looped = [await forage.search(['refund', str(i)]) for i in range(200)]\n"
        "return [len(gathered), len(looped), gathered[0] == gathered[-1]]"
    )
    with anyio.fail_after(30):
        result = await run(runtime, program)
    assert result.value == [200, 200, True], result.text


# --- Nothing a guest sends is kept, and ranking is the same everywhere ---------------------


def test_distinct_guest_searches_leave_no_host_memory_behind_in_the_tokenizer() -> None:
    # WordLlama's tokenizer used to keep every input under 256 bytes, up to 10,000 of them for
    # the life of the process: ~70 MiB of these searches. In a fresh process: the cache is
    # process-wide, and another test may already have filled it with catalog texts.
    wordllama_ranker()
    if not Path("/proc/self/statm").exists():
        pytest.skip("reads the process's memory from /proc")
    script = textwrap.dedent(
        """
        import asyncio, gc, os, random
        from mycelium import Module, operation
        from mycelium._discovery import Catalog
        from mycelium._graph import build_graph
        from mycelium.semantic import WordLlamaRanker

        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

        ops = {f"op{i}": operation(execute=lambda: None, description=f"Does thing {i}.") for i in range(20)}
        catalog = Catalog(build_graph([Module(id="m", name="m", operations=ops)], revision=1), WordLlamaRanker())

        def phrasing(i):
            rng = random.Random(i)
            return "".join(chr(0x4E00 + rng.randrange(20_000)) for _ in range(60))

        for i in range(200):
            catalog.search(phrasing(-1 - i))
        gc.collect()
        before = rss()
        for i in range(12_000):
            catalog.search(phrasing(i))
        gc.collect()
        print((rss() - before) / 2**20)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=50)
    assert done.returncode == 0, done.stderr
    grown = float(done.stdout.split()[-1])
    assert grown < 16, f"the host kept {grown:.0f} MiB after 12,000 distinct guest searches"


def test_searches_add_nothing_to_the_semantic_rankers_vector_cache() -> None:
    ranker = wordllama_ranker()
    catalog = Catalog(build_graph(shop(), revision=1), ranker)
    kept = dict(ranker._vectors)  # type: ignore[attr-defined]
    for i in range(300):
        catalog.search([f"guest words {i}", f"another phrasing number {i}", "\U0001f600" * (i + 1)])
    assert ranker._vectors.keys() == kept.keys()  # type: ignore[attr-defined]


_RANKINGS = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from catalogs import generated_catalog, realistic_catalog
    from mycelium._discovery import Catalog
    from mycelium._graph import build_graph
    from mycelium.semantic import WordLlamaRanker
    queries = ["refund", "list records", "delete the thing", ["make it warmer", "set temperature", "thermostat"],
               "create update delete list get", ["give the customer money back", "refund a charge"],
               "records", "send a message", "event meeting", "zzqxj"]
    found = {}
    for name, modules in (("realistic", realistic_catalog()), ("generated", generated_catalog(modules=200))):
        graph = build_graph(modules, revision=1)
        for engine, catalog in (("lexical", Catalog(graph)), ("fused", Catalog(graph, WordLlamaRanker()))):
            for query in queries:
                found[f"{name}/{engine}/{query}"] = [entry.path for entry in catalog.search(query, 50)]
    print(json.dumps(found, sort_keys=True))
    """
)


def test_search_ranks_the_same_in_processes_with_different_hash_seeds() -> None:
    wordllama_ranker()
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _RANKINGS, str(REPO_ROOT / "bench")],
            capture_output=True,
            text=True,
            timeout=50,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]
    assert any(outputs[0].values())


# --- Whatever a host defines -----------------------------------------------------------------


def _modules_of(operations: dict[str, Any]) -> list[Module]:
    return [Module(id="m", name="m", operations=operations)] if operations else []


@pytest.mark.parametrize(
    "operations",
    [
        {},
        {"only": operation(execute=lambda: None, description="The only thing.")},
        {
            "none": operation(execute=lambda: None),
            "empty": operation(execute=lambda: None, description=""),
            "blank": operation(execute=lambda: None, description=" \t\n "),
            "zero_width": operation(execute=lambda: None, description="\u200b", phrasings=["\u200b settle up"]),
        },
    ],
    ids=["no-operations", "one-operation", "blank-descriptions"],
)
def test_a_semantic_catalog_of_none_one_or_blank_operations_answers_every_search(
    operations: dict[str, Any],
) -> None:
    catalog = Catalog(build_graph(_modules_of(operations), revision=1), wordllama_ranker())
    for query in ("", "   ", "thing", ["a thing", "another"], "\U0001f600" * 500, "m.only", "!!!"):
        found = catalog.search(query, MAX_SEARCH_LIMIT)
        assert len(found) <= len(operations)
    if "only" in operations:
        assert [entry.path for entry in catalog.search("m.only")] == ["m.only"]


async def test_an_upstream_tool_with_a_blank_description_leaves_every_module_usable(tmp_path: Path) -> None:
    # Its description once made every acquire of the runtime raise IndexError, local modules included.
    tools = [{"name": "t", "description": "\n", "inputSchema": PLAIN}, {"name": "u", "inputSchema": PLAIN}]
    local = Module(id="local", name="local", operations={"ping": operation(execute=lambda: "pong")})
    runtime = Runtime(
        modules=[local],
        sources=[raw_source(tmp_path, tools)],
        sandbox=MontySandbox(),
        execution=ExecutionOptions(timeout_ms=20_000),
    )
    async with runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run("return [await local.ping(), await up.t(), len(await forage.list('up'))]")
    assert result.value == ["pong", "ok", 2], result.text


# --- Acquiring a new revision ------------------------------------------------------------------


class _GatedBuilds:
    """RevisionView.build held in its worker thread until the test lets it go (no sleeps)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, fail: bool = False) -> None:
        self.started = threading.Event()
        self.go = threading.Event()
        self.count = 0
        build = RevisionView.build.__func__  # type: ignore[attr-defined]

        def gated(cls: type[RevisionView], *args: Any, **kwargs: Any) -> RevisionView:
            self.count += 1
            self.started.set()
            self.go.wait(30)
            if fail:
                raise RuntimeError("the build failed")
            view: RevisionView = build(cls, *args, **kwargs)
            return view

        monkeypatch.setattr(RevisionView, "build", classmethod(gated))

    async def wait_started(self) -> None:
        await anyio.to_thread.run_sync(self.started.wait, 30)


async def test_concurrent_acquires_of_a_new_revision_share_one_catalog_and_give_every_hold_back() -> None:
    async with Runtime(modules=shop(), sandbox=MontySandbox()) as runtime:
        leases = await asyncio.gather(*[runtime.acquire() for _ in range(20)])
        try:
            assert runtime.leases_held == 20
            assert len({id(lease.catalog) for lease in leases}) == 1
            assert len({lease.execute_tool.definition.description for lease in leases}) == 1
        finally:
            for lease in leases:
                await lease.release()
        assert runtime.leases_held == 0


async def test_an_acquire_whose_revision_build_fails_holds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    builds = _GatedBuilds(monkeypatch, fail=True)
    builds.go.set()
    async with Runtime(modules=shop(), sandbox=MontySandbox()) as runtime:
        results = await asyncio.gather(*[runtime.acquire() for _ in range(5)], return_exceptions=True)
        assert all(isinstance(result, RuntimeError) for result in results), results
        assert runtime.leases_held == 0
        monkeypatch.undo()
        async with runtime.lease() as lease:
            assert len(lease.catalog) == 6
    assert runtime.leases_held == 0


async def test_an_acquire_cancelled_while_its_revision_builds_holds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    builds = _GatedBuilds(monkeypatch)
    async with Runtime(modules=shop(), sandbox=MontySandbox()) as runtime:
        task = asyncio.create_task(runtime.acquire())
        await builds.wait_started()
        task.cancel()
        builds.go.set()
        (outcome,) = await asyncio.gather(task, return_exceptions=True)
        assert isinstance(outcome, asyncio.CancelledError), outcome
        assert runtime.leases_held == 0


async def test_a_lease_whose_scope_is_cancelled_during_the_build_is_given_back(monkeypatch: pytest.MonkeyPatch) -> None:
    builds = _GatedBuilds(monkeypatch)
    entered: list[bool] = []
    async with Runtime(modules=shop(), sandbox=MontySandbox()) as runtime:
        async with anyio.create_task_group() as group:

            async def use_a_lease() -> None:
                async with runtime.lease():
                    entered.append(True)
                    await anyio.lowlevel.checkpoint()
                    entered.append(False)  # never reached: the scope was cancelled

            group.start_soon(use_a_lease)
            await builds.wait_started()
            group.cancel_scope.cancel()
            builds.go.set()
        assert entered in ([], [True])
        assert runtime.leases_held == 0


# --- One run's searches never hold up another's ----------------------------------------------


async def test_one_runs_stuck_searches_never_queue_another_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    entered = threading.Semaphore(0)
    ranked = Catalog.ranked

    def gated(self: Catalog, texts: Sequence[str], stems: Any, limit: int) -> Any:
        if any("hog" in text for text in texts):
            entered.release()
            release.wait(30)
        return ranked(self, texts, stems, limit)

    monkeypatch.setattr(Catalog, "ranked", gated)
    hog = "import asyncio\nreturn len(await asyncio.gather(*[forage.search(f'hog {i}') for i in range(20)]))"
    other = "return [e['path'] for e in await forage.search('refund', limit=1)]"
    async with Runtime(modules=shop(), sandbox=MontySandbox(), execution=ExecutionOptions(timeout_ms=30_000)) as rt:
        async with rt.lease() as hog_lease, rt.lease() as lease, anyio.create_task_group() as group:
            hogged: list[Any] = []

            async def hog_run() -> None:
                hogged.append(await hog_lease.execute_tool.run(hog))

            group.start_soon(hog_run)
            try:
                for _ in range(2):  # both of the hog's discovery threads are stuck, the rest queued
                    await anyio.to_thread.run_sync(entered.acquire, True, 30)
                with anyio.fail_after(QUICK_BOUND_S * 5):
                    result = await lease.execute_tool.run(other)
            finally:
                release.set()
        assert result.value == ["pay.refunds.create"], result.text
        assert hogged[0].value == 20, hogged[0].text


# --- Acquires waiting on a build that is cancelled or fails --------------------------------


async def test_acquires_waiting_on_a_build_whose_scope_is_cancelled_get_its_one_catalog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    builds = _GatedBuilds(monkeypatch)
    leases: list[Any] = []
    async with Runtime(modules=shop(), sandbox=MontySandbox()) as runtime:
        async with anyio.create_task_group() as group:
            builder = anyio.CancelScope()

            async def build_then_cancelled() -> None:
                with builder:
                    async with runtime.lease():
                        await anyio.lowlevel.checkpoint()

            async def wait_for_it() -> None:
                leases.append(await runtime.acquire())

            group.start_soon(build_then_cancelled)
            await builds.wait_started()
            for _ in range(3):
                group.start_soon(wait_for_it)
            await anyio.wait_all_tasks_blocked()
            builder.cancel()
            builds.go.set()
        try:
            assert builds.count == 1
            assert len({id(lease.catalog) for lease in leases}) == 1
            assert runtime.leases_held == 3
        finally:
            for lease in leases:
                await lease.release()
        assert runtime.leases_held == 0


async def test_acquires_waiting_on_a_builder_cancelled_by_asyncio_still_get_leases(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    builds = _GatedBuilds(monkeypatch)
    async with Runtime(modules=shop(), sandbox=MontySandbox()) as runtime:
        builder = asyncio.create_task(runtime.acquire())
        await builds.wait_started()
        waiters = [asyncio.create_task(runtime.acquire()) for _ in range(3)]
        await anyio.wait_all_tasks_blocked()
        builder.cancel()  # as asyncio.timeout() or wait_for() would
        builds.go.set()
        outcomes = await asyncio.gather(builder, *waiters, return_exceptions=True)
        assert isinstance(outcomes[0], asyncio.CancelledError)
        leases = outcomes[1:]
        try:
            assert len({id(lease.catalog) for lease in leases}) == 1, leases  # type: ignore[union-attr]
            assert runtime.leases_held == 3
        finally:
            for lease in leases:
                await lease.release()  # type: ignore[union-attr]
        assert runtime.leases_held == 0


async def test_close_during_a_build_returns_once_its_acquires_are_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    builds = _GatedBuilds(monkeypatch)
    async with Runtime(modules=shop(), sandbox=MontySandbox()) as runtime:
        acquiring = [asyncio.create_task(runtime.acquire()) for _ in range(3)]
        await builds.wait_started()
        closing = asyncio.create_task(runtime.close())
        await anyio.wait_all_tasks_blocked()
        assert not closing.done()  # it waits for the acquires in progress
        for task in acquiring:
            task.cancel()
        builds.go.set()
        with anyio.fail_after(10):
            await closing
        assert all(task.cancelled() for task in acquiring)
        assert runtime.leases_held == 0


def test_one_semantic_ranker_shared_by_runtimes_on_two_threads_ranks_as_each_alone() -> None:
    from mycelium.semantic import WordLlamaRanker

    queries = ["refund a charge", ["post a message", "tell the channel"], "update a customer", "!!!", "zzz qqq"]
    program = f"return [[e['path'] for e in await forage.search(q, limit=4)] for q in {queries!r}]"

    async def answers(ranker: SemanticRanker, rounds: int) -> list[Any]:
        found = []
        async with Runtime(modules=shop(), sandbox=MontySandbox(), semantic=ranker) as runtime:
            for _ in range(rounds):
                found.append((await run(runtime, program)).value)
        return found

    wordllama_ranker()  # skips without the extra
    (alone,) = asyncio.run(answers(WordLlamaRanker(), 1))
    assert alone[3] == [], alone
    assert alone[0][0] == "pay.refunds.create", alone
    shared = WordLlamaRanker(cache_size=4)  # a small cache: entries are evicted while the other thread reads
    results: dict[int, list[Any]] = {}
    errors: list[BaseException] = []

    def on_its_own_loop(index: int) -> None:
        try:
            results[index] = asyncio.run(answers(shared, 5))
        except BaseException as error:  # reported below, in the test's own thread
            errors.append(error)

    threads = [threading.Thread(target=on_its_own_loop, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    assert results == {0: [alone] * 5, 1: [alone] * 5}
