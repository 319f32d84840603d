"""Discovery speed: index build, ``search`` and ``describe`` over 10,000 operations, beside FastMCP's BM25.

The catalog is ``generated_catalog()`` from ``bench/catalogs.py``: 1,000 modules x 10
operations with realistic names, one-line descriptions and described input fields,
deterministic in its seed. In the same run, FastMCP's BM25 search (``_BM25Index`` from
``fastmcp.server.transforms.search.bm25``) indexes the same operations, each as the tool
FastMCP would see (name = logical path with dots as underscores, the description, the
input schema) turned into text by FastMCP's own ``_extract_searchable_text``.

    .venv/bin/python bench/discovery.py [--queries N] [--builds N] [--seed N]

Printed: index build (median of a few builds; FastMCP's includes its text extraction, as
ours includes reading the graph), search median and p99 over a few hundred varied
natural-language queries (limit 8 for both; the garbage collector is paused while a
batch is timed, for both engines alike), the ratio ours/FastMCP, describe median and p99
over random paths, and a sanity line: how often an exact path query ranks that path
first. A search of three phrasings (three natural queries at once) is timed too, and,
with the ``semantic`` extra installed, the WordLlama index build (cold, then a new
revision of the same operations, whose vectors are cached by content) and fused search
with one and three phrasings. Then the worst case a guest can make: each ``forage`` binding
(the host step a guest's call runs) with the longest arguments allowed, the search query
made of the catalog's commonest words up to ``MAX_QUERY_WORDS`` distinct ones (and
``MAX_PHRASINGS`` such phrasings at once), over many calls with the garbage collector on:
how long the guest waits, and the longest the event loop stalled meanwhile.

Targets: search median <= 2 ms (one phrasing or three, lexical or fused), and faster than
FastMCP's; lexical index build <= 1 s; no discovery call stalls the loop longer than 5 ms.
Exits 2 when FastMCP (the ``bench`` extra) is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence

from catalogs import (
    DOMAINS,
    VENDORS,
    fastmcp_baseline,
    fastmcp_tool_name,
    generated_catalog,
    operation_count,
    plural,
)
from stats import percentile

from mycelium import Module
from mycelium._discovery import (
    MAX_PATH_CHARS,
    MAX_PHRASINGS,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    Catalog,
    SemanticRanker,
    forage_bindings,
)
from mycelium._graph import OperationGraph, build_graph
from mycelium._values import JsonValue

LIMIT = 8
TARGET_SEARCH_MS = 2.0
TARGET_BUILD_MS = 1_000.0
TARGET_LOOP_HOLD_MS = 5.0

# Ways a model phrases a need, by the verb it maps to; {r} is a resource, {rs} its plural.
_PHRASES: dict[str, tuple[str, ...]] = {
    "list": ("show me all the {rs}", "list {rs}", "what {rs} do we have", "all open {rs} for this quarter"),
    "get": ("look up {r} details", "get the {r} with id 4821", "show me that {r}", "details of {r}"),
    "create": ("create a new {r}", "add a {r} for the new client", "set up a {r}", "make another {r}"),
    "update": ("change the {attr} of the {r}", "edit the {r}", "rename the {r}", "fix the {attr} on a {r}"),
    "delete": ("delete the {r}", "remove that {r}", "get rid of the old {rs}", "permanently erase a {r}"),
    "search": ("find {rs} matching acme", "search {rs} by {attr}", "which {r} has {attr} berlin"),
    "export": ("download all {rs} as csv", "export the {rs} to a spreadsheet", "dump {rs} to json"),
    "stats": ("how many {rs} were there last month", "{r} totals by week", "trend of {rs} this year"),
    "approve": ("approve the pending {r}", "sign off on the {r}"),
    "cancel": ("cancel the {r}", "call off the {r} for tomorrow"),
    "assign": ("assign the {r} to maria", "give the {r} to the support team"),
    "history": ("who changed the {r}", "audit trail of edits to the {r}"),
    "notify": ("email the owner about the {r}", "send an sms reminder about the {r}"),
    "archive": ("archive old {rs}", "hide the {r} from the list"),
    "publish": ("make the {r} public", "publish the draft {r}"),
}
_ATTRIBUTES = ("status", "owner", "due date", "priority", "amount", "email", "region", "price", "address", "name")
_SUFFIXES = ("", "", "", " please", " asap", " for the quarterly review", " in production", " from last week")


def natural_queries(count: int, seed: int) -> list[str]:
    """``count`` varied natural-language queries about the generated catalog's domains."""
    rng = random.Random(seed)
    domains = sorted(DOMAINS)
    verbs = sorted(_PHRASES)
    queries: list[str] = []
    while len(queries) < count:
        domain = rng.choice(domains)
        resource = rng.choice(DOMAINS[domain]).replace("_", " ")
        text = rng.choice(_PHRASES[rng.choice(verbs)]).format(
            r=resource, rs=plural(resource), attr=rng.choice(_ATTRIBUTES)
        )
        roll = rng.random()
        if roll < 0.25:
            text += f" in {domain}"
        elif roll < 0.35:
            text += f" in {rng.choice(VENDORS)} {domain}"
        elif roll < 0.4:
            text = resource  # a bare keyword
        queries.append(text + rng.choice(_SUFFIXES))
    return queries


