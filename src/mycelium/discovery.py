"""The discovery catalog of one graph revision: search, list and describe (``forage`` in a guest).

A catalog is built once per revision and describes exactly that graph. Entries use the
complete logical path (``apps.bazaar.windows.open``) and stay short. Search ranks with
BM25 over path segments, names, descriptions and input field names and descriptions;
an exact path or name match ranks first. Every output is bounded.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .bindings import BindingCallback
from .graph import InstalledOperation, OperationGraph
from .operations import AccessLabel
from .stubs import StubRenderer
from .text import clip
from .values import JsonValue

__all__ = [
    "DEFAULT_SEARCH_LIMIT",
    "FORAGE_MODULE_ID",
    "FORAGE_STUB",
    "MAX_DESCRIBE_CHARS",
    "MAX_LIST_ENTRIES",
    "MAX_SEARCH_LIMIT",
    "Catalog",
    "CatalogEntry",
    "NamespaceStubs",
    "forage_bindings",
]

DEFAULT_SEARCH_LIMIT = 8
MAX_SEARCH_LIMIT = 50
MAX_DESCRIBE_CHARS = 8_000
MAX_LIST_ENTRIES = 200
FORAGE_MODULE_ID = "mycelium.forage"
"""The stable id under which ``forage`` appears in a sandbox request's ``modules``."""
_MAX_LINE_CHARS = 160
# BM25 parameters (Okapi defaults), and how much each field counts: names say most.
_K1 = 1.2
_B = 0.75
_FIELD_WEIGHTS = {"name": 3, "path": 2, "description": 2, "fields": 1}
# Query words also reach their close relatives, at this fraction of their weight.
_RELATED_WEIGHT = 0.5
_MAX_CACHED_CONCEPTS = 4_096
_STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "get", "give", "i", "in",
        "into", "is", "it", "me", "my", "of", "on", "or", "our", "please", "show", "some", "that", "the",
        "their", "them", "there", "this", "to", "up", "us", "we", "what", "whats", "where", "which", "who",
        "with", "you", "your",
    }
)


@dataclass(frozen=True)
class CatalogEntry:
    """One operation as discovery shows it."""

    path: str
    description: str
    """The first line of the operation's description, clipped; empty when it has none."""
    access: AccessLabel
    confirm: bool

    def to_json(self) -> dict[str, object]:
        """The entry as a JSON object."""
        return {"path": self.path, "description": self.description, "access": self.access, "confirm": self.confirm}


class Catalog:
    """The operations of one graph revision, ordered by logical path, with a search index."""

    def __init__(self, graph: OperationGraph) -> None:
        self.revision = graph.revision
        self.targets: tuple[InstalledOperation, ...] = tuple(graph.operations())
        """The installed operations, in the same order as :attr:`entries` (host-side)."""
        self.entries: tuple[CatalogEntry, ...] = tuple(
            CatalogEntry(
                path=target.path,
                description=_one_line(target.operation.description),
                access=target.operation.access,
                confirm=target.operation.confirm,
            )
            for target in self.targets
        )
        self._by_path = {entry.path: index for index, entry in enumerate(self.entries)}
        self._by_name: dict[str, list[int]] = defaultdict(list)
        for index, entry in enumerate(self.entries):
            segments = entry.path.split(".")
            for start in range(len(segments)):
                self._by_name[".".join(segments[start:]).lower()].append(index)
        self._index = _Bm25(_document(target) for target in self.targets)

    def search(self, query: str, limit: int = DEFAULT_SEARCH_LIMIT) -> list[CatalogEntry]:
        """The entries that best match ``query``, best first; an exact path or name ranks first."""
        if not isinstance(query, str):
            raise TypeError(f"search query must be a string, got {type(query).__name__}")
        if type(limit) is not int or not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ValueError(f"search limit must be an int from 1 to {MAX_SEARCH_LIMIT}, got {limit!r}")
        wanted = query.strip().lower()
        exact = self._by_name.get(wanted, [])
        if wanted in self._by_path:
            exact = [self._by_path[wanted], *exact]
        ranked = list(dict.fromkeys([*exact, *self._index.top(_tokens(query), limit + len(exact))]))
        return [self.entries[index] for index in ranked[:limit]]

    def list(self, prefix: str = "") -> list[CatalogEntry]:
        """Entries at ``prefix`` or below it, by whole path segments (``apps`` matches ``apps.x``, not ``appsx``)."""
        return [self.entries[index] for index in self._under(prefix)]

    def describe(self, path: str, max_chars: int = MAX_DESCRIBE_CHARS) -> str:
        """Python stubs for the operation at ``path``, or for everything under a prefix, bounded.

        An unknown path gives a short text saying so and suggesting close matches.
        """
        indexes = list(self._under(path.strip()))
        if not indexes:
            close = ", ".join(entry.path for entry in self.search(path, 3)) if path.strip() else ""
            shown = clip(path, 100)
            return f"# No operation or namespace {shown!r}." + (f" Close matches: {close}" if close else "")
        return render_bounded([self.targets[index] for index in indexes], max_chars, prefix=path.strip())

    def stubs(self) -> str:
        """Every operation as a stub, unbounded (for hosts and type checkers, not for a model)."""
        return StubRenderer().render(self.targets)

    def _under(self, prefix: str) -> Iterator[int]:
        if not prefix:
            yield from range(len(self.entries))
            return
        for index, entry in enumerate(self.entries):
            if entry.path == prefix or entry.path.startswith(prefix + "."):
                yield index

    def __len__(self) -> int:
        return len(self.entries)


