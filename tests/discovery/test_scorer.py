"""The lexical scorer ranks exactly as the one it replaced: same operations, same order, every query.

``golden/rankings.json`` holds what the dict-based scorer (up to the array scorer's commit)
returned for a few hundred searches over a generated catalog of 2,000 operations: one
phrasing and several, limits from 1 to 50, common and rare words, close relatives and
unknown words; once with the merge budget as shipped and once with a budget so small that
almost every search goes through the shortlist. Regenerate it only for a change that means
to rank differently: ``.venv/bin/python -m tests.discovery.test_scorer``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from mycelium import Module, operation
from mycelium._discovery import Catalog
from mycelium._graph import build_graph

GOLDEN = Path(__file__).parent / "golden" / "rankings.json"
_VERBS = [
    "list",
    "get",
    "create",
    "update",
    "delete",
    "search",
    "archive",
    "export",
    "approve",
    "cancel",
    "assign",
    "publish",
    "send",
    "sync",
]
_THINGS = [
    "note",
    "task",
    "invoice",
    "ticket",
    "order",
    "contact",
    "file",
    "event",
    "message",
    "record",
    "payment",
    "refund",
    "customer",
    "account",
    "project",
    "report",
    "channel",
    "calendar",
    "meeting",
    "reminder",
    "playlist",
    "photo",
    "document",
    "issue",
    "build",
]
_WORDS = [
    "the",
    "of",
    "a",
    "new",
    "all",
    "old",
    "draft",
    "pending",
    "open",
    "closed",
    "shared",
    "recent",
    "remove",
    "erase",
    "trash",
    "make",
    "add",
    "book",
    "post",
    "find",
    "locate",
    "fetch",
    "view",
    "change",
    "edit",
    "rename",
    "move",
    "done",
    "finish",
    "approve",
    "accept",
    "money",
    "fund",
    "bug",
    "problem",
    "status",
    "owner",
    "due",
    "priority",
    "amount",
    "email",
    "region",
    "price",
    "address",
    "name",
    "total",
    "week",
    "month",
    "year",
    "team",
]
_FIELDS = ("status", "owner", "due_date", "priority", "amount", "email", "region", "limit", "cursor", "query")


def _noop() -> None:
    return None


def catalog_modules(count: int = 200, seed: int = 7) -> list[Module]:
    """``count`` modules of ten operations, their words drawn from one vocabulary (deterministic)."""
    rng = random.Random(seed)
    modules = []
    for index in range(count):
        operations: dict[str, Any] = {}
        while len(operations) < 10:
            key = f"{rng.choice(_THINGS)}s.{rng.choice(_VERBS)}"
            description = " ".join(rng.choice(_WORDS + _THINGS + _VERBS) for _ in range(rng.randint(3, 12)))
            phrasings = [" ".join(rng.sample(_WORDS, 3))] if rng.random() < 0.2 else None
            schema = None
            if rng.random() < 0.1:
                fields = rng.sample(_FIELDS, rng.randint(1, 3))
                schema = {
                    "type": "object",
                    "properties": {name: {"type": "string", "description": rng.choice(_WORDS)} for name in fields},
                }
            operations[key] = operation(
                input=schema, execute=_noop, description=description.capitalize() + ".", phrasings=phrasings
            )
        modules.append(Module(id=f"app-{index:03d}", name=f"app_{index:03d}", operations=operations))
    return modules


def searches(count: int = 240, seed: int = 11) -> list[tuple[str | list[str], int]]:
    """Queries of one to four phrasings, with limits from 1 to 50 (deterministic)."""
    rng = random.Random(seed)
    vocabulary = [*_VERBS, *_THINGS, *_WORDS, "zebra", "qwerty"]
    made: list[tuple[str | list[str], int]] = []
    for _ in range(count):
        phrasings = [" ".join(rng.sample(vocabulary, rng.randint(1, 7))) for _ in range(rng.randint(1, 4))]
        made.append((phrasings[0] if len(phrasings) == 1 else phrasings, rng.choice([1, 3, 8, 20, 50])))
    return made


def rankings(catalog: Catalog) -> list[list[str]]:
    return [[entry.path for entry in catalog.search(query, limit)] for query, limit in searches()]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog(build_graph(catalog_modules(), revision=1))


def test_every_search_ranks_the_same_operations_in_the_same_order_as_the_scorer_it_replaced(catalog: Catalog) -> None:
    expected = json.loads(GOLDEN.read_text())["shipped"]
    found = rankings(catalog)
    differing = [index for index, (mine, theirs) in enumerate(zip(found, expected, strict=True)) if mine != theirs]
    assert not differing, f"{len(differing)} searches rank differently, first {searches()[differing[0]]}"


def test_searches_cut_short_by_the_merge_budget_rank_as_they_did_too(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mycelium._discovery._ranking._MERGE_BUDGET", 120)
    monkeypatch.setattr("mycelium._discovery._ranking._SHORTLIST", 12)
    expected = json.loads(GOLDEN.read_text())["small budget"]
    assert rankings(catalog) == expected


if __name__ == "__main__":
    built = Catalog(build_graph(catalog_modules(), revision=1))
    golden: dict[str, list[list[str]]] = {"shipped": rankings(built)}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("mycelium._discovery._ranking._MERGE_BUDGET", 120)
        patch.setattr("mycelium._discovery._ranking._SHORTLIST", 12)
        golden["small budget"] = rankings(built)
    # One ranking a line: a change shows as the searches it changed.
    lines = ",\n".join(
        f"{json.dumps(key)}: [\n" + ",\n".join(map(json.dumps, found)) + "\n]" for key, found in golden.items()
    )
    GOLDEN.write_text("{\n" + lines + "\n}\n")
    print(f"wrote {GOLDEN}")