def timed_ms(calls: Sequence[Callable[[], object]], warmup: int = 20) -> list[float]:
    """Milliseconds per call, after a few untimed warm-up calls; GC off while timing."""
    for call in calls[:warmup]:
        call()
    samples: list[float] = []
    gc.disable()
    try:
        for call in calls:
            started = time.perf_counter_ns()
            call()
            samples.append((time.perf_counter_ns() - started) / 1e6)
    finally:
        gc.enable()
    return samples


def line(name: str, samples: Sequence[float], unit: str = "ms", scale: float = 1.0) -> str:
    return (
        f"{name:<22} median {statistics.median(samples) * scale:9.3f} {unit}  "
        f"p99 {percentile(samples, 0.99) * scale:9.3f} {unit}  (n={len(samples)})"
    )


def main(query_count: int, builds: int, seed: int) -> int:
    baseline = fastmcp_baseline()
    started = time.perf_counter()
    modules = generated_catalog(seed=seed)
    graph = build_graph(modules, revision=1)
    setup = time.perf_counter() - started
    targets = list(graph.operations())
    paths = [target.path for target in targets]
    print(
        f"catalog: {len(modules)} modules, {operation_count(modules)} operations "
        f"(generated and installed in {setup:.1f} s); FastMCP {baseline.version}"
    )

    # Index build.
    build_ms: list[float] = []
    catalog = Catalog(graph)
    for _ in range(builds):
        gc.collect()
        begun = time.perf_counter_ns()
        catalog = Catalog(graph)
        build_ms.append((time.perf_counter_ns() - begun) / 1e6)
    tools = [
        baseline.tool_class(
            name=fastmcp_tool_name(target.path),
            description=target.operation.description,
            parameters=target.operation.input_schema,
        )
        for target in targets
    ]
    fastmcp_build_ms: list[float] = []
    index = baseline.index_class()
    for _ in range(builds):
        gc.collect()
        begun = time.perf_counter_ns()
        index = baseline.index_class()
        index.build([baseline.extract(tool) for tool in tools])
        fastmcp_build_ms.append((time.perf_counter_ns() - begun) / 1e6)

    # Search: the same queries, the same limit.
    queries = natural_queries(query_count, seed + 1)
    ours = timed_ms([lambda q=q: catalog.search(q, limit=LIMIT) for q in queries])
    theirs = timed_ms([lambda q=q: index.query(q, LIMIT) for q in queries])
    triples = [queries[start : start + 3] for start in range(0, len(queries) - 2, 3)]
    ours_3 = timed_ms([lambda t=t: catalog.search(t, limit=LIMIT) for t in triples])

    # Describe random operation paths.
    rng = random.Random(seed + 2)
    sample = rng.sample(paths, min(300, len(paths)))
    described = timed_ms([lambda path=path: catalog.describe(path) for path in sample])

    # Sanity: an exact path query should rank that path first.
    exact = rng.sample(paths, 200)
    exact_first = sum(bool((found := catalog.search(path, limit=LIMIT)) and found[0].path == path) for path in exact)
    agree = sum(
        bool((mine := catalog.search(q, limit=1)) and (their := index.query(q, 1)) and mine[0].path == paths[their[0]])
        for q in queries
    )

    print()
    print(line("index build  ours", build_ms))
    print(line("index build  FastMCP", fastmcp_build_ms))
    print(line("search       ours", ours))
    print(line("search       FastMCP", theirs))
    print(line("search x3    ours", ours_3))
    print(line("describe     ours", described))
    ratio = statistics.median(ours) / statistics.median(theirs)
    ratio_p99 = percentile(ours, 0.99) / percentile(theirs, 0.99)
    print()
    print(f"search ours/FastMCP: median {ratio:.3f}x  p99 {ratio_p99:.3f}x  ({1 / ratio:.1f}x faster at the median)")
    build_ratio = statistics.median(build_ms) / statistics.median(fastmcp_build_ms)
    print(f"index build ours/FastMCP: median {build_ratio:.2f}x")
    slowest = sorted(zip(ours, queries, strict=True), reverse=True)[:3]
    print("slowest searches (ours):", "; ".join(f"{ms:.2f} ms {query!r}" for ms, query in slowest))
    print(f"exact path queries ranked first: {exact_first}/{len(exact)}")
    print(f"top-1 agreement with FastMCP on the natural queries: {agree}/{len(queries)}")
    median = max(statistics.median(ours), statistics.median(ours_3))
    build = statistics.median(build_ms)
    print(
        f"targets: search median <= {TARGET_SEARCH_MS:g} ms (1 and 3 phrasings): "
        f"{'ok' if median <= TARGET_SEARCH_MS else 'MISSED'}; faster than FastMCP: {'ok' if ratio < 1 else 'MISSED'}; "
        f"index build <= {TARGET_BUILD_MS:g} ms: {'ok' if build <= TARGET_BUILD_MS else 'MISSED'}"
    )
    print("\nsample queries:", "; ".join(repr(q) for q in queries[:6]))
    worst_case(catalog)
    ranker = semantic_ranker()
    if ranker is not None:
        fused = semantic(modules, graph, ranker, queries, triples)
        worst_case(fused, label="fused")
    return 0