_STUB_HEADER = "import builtins\nfrom typing import Any, Literal, NotRequired, TypedDict\n\n"
_ENTRIES = "builtins.list[builtins.dict[builtins.str, Any]]"
FORAGE_STUB = (
    _STUB_HEADER
    + f"async def search(query: builtins.str, limit: builtins.int = {DEFAULT_SEARCH_LIMIT}) -> {_ENTRIES}: ...\n"
    + f'async def list(prefix: builtins.str = "") -> {_ENTRIES}: ...\n'
    + "async def describe(path: builtins.str) -> builtins.str: ...\n"
)
"""The stub of the guest's ``forage`` namespace, for type checking programs."""


class NamespaceStubs(Mapping[str, str]):
    """Logical namespace path -> stub source of the operations directly in it (and their types).

    For sandboxes that type-check programs. Rendered on first use, then kept: a revision's
    stubs never change.
    """

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._stubs: dict[str, str] | None = None

    def _rendered(self) -> dict[str, str]:
        if self._stubs is None:
            groups: dict[str, list[InstalledOperation]] = defaultdict(list)
            for target in self._catalog.targets:
                groups[target.path.rsplit(".", 1)[0]].append(target)
            self._stubs = {"forage": FORAGE_STUB}
            for path, members in groups.items():
                self._stubs[path] = _STUB_HEADER + StubRenderer(qualified=True).render(members)
        return self._stubs

    def __getitem__(self, path: str) -> str:
        return self._rendered()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rendered())

    def __len__(self) -> int:
        return len(self._rendered())


def forage_bindings(catalog: Catalog) -> dict[str, BindingCallback]:
    """``forage.search``, ``forage.list`` and ``forage.describe`` as a guest calls them.

    Each takes one string or keyword arguments and returns JSON. They consume no
    operation ordinals and need no grant: discovery shows labels, never runs anything.
    """

    async def search(value: JsonValue) -> JsonValue:
        query, limit = _arguments(value, "query", {"limit": DEFAULT_SEARCH_LIMIT})
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise TypeError("forage.search(limit=...) must be an int")
        return [entry.to_json() for entry in catalog.search(_text(query, "query"), limit)]  # type: ignore[misc]

    async def list_(value: JsonValue) -> JsonValue:
        prefix, _ = _arguments(value, "prefix", {}, default="")
        found = catalog.list(_text(prefix, "prefix"))
        shown: list[JsonValue] = [entry.to_json() for entry in found[:MAX_LIST_ENTRIES]]  # type: ignore[misc]
        if len(found) > MAX_LIST_ENTRIES:
            more = len(found) - MAX_LIST_ENTRIES
            shown.append({"more": more, "hint": f"{more} more operations: list a longer prefix or search"})
        return shown

    async def describe(value: JsonValue) -> JsonValue:
        path, _ = _arguments(value, "path", {})
        return catalog.describe(_text(path, "path"))

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
    unknown = sorted(set(value) - {main, *options})
    if unknown:
        raise TypeError(f"forage got unexpected argument(s) {', '.join(unknown)}")
    if main not in value and default is None:
        raise TypeError(f"forage needs the argument {main!r}")
    option = next(iter(options), None)
    return value.get(main, default), value.get(option, options[option]) if option else None


def _text(value: JsonValue, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"forage {name} must be a string, got {type(value).__name__}")
    return value


