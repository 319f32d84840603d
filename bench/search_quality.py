"""Search quality: recall@1/3/8 and MRR of ``Catalog.search`` on two labelled query sets.

- **own**: ``realistic_catalog()`` from ``bench/catalogs.py`` (about 160 operations in 17
  apps) and the 80 queries below, written with that catalog; the related-word groups of
  ``mycelium._discovery`` were written against it too, so it flatters them.
- **held-out**: ``heldout_catalog()`` from ``bench/heldout.py`` (over 200 operations modelled
  on public APIs: Jira, Stripe, PagerDuty, Shopify...) and its queries, written blind
  before any engine ran on them. Never tune on it: it is how a change is judged.

Every query also has two extra phrasings, written at the same time as a model would write
them when told to search two or three ways (the own set's are in ``own_phrasings.py``).

Engines: ``lexical`` (``Catalog`` as shipped), ``semantic`` (WordLlama alone, the
``semantic`` extra) and ``fused`` (``Catalog`` given a ``WordLlamaRanker``); each with one
phrasing and with all three. FastMCP's BM25 over the same operations is the peer (one
phrasing; documents built by FastMCP's own ``_extract_searchable_text``).

    .venv/bin/python bench/search_quality.py [--verbose]

Recall@k: an acceptable path among the first k results. MRR: the mean reciprocal rank of
the first acceptable path within the top 8 (0 when absent). Targets, on the held-out set
with fused multi-phrasing: recall@3 >= 0.85 and recall@8 >= 0.95. Exits 2 when FastMCP
(the ``bench`` extra) or WordLlama (the ``semantic`` extra) is missing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from catalogs import (
    FastMCPBaseline,
    LabelledQuery,
    fastmcp_baseline,
    fastmcp_tool_name,
    operation_count,
    realistic_catalog,
)
from own_phrasings import ALTERNATES

from mycelium import Module
from mycelium._discovery import Catalog, semantic_texts
from mycelium._graph import OperationGraph, build_graph

TOP = 8
TARGET_RECALL_AT_3 = 0.85
TARGET_RECALL_AT_8 = 0.95

# (query, acceptable paths)
OWN_QUERIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # email
    ("find the email Sam sent about the budget", ("email.messages.search",)),
    ("reply to Dana's message and say I'll be there", ("email.messages.reply",)),
    ("forward the invoice email to accounting@acme.com", ("email.messages.forward",)),
    ("send an email to the team with the quarterly report attached", ("email.messages.send",)),
    ("write up a draft to Jordan but don't send it yet", ("email.drafts.create",)),
    ("download the PDF attached to that message", ("email.attachments.get",)),
    ("mark all those newsletters as read", ("email.messages.mark_read",)),
    ("read the whole email conversation with the landlord", ("email.threads.get",)),
    # calendar
    ("move my 3pm meeting to tomorrow", ("calendar.events.update",)),
    ("what's on my calendar next week", ("calendar.events.list",)),
    ("schedule lunch with Priya on Friday at noon", ("calendar.events.create", "calendar.events.quick_add")),
    ("cancel the standup on Thursday", ("calendar.events.delete",)),
    ("accept the invitation to the design review", ("calendar.events.respond",)),
    ("when are Alex and Maria both free on Tuesday", ("calendar.freebusy.query",)),
    # notes
    ("jot down a note with the wifi password for the cabin", ("notes.notes.create",)),
    ("add milk to my shopping list note", ("notes.notes.append", "notes.notes.update")),
    ("look through my notes for the banana bread recipe I saved", ("notes.notes.search",)),
    # files
    ("rename the file Q3 draft.docx to Q3 final.docx", ("files.files.move",)),
    ("share the pitch deck with lena@example.com so she can edit it", ("files.files.share",)),
    ("find the spreadsheet with last year's tax numbers in my drive", ("files.files.search",)),
    ("I deleted a file by mistake, get it back", ("files.trash.restore",)),
    ("how big is backup.zip and when was it last changed", ("files.files.metadata",)),
    ("save this text to a file called summary.txt", ("files.files.upload",)),
    # github
    ("open a bug report in the mycelium repo about the crash on startup", ("github.repos.issues.create",)),
    ("what PRs are waiting for review in acme/web", ("github.repos.pulls.list",)),
    ("squash and merge pull request 42", ("github.repos.pulls.merge",)),
    ("approve Carla's pull request", ("github.repos.pulls.reviews.create",)),
    ("close issue 17 as fixed", ("github.repos.issues.update",)),
    ("leave a comment on issue 88 saying it's a duplicate", ("github.repos.issues.comments.create",)),
    ("why did the CI build fail on main", ("github.actions.runs.list",)),
    ("show me the README of the torvalds/linux repo", ("github.repos.contents.get",)),
    ("which files does PR 311 touch", ("github.repos.pulls.files.list",)),
    ("tag version 2.0 and publish release notes", ("github.repos.releases.create",)),
    ("who changed the config file last week", ("github.repos.commits.list",)),
    # desktop and browser (under apps)
    ("bring the Terminal window to the front", ("apps.desktop.windows.focus",)),
    ("put the editor and the browser side by side", ("apps.desktop.windows.tile",)),
    ("start the Calculator app", ("apps.desktop.applications.launch",)),
    ("take a screenshot", ("apps.desktop.screen.capture",)),
    ("what's on my clipboard", ("apps.desktop.clipboard.read",)),
    ("force quit Photoshop, it's frozen", ("apps.desktop.applications.quit",)),
    ("open https://example.com in the browser", ("apps.browser.tabs.open",)),
    ("which windows are open right now", ("apps.desktop.windows.list",)),
    # contacts
    ("what's Maria Lopez's phone number", ("contacts.people.search", "contacts.people.get")),
    ("save Tom's new work email in my address book", ("contacts.people.update", "contacts.people.create")),
    ("add Jen to the Family group", ("contacts.groups.add_members",)),
    # chat
    ("post in #general that the deploy is done", ("slack.chat.post_message",)),
    ("what did people say in the design channel today", ("slack.conversations.history",)),
    ("set my status to out sick", ("slack.users.profile.set",)),
    ("thumbs-up the last message from Omar", ("slack.reactions.add",)),
    ("DM Kim about tomorrow's release", ("slack.conversations.open", "slack.chat.post_message")),
    # to-dos
    ("remind me to renew my passport by March", ("todo.tasks.create",)),
    ("check off 'buy groceries'", ("todo.tasks.complete",)),
    ("what's still on my to-do list", ("todo.tasks.list",)),
    # music
    ("play some jazz", ("music.player.play", "music.catalog.search")),
    ("skip this song", ("music.player.next",)),
    ("turn the volume down to 30%", ("music.player.set_volume",)),
    ("what song is this", ("music.player.current",)),
    ("make a playlist for my run", ("music.playlists.create",)),
    ("like this track", ("music.library.save_tracks",)),
    # weather
    ("what's the forecast in Lisbon", ("weather.forecast.daily", "weather.forecast.hourly")),
    ("will it rain in the next few hours", ("weather.forecast.hourly",)),
    ("how hot is it outside right now in Phoenix", ("weather.current",)),
    ("is the air clean enough to go running today", ("weather.air_quality.current",)),
    ("any storm warnings for Miami", ("weather.alerts.list",)),
    # maps
    ("how do I get to the airport by train", ("maps.directions.route",)),
    ("find a coffee shop near me that's open now", ("maps.places.search", "maps.places.nearby")),
    ("how long is the drive from Porto to Lisbon", ("maps.directions.route", "maps.distance_matrix")),
    ("what time does the Louvre close today", ("maps.places.details",)),
    ("what are the coordinates of 10 Downing Street", ("maps.geocode",)),
    # payments
    ("pay Alex back 20 euros for dinner", ("payments.transfers.create",)),
    ("how much money do I have in my account", ("payments.balance.get",)),
    ("refund the customer's last order", ("payments.refunds.create",)),
    ("bill Acme Corp for 10 hours of consulting", ("payments.invoices.create",)),
    ("what did I spend last month", ("payments.transactions.list",)),
    ("ask Jamie to pay me for the concert tickets", ("payments.payment_requests.create",)),
    # home
    ("dim the living room lights", ("home.lights.set",)),
    ("make it warmer in the house", ("home.thermostat.set",)),
    ("lock the front door", ("home.locks.lock",)),
    # spreadsheets and web
    ("add a row to the expenses spreadsheet", ("sheets.values.append",)),
    ("look up who won the 2022 World Cup", ("web.search.query",)),
)


@dataclass(frozen=True)
class QuerySet:
    name: str
    modules: list[Module]
    queries: tuple[LabelledQuery, ...]


def query_sets(only: str | None) -> list[QuerySet]:
    sets: list[QuerySet] = []
    if only in (None, "own"):
        own = tuple(LabelledQuery(text, ALTERNATES[text], acceptable, "own") for text, acceptable in OWN_QUERIES)
        sets.append(QuerySet("own", realistic_catalog(), own))
    if only in (None, "held-out"):
        from heldout import HELDOUT_QUERIES, heldout_catalog  # kept apart: it must never be tuned on

        sets.append(QuerySet("held-out", heldout_catalog(), HELDOUT_QUERIES))
    return sets


Search = Callable[[Sequence[str]], list[str]]
"""Phrasings -> ranked paths."""


@dataclass(frozen=True)
class Scores:
    recall: dict[int, float]
    mrr: float
    misses: list[tuple[LabelledQuery, list[str]]]
    """Queries whose acceptable paths are not in the top 3, with what came back."""
    latencies_us: list[float]


def score(search: Search, queries: Sequence[LabelledQuery], multi: bool) -> Scores:
    found_at: list[int | None] = []
    misses: list[tuple[LabelledQuery, list[str]]] = []
    latencies: list[float] = []
    for query in queries:
        phrasings = [query.text, *query.alternates] if multi else [query.text]
        started = time.perf_counter()
        results = search(phrasings)[:TOP]
        latencies.append((time.perf_counter() - started) * 1e6)
        rank = next((index + 1 for index, path in enumerate(results) if path in query.acceptable), None)
        found_at.append(rank)
        if rank is None or rank > 3:
            misses.append((query, results))
    count = len(queries)
    recall = {k: sum(rank is not None and rank <= k for rank in found_at) / count for k in (1, 3, 8)}
    mrr = statistics.fmean(1 / rank if rank else 0.0 for rank in found_at)
    return Scores(recall, mrr, misses, latencies)


def catalog_search(catalog: Catalog) -> Search:
    return lambda phrasings: [entry.path for entry in catalog.search(list(phrasings), limit=TOP)]


def semantic_search(graph: OperationGraph, ranker: object) -> Search:
    """WordLlama alone: the operations nearest in meaning to the phrasings."""
    targets = sorted(graph.operations(), key=lambda target: target.path)
    index = ranker.index([semantic_texts(target) for target in targets])  # type: ignore[attr-defined]

    def search(phrasings: Sequence[str]) -> list[str]:
        return [targets[i].path for i in index.nearest(list(phrasings), TOP)]

    return search


def fastmcp_search(baseline: FastMCPBaseline, graph: OperationGraph) -> Search:
    operations = list(graph.operations())
    index = baseline.index_class()
    index.build(
        [
            baseline.extract(
                baseline.tool_class(
                    name=fastmcp_tool_name(target.path),
                    description=target.operation.description,
                    parameters=target.operation.input_schema,
                )
            )
            for target in operations
        ]
    )
    return lambda phrasings: [operations[i].path for i in index.query(phrasings[0], TOP)]


def check_labels(graph: OperationGraph, queries: Sequence[LabelledQuery], name: str) -> None:
    known = {target.path for target in graph.operations()}
    unknown = sorted({path for query in queries for path in query.acceptable} - known)
    if unknown:
        raise SystemExit(f"{name}: labels name paths that are not in the catalog: {unknown}")


def row(set_name: str, engine: str, phrasings: str, scores: Scores) -> str:
    recall = "  ".join(f"{scores.recall[k]:.3f}" for k in (1, 3, 8))
    return (
        f"{set_name:<9} {engine:<9} {phrasings:<9} {recall}  {scores.mrr:.3f}  "
        f"{statistics.median(scores.latencies_us):8.1f}"
    )


def print_misses(title: str, scores: Scores) -> None:
    print(f"\n{title}: {len(scores.misses)} queries miss the top 3")
    for query, results in scores.misses:
        rank = next((index + 1 for index, path in enumerate(results) if path in query.acceptable), None)
        where = f"rank {rank}" if rank else "not in top 8"
        print(f"  [{query.kind}] {query.text!r}  wants {' | '.join(query.acceptable)}  ({where})")
        for index, path in enumerate(results[:3], start=1):
            print(f"      {index}. {path}")


def main(verbose: bool, only: str | None) -> int:
    baseline = fastmcp_baseline()
    try:
        from mycelium.semantic import WordLlamaRanker, load_wordllama

        started = time.perf_counter()
        load_wordllama()
        load_ms = (time.perf_counter() - started) * 1e3
    except ImportError as exc:
        print(f"search_quality needs the semantic extra: {exc}", file=sys.stderr)
        return 2
    ranker = WordLlamaRanker()
    print(f"FastMCP {baseline.version}; WordLlama loaded in {load_ms:.0f} ms")
    print(f"{'set':<9} {'engine':<9} {'phrasings':<9} R@1    R@3    R@8    MRR    median us")
    verdicts: list[str] = []
    for query_set in query_sets(only):
        graph = build_graph(query_set.modules, revision=1)
        check_labels(graph, query_set.queries, query_set.name)
        lexical = catalog_search(Catalog(graph))
        engines: list[tuple[str, Search]] = [
            ("lexical", lexical),
            ("semantic", semantic_search(graph, ranker)),
            ("fused", catalog_search(Catalog(graph, ranker))),
        ]
        kinds = sorted({query.kind for query in query_set.queries})
        results: dict[tuple[str, bool], Scores] = {}
        for engine, search in engines:
            for multi in (False, True):
                scores = results[engine, multi] = score(search, query_set.queries, multi)
                print(row(query_set.name, engine, "3" if multi else "1", scores))
        print(row(query_set.name, "FastMCP", "1", score(fastmcp_search(baseline, graph), query_set.queries, False)))
        count = f"{len(query_set.queries)} queries over {operation_count(query_set.modules)} operations"
        if len(kinds) > 1:
            for kind in kinds:
                subset = [query for query in query_set.queries if query.kind == kind]
                one, three = (score(engines[2][1], subset, multi) for multi in (False, True))
                print(
                    f"  {kind:<10} ({len(subset):>2})  fused R@3 {one.recall[3]:.3f} -> {three.recall[3]:.3f} "
                    f"with 3 phrasings, R@8 {one.recall[8]:.3f} -> {three.recall[8]:.3f}"
                )
        print(f"  ({count})")
        if query_set.name == "held-out":
            best = results["fused", True]
            for label, value, target in (
                ("recall@3", best.recall[3], TARGET_RECALL_AT_3),
                ("recall@8", best.recall[8], TARGET_RECALL_AT_8),
            ):
                verdicts.append(f"{label} {value:.3f} >= {target}: {'ok' if value >= target else 'MISSED'}")
        if verbose:
            for engine, multi in (("lexical", False), ("fused", True)):
                print_misses(f"{query_set.name}, {engine}, {'3' if multi else '1'} phrasing(s)", results[engine, multi])
    print("\ntargets (held-out, fused, 3 phrasings): " + "; ".join(verdicts))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verbose", action="store_true", help="list the queries that miss the top 3")
    parser.add_argument("--only", choices=["own", "held-out"], help="measure one set")
    arguments = parser.parse_args()
    raise SystemExit(main(arguments.verbose, arguments.only))
