"""The catalog of one graph revision: search, list and describe, and the bounds of what a guest asks of it.

A catalog is built once per revision and describes exactly that graph. Entries use the
complete logical path (``apps.bazaar.windows.open``) and stay short. Search ranks with
BM25 over path segments, names, descriptions, the phrasings a host wrote for an operation
and input field names and descriptions; an exact path or name match ranks first. A search
may hold several phrasings of one need (``["refund", "give the customer their money
back"]``): their words make one query, so the operation that answers most of them comes
first. A catalog given a :class:`~mycelium.semantic.SemanticRanker` (the ``semantic``
extra) also ranks the need by meaning and fuses both rankings by reciprocal rank. Every
output is bounded.

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
import itertools
from collections import defaultdict
from collections.abc import Sequence

from .._graph import InstalledOperation, OperationGraph
from .._text import clip
from ._entry import CatalogEntry, one_line
from ._ranking import Bm25, documents, fused
from ._rendering import render_bounded
from ._semantic import SemanticRanker, semantic_texts
from ._stubs import StubRenderer
from ._words import distinct_stems

DEFAULT_SEARCH_LIMIT = 8
"""How many entries a search returns when it is not told."""
MAX_SEARCH_LIMIT = 50
"""The most entries one search returns."""
MAX_DESCRIBE_CHARS = 8_000
"""The longest text ``describe`` returns unless told otherwise, in characters."""
MAX_LIST_ENTRIES = 200
"""The most entries ``forage.list`` shows a guest; a last item counts the rest."""
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
# Fusion with a semantic ranking: each ranking counts over its first _FUSION_DEPTH operations,
# the lexical one at weight 1.
_FUSION_DEPTH = 30
_SEMANTIC_WEIGHT = 1.0


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
                description=one_line(target.operation.description),
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
        self._index = Bm25(documents(self.targets))
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
        return self.ranked(*self.checked_query(query, limit), limit)

    def checked_query(self, query: object, limit: object) -> tuple[list[str], list[list[str]]]:
        """A search's phrasings and their stems, or the error naming what is wrong (cheap: sizes first).

        The first half of :meth:`search`, with its errors: a caller that ranks elsewhere (in a
        worker thread) checks here first, so a refused query never goes there.
        """
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
            check_text(phrasing, "search query", MAX_QUERY_CHARS)
            texts.append(phrasing)  # type: ignore[arg-type]  # checked just above
        stems = [distinct_stems(text) for text in texts]
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

    def ranked(self, texts: Sequence[str], stems: Sequence[Sequence[str]], limit: int) -> list[CatalogEntry]:
        """The second half of :meth:`search`: the best ``limit`` entries for phrasings already checked.

        ``texts`` and ``stems`` are what :meth:`checked_query` returned; nothing here checks
        them again.
        """
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
            found = fused([(1.0, lexical), (_SEMANTIC_WEIGHT, self._semantic.nearest(meaningful, depth))], depth)
        ranked = list(dict.fromkeys([*exact, *found]))
        return [self.entries[index] for index in ranked[:limit]]

    def list(self, prefix: str = "") -> list[CatalogEntry]:
        """Entries at ``prefix`` or below it, by whole path segments (``apps`` matches ``apps.x``, not ``appsx``).

        Raises ``ValueError`` for a prefix over :data:`MAX_PATH_CHARS` characters.
        """
        check_text(prefix, "list prefix", MAX_PATH_CHARS)
        return [*self.entries[self._under(prefix)]]

    def describe(self, path: str, max_chars: int = MAX_DESCRIBE_CHARS) -> str:
        """Python stubs for the operation at ``path``, or for everything under a prefix, bounded.

        An unknown path gives a short text saying so and suggesting close matches. Raises
        ``ValueError`` for a path over :data:`MAX_PATH_CHARS` characters.
        """
        check_text(path, "describe path", MAX_PATH_CHARS)
        wanted = path.strip()
        targets = self.targets[self._under(wanted)]
        if not targets:
            stems = distinct_stems(wanted)[:MAX_QUERY_WORDS]
            close = ", ".join(entry.path for entry in self.ranked([wanted], [stems], 3)) if wanted else ""
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


def check_text(value: object, what: str, limit: int) -> None:
    """Refuse a guest's text argument that is not a string or is longer than ``limit``."""
    if not isinstance(value, str):
        raise TypeError(f"the {what} must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise ValueError(f"the {what} is {len(value)} characters; the limit is {limit}")