def render_bounded(targets: list[InstalledOperation], max_chars: int, *, prefix: str = "") -> str:
    """Stubs for ``targets`` within ``max_chars``; what did not fit is counted, never cut silently."""
    renderer = StubRenderer()
    stubs: list[str] = []
    left_out = ""
    for shown, target in enumerate(targets):
        state = renderer.checkpoint()
        stub = renderer.operation(target)
        if stubs and len(_join(renderer.declarations(), [*stubs, stub])) > max_chars - 200:
            renderer.restore(state)  # its types go with it
            left = len(targets) - shown
            where = f" under {prefix}" if prefix else ""
            left_out = (
                f"\n# ... {left} more operation{'s' if left != 1 else ''}{where} not shown: "
                "describe a longer path, or use forage.search(...).\n"
            )
            break
        stubs.append(stub)
    text = _join(renderer.declarations(), stubs)
    if len(text) + len(left_out) > max_chars:
        marker = "\n# ... the rest of this declaration is too long to show.\n"
        text = text[: max(0, max_chars - len(marker) - len(left_out))] + marker
    return text + left_out


def _join(declarations: str, stubs: list[str]) -> str:
    return declarations + ("\n" if declarations else "") + "\n".join(stubs)


def namespace_tree(catalog: Catalog, max_chars: int) -> str:
    """The namespaces of ``catalog`` with their operation counts, bounded."""
    counts: Counter[str] = Counter()
    for entry in catalog.entries:
        segments = entry.path.split(".")[:-1]
        for depth in range(1, min(len(segments), 3) + 1):
            counts[".".join(segments[:depth])] += 1
    lines: list[str] = []
    used = 0
    for shown, (name, count) in enumerate(sorted(counts.items())):
        line = f"{'  ' * name.count('.')}{name.rsplit('.', 1)[-1]} ({count} operation{'s' if count != 1 else ''})"
        if used + len(line) + 1 > max_chars - 80:
            lines.append(f"... and {len(counts) - shown} more namespaces: use forage.list(prefix)")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


class _Bm25:
    """Okapi BM25 with per-term postings holding precomputed weights, so a query only adds."""

    def __init__(self, documents: Iterable[Counter[str]]) -> None:
        docs = list(documents)
        self._count = len(docs)
        lengths = [sum(doc.values()) for doc in docs]
        average = (sum(lengths) / len(lengths)) if lengths else 0.0
        frequency: Counter[str] = Counter()
        for doc in docs:
            frequency.update(doc.keys())
        self._postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        self._concepts: dict[str, dict[int, float]] = {}
        for index, (doc, length) in enumerate(zip(docs, lengths, strict=True)):
            norm = _K1 * (1 - _B + _B * length / average) if average else _K1
            for term, tf in doc.items():
                idf = math.log(1 + (self._count - frequency[term] + 0.5) / (frequency[term] + 0.5))
                self._postings[term].append((index, idf * tf * (_K1 + 1) / (tf + norm)))

    def top(self, stems: Iterable[str], limit: int) -> list[int]:
        """The best documents for the query ``stems``, best first.

        Each stem is a concept: the stem itself, or failing that its best-matching close
        relative at a lower weight, counts once per document. The sum is scaled by the share
        of concepts a document covers, so one that answers the whole query beats one that
        repeats a single word of it.
        """
        scores: dict[int, float] = defaultdict(float)
        covered: Counter[int] = Counter()
        concepts = list(dict.fromkeys(stems))
        for stem in concepts:
            for index, score in self._concept(stem).items():
                scores[index] += score
                covered[index] += 1
        total = len(concepts)
        return heapq.nlargest(limit, scores, key=lambda index: (scores[index] * covered[index] / total, -index))

    def _concept(self, stem: str) -> dict[int, float]:
        """Document -> best weighted score of ``stem`` or a relative; the same for every query."""
        cached = self._concepts.get(stem)
        if cached is None:
            cached = dict(self._postings.get(stem, ()))
            for related in _RELATED.get(stem, frozenset()) - {stem}:
                for index, score in self._postings.get(related, ()):
                    if _RELATED_WEIGHT * score > cached.get(index, 0.0):
                        cached[index] = _RELATED_WEIGHT * score
            if len(self._concepts) >= _MAX_CACHED_CONCEPTS:
                self._concepts.clear()
            self._concepts[stem] = cached
        return cached