def semantic_ranker() -> SemanticRanker | None:
    """WordLlama, loaded (and timed) when the semantic extra is installed."""
    try:
        from mycelium.semantic import WordLlamaRanker, load_wordllama
    except ImportError:
        print("\n(semantic: the semantic extra is not installed; skipped)")
        return None
    started = time.perf_counter()
    load_wordllama()
    print(f"\nsemantic: WordLlama loaded in {(time.perf_counter() - started) * 1e3:.0f} ms")
    return WordLlamaRanker()


def semantic(
    modules: Sequence[Module],
    graph: OperationGraph,
    ranker: SemanticRanker,
    queries: Sequence[str],
    triples: Sequence[Sequence[str]],
) -> Catalog:
    """Index build (cold, then a new revision served from the cache) and fused search speed."""
    gc.collect()
    begun = time.perf_counter_ns()
    catalog = Catalog(graph, ranker)
    cold_ms = (time.perf_counter_ns() - begun) / 1e6
    gc.collect()
    begun = time.perf_counter_ns()
    catalog = Catalog(build_graph(modules, revision=2), ranker)
    warm_ms = (time.perf_counter_ns() - begun) / 1e6
    print(f"index build  fused     cold {cold_ms:9.1f} ms  a new revision, same operations {warm_ms:9.1f} ms")
    fused = timed_ms([lambda q=q: catalog.search(q, limit=LIMIT) for q in queries])
    fused_3 = timed_ms([lambda t=t: catalog.search(t, limit=LIMIT) for t in triples])
    print(line("search       fused", fused))
    print(line("search x3    fused", fused_3))
    median = max(statistics.median(fused), statistics.median(fused_3))
    print(f"target: fused search median <= {TARGET_SEARCH_MS:g} ms: {'ok' if median <= TARGET_SEARCH_MS else 'MISSED'}")
    return catalog


