"""The discovery catalog of one graph revision: search, list and describe (``forage`` in a guest).

A catalog is built once per revision and describes exactly that graph. Entries use the
complete logical path (``apps.bazaar.windows.open``) and stay short. Search ranks with
BM25 over path segments, names, descriptions, the phrasings a host wrote for an operation
and input field names and descriptions; an exact path or name match ranks first. A search
may hold several phrasings of one need (``["refund", "give the customer their money
back"]``): their words make one query, so the operation that answers most of them comes
first. A catalog given a :class:`SemanticRanker` (the ``semantic`` extra) also ranks the
need by meaning and fuses both rankings by reciprocal rank. Every output is bounded.

What a guest sends is bounded too, and so is the work it causes: a search holds at most
:data:`MAX_PHRASINGS` phrasings, each at most :data:`MAX_QUERY_CHARS` characters and
:data:`MAX_QUERY_WORDS` distinct words (:data:`MAX_SEARCH_WORDS` together), a path or prefix
at most :data:`MAX_PATH_CHARS` characters (longer ones are refused with a ``ValueError``
naming the limit), and one search merges a bounded number of postings however many
phrasings it holds, so no call holds the event loop for more than a few milliseconds, even
over 10,000 operations.
Nothing a guest sends is kept: every cache is filled from the catalog alone.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import operator
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.to_thread

from ..bindings import BindingCallback
from ..graph import InstalledOperation, OperationGraph
from ..operations import AccessLabel
from ..text import clip
from ..values import JsonValue
from ._stubs import StubRenderer, StubsTooLong

__all__ = [
    "DEFAULT_SEARCH_LIMIT",
    "FORAGE_MODULE_ID",
    "FORAGE_STUB",
    "MAX_DESCRIBE_CHARS",
    "MAX_LIST_ENTRIES",
    "MAX_PATH_CHARS",
    "MAX_PHRASINGS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_WORDS",
    "MAX_SEARCH_LIMIT",
    "MAX_SEARCH_WORDS",
    "Catalog",
    "CatalogEntry",
    "NamespaceStubs",
    "SemanticIndex",
    "SemanticRanker",
    "check_ranker",
    "forage_bindings",
    "semantic_texts",
]

DEFAULT_SEARCH_LIMIT = 8
MAX_SEARCH_LIMIT = 50
MAX_DESCRIBE_CHARS = 8_000
MAX_LIST_ENTRIES = 200
MAX_QUERY_CHARS = 500
"""The longest search query, in characters: a query names a need in a few words."""
MAX_QUERY_WORDS = 24
"""The most distinct words (stems, stopwords aside) one search query may hold."""
MAX_PHRASINGS = 4
"""The most phrasings one search may hold: a few ways of saying one need, not a batch of needs."""
MAX_SEARCH_WORDS = 32
"""The most distinct words all the phrasings of one search may hold together."""
MAX_PATH_CHARS = 500
"""The longest path ``describe`` takes and the longest prefix ``list`` takes, in characters."""
FORAGE_MODULE_ID = "mycelium.forage"
"""The stable id under which ``forage`` appears in a sandbox request's ``modules``."""
_MAX_LINE_CHARS = 160
# BM25 parameters (Okapi defaults), and how much each field counts: names say most.
_K1 = 1.2
_B = 0.75
_FIELD_WEIGHTS = {"name": 3, "path": 2, "description": 2, "phrasings": 2, "fields": 1}
# Query words also reach their close relatives, at this fraction of their weight.
_RELATED_WEIGHT = 0.5
# One search merges at most this many postings in full (the rarest words first); words
# past it only add to the best _SHORTLIST documents so far. Bounds a search's work whatever
# the query: about 2 ms over 10,000 operations.
_MERGE_BUDGET = 3_000
_SHORTLIST = 200
# Searches and describes of one catalog running at once, each in a worker thread.
_DISCOVERY_THREADS = 2
_ZEROS = itertools.repeat(0.0)
_ONES = itertools.repeat(1)
# Fusion with a semantic ranking: each ranking counts weight / (_FUSION_K + rank) over its
# first _FUSION_DEPTH operations.
_FUSION_K = 5
_FUSION_DEPTH = 30
_SEMANTIC_WEIGHT = 1.0
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


class SemanticIndex(Protocol):
    """A catalog's operations embedded once, ranked by meaning for each query."""

    def nearest(self, queries: Sequence[str], depth: int) -> list[int]:
        """The indexes of the ``depth`` documents closest to the need ``queries`` phrase, closest first."""
        ...