def _document(target: InstalledOperation) -> Counter[str]:
    op = target.operation
    parts: dict[str, str] = {
        "name": target.relative.replace(".", " "),
        # The module's own description is shared by all its operations: it would only blur them.
        "path": " ".join(target.module.path),
        "description": op.description or "",
        # What it takes and what it gives back: "how big is it" finds the operation returning `size`.
        "fields": " ".join([*_field_words(op.input_schema), *_field_words(op.output_schema)]),
    }
    counts: Counter[str] = Counter()
    for field_name, text in parts.items():
        for token in _tokens(text):
            counts[token] += _FIELD_WEIGHTS[field_name]
    return counts


def _field_words(schema: Mapping[str, Any]) -> list[str]:
    """Property names and descriptions of an object schema, or of the objects in an array of them."""
    words: list[str] = []
    node: object = schema
    for _ in range(3):  # through `items` and one `$ref` to the object itself
        if not isinstance(node, Mapping):
            return words
        if isinstance(node.get("items"), Mapping):
            node = node["items"]
        elif isinstance(node.get("$ref"), str):
            node = _local_definition(schema, node["$ref"])
        else:
            break
    properties = node.get("properties") if isinstance(node, Mapping) else None
    if isinstance(properties, Mapping):
        for name, field in properties.items():
            words.append(str(name))
            if isinstance(field, Mapping) and isinstance(field.get("description"), str):
                words.append(field["description"])
    return words


def _local_definition(root: Mapping[str, Any], reference: str) -> object:
    name = reference.rsplit("/", 1)[-1]
    for key in ("$defs", "definitions"):
        definitions = root.get(key)
        if isinstance(definitions, Mapping) and name in definitions:
            return definitions[name]
    return None


_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def _tokens(text: str) -> list[str]:
    """Lower-case word stems, splitting snake_case, camelCase and dotted paths."""
    words = (word.lower() for word in _WORDS.findall(text))
    return [_stem(word) for word in words if len(word) > 1 and word not in _STOPWORDS]


_VOWELS = frozenset("aeiouy")


@functools.lru_cache(maxsize=16_384)
def _stem(word: str) -> str:
    """A small, consistent suffix stripper in the spirit of Porter's.

    "notes" and "note", "created", "creates", "creating" and "create", "attachment" and
    "attached" each end up as one stem.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses") or word.endswith(("ches", "shes", "xes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ment", "ing", "ed", "ion"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3 and _VOWELS & set(stem):
            if suffix == "ion" and not stem.endswith(("t", "s")):
                continue
            word = stem
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # "stopped" -> "stop"
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


# Close relatives among the words people use for what apps do. General vocabulary, not any
# one catalog's: a word reaches the others in its group at _RELATED_WEIGHT.
_RELATED_GROUPS = (
    "create add new make compose write draft start schedule book post",
    "delete remove cancel trash erase discard drop destroy",
    "update change edit modify set rename move reschedule adjust",
    "list show all browse enumerate",
    "get read view fetch retrieve detail info look",
    "search find look lookup query seek locate",
    "send email mail message post reply forward share notify",
    "event meeting appointment invite invitation calendar",
    "message email mail chat text conversation",
    "file document doc attachment pdf upload download drive folder",
    "track song music tune album artist playlist",
    "pay payment money transfer refund charge bill invoice",
    "balance money fund account",
    "transaction spend spending purchase expense",
    "temperature warm warmer cold colder heat heating cool thermostat",
    "weather forecast rain temperature storm wind",
    "alert warning warn storm",
    "route direction navigate drive travel commute",
    "distance far duration travel",
    "window app application",
    "screenshot screen capture snapshot picture image photo",
    "task todo reminder remind chore",
    "complete done finish check",
    "contact person people user",
    "repo repository project codebase",
    "issue bug ticket problem",
    "pull pr merge review",
    "approve accept review",
    "restore undelete recover",
    "save store keep upload",
    "launch start open run",
    "quit close exit stop",
    "light lamp bright dim",
    "lock unlock door",
    "play resume listen",
    "pause stop",
    "volume loud louder quiet",
    "web internet online",
    "place location venue restaurant shop address",
    "reaction react emoji",
    "comment reply respond",
    "release version publish tag",
    "build ci workflow pipeline action",
    "commit change history",
    "channel conversation room thread",
)


def _relatives() -> dict[str, frozenset[str]]:
    related: dict[str, set[str]] = defaultdict(set)
    for group in _RELATED_GROUPS:
        stems = {_stem(word) for word in group.split()}
        for stem in stems:
            related[stem] |= stems - {stem}
    return {stem: frozenset(others) for stem, others in related.items()}


_RELATED = _relatives()


def _one_line(description: str | None) -> str:
    if not description:
        return ""
    return clip(" ".join(description.strip().splitlines()[0].split()), _MAX_LINE_CHARS)
