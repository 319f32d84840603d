"""The discovery catalog of one graph revision: search, list and describe (``forage`` in a guest).

A catalog is built once per revision and describes exactly that graph. Entries use the
complete logical path (``apps.bazaar.windows.open``) and stay short. Search ranks with
BM25 over path segments, names, descriptions and input field names and descriptions;
an exact path or name match ranks first. Every output is bounded.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from .bindings import BindingCallback
from .graph import InstalledOperation, OperationGraph
from .operations import AccessLabel
from .stubs import StubRenderer
from .values import JsonValue

__all__ = [
    "DEFAULT_SEARCH_LIMIT",
    "FORAGE_MODULE_ID",
    "MAX_DESCRIBE_CHARS",
    "MAX_LIST_ENTRIES",
    "MAX_SEARCH_LIMIT",
    "Catalog",
    "CatalogEntry",
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
_FIELD_WEIGHTS = {"name": 3, "path": 2, "description": 1, "fields": 1}
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
            return f"# No operation or namespace {path!r}." + (f" Close matches: {close}" if close else "")
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
    for shown, target in enumerate(targets):
        stub = renderer.operation(target)
        text = _join(renderer.declarations(), [*stubs, stub])
        if len(text) > max_chars - 200 and stubs:
            left = len(targets) - shown
            where = f" under {prefix}" if prefix else ""
            return _join(renderer.declarations(), stubs) + (
                f"\n# ... {left} more operations{where} not shown: describe a longer path, "
                "or use forage.search(...).\n"
            )
        stubs.append(stub)
    text = _join(renderer.declarations(), stubs)
    if len(text) > max_chars:
        marker = "\n# ... the rest of this declaration is too long to show.\n"
        return text[: max_chars - len(marker)] + marker
    return text


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
        for index, (doc, length) in enumerate(zip(docs, lengths, strict=True)):
            norm = _K1 * (1 - _B + _B * length / average) if average else _K1
            for term, tf in doc.items():
                idf = math.log(1 + (self._count - frequency[term] + 0.5) / (frequency[term] + 0.5))
                self._postings[term].append((index, idf * tf * (_K1 + 1) / (tf + norm)))

    def top(self, terms: list[str], limit: int) -> list[int]:
        scores: dict[int, float] = defaultdict(float)
        for term, weight in Counter(terms).items():
            for index, score in self._postings.get(term, ()):
                scores[index] += weight * score
        best = heapq.nlargest(limit, scores.items(), key=lambda item: (item[1], -item[0]))
        return [index for index, _ in best]


def _document(target: InstalledOperation) -> Counter[str]:
    op = target.operation
    fields: list[str] = []
    properties = op.input_schema.get("properties")
    if isinstance(properties, Mapping):
        for name, field in properties.items():
            fields.append(str(name))
            if isinstance(field, Mapping) and isinstance(field.get("description"), str):
                fields.append(field["description"])
    module = target.module
    parts: dict[str, str] = {
        "name": target.relative.replace(".", " "),
        "path": " ".join(target.path.split(".")[:-1]) + " " + (module.description or ""),
        "description": op.description or "",
        "fields": " ".join(fields),
    }
    counts: Counter[str] = Counter()
    for field_name, text in parts.items():
        for token in _tokens(text):
            counts[token] += _FIELD_WEIGHTS[field_name]
    return counts


_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def _tokens(text: str) -> list[str]:
    """Lower-case word stems, splitting snake_case, camelCase and dotted paths."""
    return [_stem(word.lower()) for word in _WORDS.findall(text) if word.lower() not in _STOPWORDS]


def _stem(word: str) -> str:
    """A light suffix stripper: enough to meet "notes" with "note" and "opening" with "open"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        return word[:-2]
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _one_line(description: str | None) -> str:
    if not description:
        return ""
    line = " ".join(description.strip().splitlines()[0].split())
    return line if len(line) <= _MAX_LINE_CHARS else line[: _MAX_LINE_CHARS - 3] + "..."