class SemanticRanker(Protocol):
    """Ranks by meaning rather than by shared words (:mod:`mycelium.semantic` has one).

    :meth:`index` is called once per catalog revision, with each operation's texts (its
    words, its description, the phrasings its host wrote); the index it returns must stay
    usable from any thread, as searches run wherever the guest's call is answered.
    """

    def index(self, documents: Sequence[Sequence[str]]) -> SemanticIndex:
        """Embed ``documents`` (one sequence of texts per operation, in catalog order)."""
        ...


def check_ranker(semantic: object) -> None:
    """Refuse a ``semantic=`` argument that is neither ``None`` nor a :class:`SemanticRanker`."""
    # A name is not a ranker (and a str has an index() of its own).
    if semantic is not None and (isinstance(semantic, str) or not callable(getattr(semantic, "index", None))):
        raise ValueError(f"semantic must be a SemanticRanker (with index()), got {type(semantic).__name__}")


class Catalog:
    """The operations of one graph revision, ordered by logical path, with a search index.

    ``semantic`` adds a ranking by meaning, fused with the lexical one. Building a catalog
    embeds every operation, so it may take a while over a large graph: build it off the
    event loop (the runtime does).
    """

    def __init__(self, graph: OperationGraph, semantic: SemanticRanker | None = None) -> None:
        self.revision = graph.revision
        # Sorted by path, so the operations under a prefix are one contiguous run.
        self.targets: tuple[InstalledOperation, ...] = tuple(sorted(graph.operations(), key=lambda t: t.path))
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
        self._paths = tuple(entry.path for entry in self.entries)
        self._by_path = {path: index for index, path in enumerate(self._paths)}
        self._by_name: dict[str, list[int]] = defaultdict(list)
        for index, path in enumerate(self._paths):
            segments = path.split(".")
            for start in range(len(segments)):
                self._by_name[".".join(segments[start:]).lower()].append(index)
        stems: dict[str, str] = {}
        self._index = _Bm25(_document(target, stems) for target in self.targets)
        self._semantic = semantic.index([semantic_texts(target) for target in self.targets]) if semantic else None

    def search(self, query: str | Sequence[str], limit: int = DEFAULT_SEARCH_LIMIT) -> list[CatalogEntry]:
        """The entries that best match ``query``, best first; an exact path or name ranks first.

        ``query`` is one phrasing or a list of up to :data:`MAX_PHRASINGS` phrasings of the
        same need, searched as one. Raises ``ValueError`` for a phrasing over
        :data:`MAX_QUERY_CHARS` characters or :data:`MAX_QUERY_WORDS` distinct words (or
        phrasings of over :data:`MAX_SEARCH_WORDS` distinct words together), for an
        empty list or more than :data:`MAX_PHRASINGS` phrasings, and for a limit outside
        1..:data:`MAX_SEARCH_LIMIT`; ``TypeError`` for a query that is neither.
        """
        return self._ranked(*self._checked(query, limit), limit)

    def _checked(self, query: object, limit: object) -> tuple[list[str], list[list[str]]]:
        """A search's phrasings and their stems, or the error naming what is wrong (cheap: sizes first)."""
        if isinstance(query, str):
            phrasings: Sequence[object] = [query]
        elif isinstance(query, list | tuple):
            phrasings = query
            if not 1 <= len(phrasings) <= MAX_PHRASINGS:
                raise ValueError(
                    f"a search holds 1 to {MAX_PHRASINGS} phrasings of one need, got {len(phrasings)}; "
                    "search again for another need."
                )
        else:
            raise TypeError(f"the search query must be a string or a list of strings, got {type(query).__name__}")
        if type(limit) is not int or not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ValueError(f"search limit must be an int from 1 to {MAX_SEARCH_LIMIT}, got {clip(repr(limit), 40)}")
        texts: list[str] = []
        for phrasing in phrasings:
            _check_text(phrasing, "search query", MAX_QUERY_CHARS)
            texts.append(phrasing)  # type: ignore[arg-type]  # checked just above
        stems = [_distinct_stems(text) for text in texts]
        for words in stems:
            if len(words) > MAX_QUERY_WORDS:
                raise ValueError(
                    f"the search query has {len(words)} distinct words; the limit is {MAX_QUERY_WORDS}. "
                    "Search with a few words that name what you need."
                )
        together = len(set(itertools.chain.from_iterable(stems)))
        if together > MAX_SEARCH_WORDS:
            raise ValueError(
                f"the search's phrasings hold {together} distinct words together; the limit is {MAX_SEARCH_WORDS}. "
                "Use fewer or shorter phrasings of the one need."
            )
        return texts, stems

    def _ranked(self, texts: Sequence[str], stems: Sequence[Sequence[str]], limit: int) -> list[CatalogEntry]:
        exact: list[int] = []
        for text in texts:
            wanted = text.strip().lower()
            if wanted in self._by_path:
                exact.append(self._by_path[wanted])
            exact.extend(self._by_name.get(wanted, [])[:limit])
        # Every phrasing's words make one query: an operation that answers several phrasings
        # covers more of it, and the merge budget bounds the work however many there are.
        words = list(dict.fromkeys(itertools.chain.from_iterable(stems)))
        meaningful = [text for text in texts if text.strip()]
        if self._semantic is None or not meaningful:
            found = self._index.top(words, limit + len(exact))
        else:
            depth = max(limit + len(exact), _FUSION_DEPTH)
            lexical = self._index.top(words, depth)
            found = _fused([(1.0, lexical), (_SEMANTIC_WEIGHT, self._semantic.nearest(meaningful, depth))], depth)
        ranked = list(dict.fromkeys([*exact, *found]))
        return [self.entries[index] for index in ranked[:limit]]

    def list(self, prefix: str = "") -> list[CatalogEntry]:
        """Entries at ``prefix`` or below it, by whole path segments (``apps`` matches ``apps.x``, not ``appsx``).

        Raises ``ValueError`` for a prefix over :data:`MAX_PATH_CHARS` characters.
        """
        _check_text(prefix, "list prefix", MAX_PATH_CHARS)
        return [*self.entries[self._under(prefix)]]

    def describe(self, path: str, max_chars: int = MAX_DESCRIBE_CHARS) -> str:
        """Python stubs for the operation at ``path``, or for everything under a prefix, bounded.

        An unknown path gives a short text saying so and suggesting close matches. Raises
        ``ValueError`` for a path over :data:`MAX_PATH_CHARS` characters.
        """
        _check_text(path, "describe path", MAX_PATH_CHARS)
        wanted = path.strip()
        targets = self.targets[self._under(wanted)]
        if not targets:
            stems = _distinct_stems(wanted)[:MAX_QUERY_WORDS]
            close = ", ".join(entry.path for entry in self._ranked([wanted], [stems], 3)) if wanted else ""
            return f"# No operation or namespace {clip(path, 100)!r}." + (f" Close matches: {close}" if close else "")
        if len(targets) == 1:
            return render_bounded(list(targets), max_chars, prefix=wanted)
        # Many stubs may share a name (`list`): only the path above each says which one it is.
        lead = (
            f"# Call each operation by the full path in the comment above it, "
            f"e.g. `# {targets[0].path}` means `await {targets[0].path}(...)`.\n\n"
        )
        return lead + render_bounded(list(targets), max_chars - len(lead), prefix=wanted)

    def stubs(self) -> str:
        """Every operation as a stub, unbounded (for hosts and type checkers, not for a model)."""
        return StubRenderer().render(self.targets)

    def _under(self, prefix: str) -> slice:
        """The entries at ``prefix`` and below it: found by bisection, never by a scan."""
        if not prefix:
            return slice(0, len(self._paths))
        # Everything in [prefix, prefix + "/") starts with the prefix and continues (if at all)
        # with a character before "/": in a path of identifiers and dots, only ".".
        start = bisect.bisect_left(self._paths, prefix)
        return slice(start, bisect.bisect_left(self._paths, prefix + "/", start))

    def __len__(self) -> int:
        return len(self.entries)