def maximal_queries(catalog: Catalog, count: int = MAX_PHRASINGS) -> list[str]:
    """The hardest phrasings: the catalog's commonest words, as many as one search may hold.

    Each phrasing is a different rotation of one pool of the commonest words, as long as a
    phrasing may be; the pool grows while the phrasings together stay within every limit.
    """
    frequency: Counter[str] = Counter()
    for target in catalog.targets:
        text = f"{target.path} {target.operation.description} {target.operation.input_schema}"
        frequency.update({word.lower() for word in re.findall(r"[A-Za-z]{2,}", text)})
    commonest = [word for word, _ in sorted(frequency.items(), key=lambda item: (-item[1], item[0]))]

    def phrasings(pool: list[str]) -> list[str]:
        queries: list[str] = []
        for index in range(count):
            shift = index * len(pool) // count
            query = ""
            for word in pool[shift:] + pool[:shift]:
                longer = f"{query} {word}".strip()
                if len(longer) > MAX_QUERY_CHARS:
                    break
                try:
                    catalog.search(longer)
                except ValueError:  # one distinct word too many for a phrasing
                    break
                query = longer
            queries.append(query)
        return queries

    pool: list[str] = []
    for word in commonest:
        try:
            catalog.search(phrasings([*pool, word]))
        except ValueError:  # one distinct word too many for a search
            break
        pool.append(word)
    return phrasings(pool)


def worst_case(catalog: Catalog, calls: int = 200, label: str = "lexical") -> None:
    """Time each forage binding with the hardest arguments allowed, and how long the event loop stalls meanwhile.

    Wall time is what the guest waits. Search and describe run in worker threads; the loop
    still shares the interpreter with them, so a probe task beside the calls, waking every
    half millisecond, measures the longest the loop went without running (its stall).
    """
    forage = forage_bindings(catalog)
    phrasings = maximal_queries(catalog)
    query = phrasings[0]
    cases: dict[str, tuple[str, JsonValue]] = {
        "search, maximal query": ("search", {"query": query, "limit": MAX_SEARCH_LIMIT}),
        f"search, {MAX_PHRASINGS} maximal phrasings": ("search", {"query": phrasings, "limit": MAX_SEARCH_LIMIT}),
        "describe, unknown path": ("describe", {"path": query[:MAX_PATH_CHARS]}),
        "describe, everything": ("describe", {"path": ""}),
        "list, everything": ("list", {"prefix": ""}),
    }
    tick = 0.0005

    async def probe(stalls: list[float], done: asyncio.Event) -> None:
        while not done.is_set():
            started = time.perf_counter()
            await asyncio.sleep(tick)
            stalls.append((time.perf_counter() - started - tick) * 1e3)

    async def measure() -> dict[str, tuple[list[float], list[float]]]:
        held: dict[str, tuple[list[float], list[float]]] = {}
        for name, (helper, arguments) in cases.items():
            wall, stalls = held[name] = ([], [])
            done = asyncio.Event()
            prober = asyncio.create_task(probe(stalls, done))
            for _ in range(calls):
                started = time.perf_counter_ns()
                await forage[helper](arguments)
                wall.append((time.perf_counter_ns() - started) / 1e6)
            done.set()
            await prober
        return held

    held = asyncio.run(measure())
    print(f"\nworst case, {label} ({calls} calls each, GC on; a {len(query)}-character query: {query!r})")
    for name, (wall, stalls) in held.items():
        print(f"{line(name, wall)}  max {max(wall):7.3f} ms  loop stall max {max(stalls, default=0.0):6.3f} ms")
    worst = max(max(stalls, default=0.0) for _, stalls in held.values())
    print(
        f"target: no discovery call stalls the event loop over {TARGET_LOOP_HOLD_MS:g} ms: "
        f"{'ok' if worst <= TARGET_LOOP_HOLD_MS else 'MISSED'} (longest {worst:.2f} ms)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=400, help="natural-language queries to time (default 400)")
    parser.add_argument("--builds", type=int, default=5, help="index builds to time (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="catalog seed (default 0)")
    arguments = parser.parse_args()
    raise SystemExit(main(arguments.queries, arguments.builds, arguments.seed))