def _check_text(value: object, what: str, limit: int) -> None:
    """Refuse a guest's text argument that is not a string or is longer than ``limit``."""
    if not isinstance(value, str):
        raise TypeError(f"the {what} must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise ValueError(f"the {what} is {len(value)} characters; the limit is {limit}")


_STUB_HEADER = "import builtins\nfrom typing import Any, Literal, NotRequired, TypedDict\n\n"
_ENTRIES = "builtins.list[builtins.dict[builtins.str, Any]]"
FORAGE_STUB = (
    _STUB_HEADER
    + "async def search(\n"
    + f"    query: builtins.str | builtins.list[builtins.str], limit: builtins.int = {DEFAULT_SEARCH_LIMIT}\n"
    + f") -> {_ENTRIES}: ...\n"
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
        texts, stems = catalog._checked(query, limit)
        return await off_loop(lambda: [entry.to_json() for entry in catalog._ranked(texts, stems, limit)])  # type: ignore[misc]

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
        _check_text(path, "describe path", MAX_PATH_CHARS)
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


def render_bounded(targets: list[InstalledOperation], max_chars: int, *, prefix: str = "") -> str:
    """Stubs for ``targets`` within ``max_chars``; what did not fit is counted, never cut silently.

    Rendering stops once it passes ``max_chars``, so a huge schema costs no more than a small one.
    """
    renderer = StubRenderer(max_chars=max_chars)
    stubs: list[str] = []
    cut = False  # the first operation alone is too long: the start of it is shown
    left = 0
    for shown, target in enumerate(targets):
        state = renderer.checkpoint()
        try:
            stub: str | None = renderer.operation(target)
        except StubsTooLong:
            stub = None
        if stub is not None and (not stubs or len(_join(renderer.declarations(), [*stubs, stub])) <= max_chars - 200):
            stubs.append(stub)
            continue
        cut = not stubs
        if not cut:
            renderer.restore(state)  # its types go with it
        left = len(targets) - shown - int(cut)
        break
    where = f" under {prefix}" if prefix else ""
    left_out = (
        f"\n# ... {left} more operation{'s' if left != 1 else ''}{where} not shown: "
        "describe a longer path, or use forage.search(...).\n"
        if left
        else ""
    )
    text = _join(renderer.declarations(), stubs)
    if cut or len(text) + len(left_out) > max_chars:
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
    """Okapi BM25 with precomputed weights per term, so a query only adds, and boundedly."""

    def __init__(self, documents: Iterable[Counter[str]]) -> None:
        docs = list(documents)
        self._count = len(docs)
        lengths = [sum(doc.values()) for doc in docs]
        average = (sum(lengths) / len(lengths)) if lengths else 0.0
        frequency: Counter[str] = Counter()
        for doc in docs:
            frequency.update(doc.keys())
        postings: defaultdict[str, dict[int, float]] = defaultdict(dict)
        for index, (doc, length) in enumerate(zip(docs, lengths, strict=True)):
            norm = _K1 * (1 - _B + _B * length / average) if average else _K1
            for term, tf in doc.items():
                idf = math.log(1 + (self._count - frequency[term] + 0.5) / (frequency[term] + 0.5))
                postings[term][index] = idf * tf * (_K1 + 1) / (tf + norm)
        self._postings = dict(postings)
        # Built here, from the catalog's own words: a query never adds to what is kept.
        self._concepts = {stem: self._relate(stem, others) for stem, others in _RELATED.items()}

    def top(self, stems: Sequence[str], limit: int) -> list[int]:
        """The best documents for the distinct query ``stems``, best first.

        Each stem is a concept: the stem itself, or failing that its best-matching close
        relative at a lower weight, counts once per document. The sum is scaled by the share
        of concepts a document covers, so one that answers the whole query beats one that
        repeats a single word of it. The rarest concepts are merged first, up to
        ``_MERGE_BUDGET`` postings (or until ``limit`` documents are found); commoner ones then
        only score the best ``_SHORTLIST`` documents so far, which bounds the work of any query.
        """
        concepts = sorted(filter(None, map(self._concept, stems)), key=len)
        if not concepts:
            return []
        # Two dicts filled in lockstep (same keys, same order): a document's summed score and
        # how many concepts it covers. Its rank is their product; the share of the query it
        # covers would divide all alike.
        scores = dict(concepts[0])
        covered = dict.fromkeys(scores, 1)
        budget = _MERGE_BUDGET - len(scores)
        merged = 1
        for concept in concepts[1:]:
            # Past the budget, merge only while there are too few documents to fill the answer.
            if len(concept) > budget and len(scores) >= limit:
                break
            budget -= len(concept)
            merged += 1
            _add(scores, concept.keys(), concept.values())
            _add(covered, concept.keys(), _ONES)
        if merged == len(concepts):
            return _best(limit, scores, covered)
        kept = dict.fromkeys(_best(max(_SHORTLIST, limit), scores, covered))
        for concept in concepts[merged:]:
            # Intersecting key views walks the smaller side (the shortlist) in C.
            hits = concept.keys() & kept.keys()
            _add(scores, hits, map(concept.__getitem__, hits))
            _add(covered, hits, _ONES)
        return _best(limit, {index: scores[index] for index in kept}, {index: covered[index] for index in kept})

    def _concept(self, stem: str) -> dict[int, float]:
        """Document -> best weighted score of ``stem`` or a relative (empty for an unknown word)."""
        found = self._concepts.get(stem)
        return found if found is not None else self._postings.get(stem, {})

    def _relate(self, stem: str, relatives: frozenset[str]) -> dict[int, float]:
        concept = dict(self._postings.get(stem, {}))
        for related in relatives:
            for index, score in self._postings.get(related, {}).items():
                if _RELATED_WEIGHT * score > concept.get(index, 0.0):
                    concept[index] = _RELATED_WEIGHT * score
        return concept


def _add(scores: dict[int, Any], keys: Collection[int], values: Iterable[float]) -> None:
    """``scores[key] += value`` for each pair (``keys`` is walked twice), in C: no Python frame per posting."""
    scores.update(zip(keys, map(operator.add, map(scores.get, keys, _ZEROS), values), strict=True))


def _best(count: int, scores: Mapping[int, float], covered: Mapping[int, int]) -> list[int]:
    """The ``count`` documents of highest ``score * covered``, the lower index first on a tie.

    ``scores`` and ``covered`` hold the same documents in the same order. Ranked without a
    Python call per document: the whole pass runs in C.
    """
    ranks = map(operator.mul, scores.values(), covered.values())
    return [-negated for _, negated in heapq.nlargest(count, zip(ranks, map(operator.neg, scores), strict=True))]


def _fused(rankings: Sequence[tuple[float, Sequence[int]]], limit: int) -> list[int]:
    """Reciprocal rank fusion: what ranks well in several rankings comes first (earlier rankings win ties)."""
    scores: dict[int, float] = {}
    for weight, ranking in rankings:
        for rank, index in enumerate(ranking):
            scores[index] = scores.get(index, 0.0) + weight / (_FUSION_K + rank)
    return heapq.nlargest(limit, scores, key=scores.__getitem__)


def semantic_texts(target: InstalledOperation) -> list[str]:
    """What a semantic ranker embeds for an operation: its words and description, then each host phrasing."""
    name = " ".join(_WORDS.findall(target.path.replace(".", " ")))
    return [f"{name}: {_one_line(target.operation.description)}", *target.operation.phrasings]


def _document(target: InstalledOperation, stems: dict[str, str]) -> Counter[str]:
    op = target.operation
    parts: dict[str, str] = {
        "name": target.relative.replace(".", " "),
        # The module's own description is shared by all its operations: it would only blur them.
        "path": " ".join(target.module.path),
        "description": op.description or "",
        "phrasings": " ".join(op.phrasings),
        # What it takes and what it gives back: "how big is it" finds the operation returning `size`.
        "fields": " ".join([*_field_words(op.input_schema), *_field_words(op.output_schema)]),
    }
    counts: Counter[str] = Counter()
    for field_name, text in parts.items():
        for token in _tokens(text, stems):
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


def _tokens(text: str, stems: dict[str, str] | None = None) -> list[str]:
    """Lower-case word stems, splitting snake_case, camelCase and dotted paths.

    ``stems`` memoises stemming while one index is built; a query is stemmed afresh, so no
    word a guest sends is kept.
    """
    words = [word for word in map(str.lower, _WORDS.findall(text)) if len(word) > 1 and word not in _STOPWORDS]
    if stems is None:
        return [_stem(word) for word in words]
    return [stems[word] if word in stems else stems.setdefault(word, _stem(word)) for word in words]


def _distinct_stems(query: str) -> list[str]:
    return list(dict.fromkeys(_tokens(query)))


_VOWELS = frozenset("aeiouy")


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


# Close relatives among the words people use for what apps do: a word reaches the others in
# its group at _RELATED_WEIGHT. Kept by evidence: each group here, taken out alone, costs at
# least one query of bench/search_quality.py's own set (recall@3 or MRR, with one phrasing or
# three); the groups that cost nothing, or whose words mean different things in different apps
# ("room" is a chat channel and part of a house), were dropped. Semantic ranking (the
# `semantic` extra) covers the rest of the vocabulary without lists.
_RELATED_GROUPS = (
    "create add new make compose write draft start schedule book post",
    "delete remove cancel trash erase discard drop destroy",
    "update change edit modify set rename move reschedule adjust",
    "get read view fetch retrieve detail info look",
    "search find look lookup query seek locate",
    "event meeting appointment invite invitation calendar",
    "track song music tune album artist playlist",
    "transaction spend spending purchase expense",
    "temperature warm warmer cold colder heat heating cool thermostat",
    "alert warning warn storm",
    "screenshot screen capture snapshot picture image photo",
    "task todo reminder remind chore",
    "complete done finish check",
    "pull pr merge review",
    "approve accept review",
    "save store keep upload",
    "launch start open run",
    "build ci workflow pipeline action",
    "file document doc attachment pdf upload download drive folder",
    "balance money fund account",
    "route direction navigate drive travel commute",
    "issue bug ticket problem",
    "commit change history",
    "channel conversation thread",
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
    lines = (description or "").strip().splitlines()
    return clip(" ".join(lines[0].split()), _MAX_LINE_CHARS) if lines else ""
