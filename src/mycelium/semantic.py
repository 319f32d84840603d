"""Ranking by meaning with WordLlama, a static embedding model that ships inside its wheel.

Install the ``semantic`` extra (``pip install "mycelium-codemode[semantic]"``) and give a
runtime the ranker::

    runtime = Runtime(modules=[...], sandbox=MontySandbox(), semantic=WordLlamaRanker())

Search then fuses a ranking by meaning with the lexical one, so "give the customer their
money back" finds ``payments.refunds.create`` though they share no word.

What is guaranteed:

- No network, ever: the model and its tokenizer are read from the installed package, and
  a missing file is an :class:`ImportError` naming the extra, never a download.
- The model is loaded once per process, on the first catalog that needs it (about 0.3 s
  and 76 MiB), from whichever thread builds that catalog.
- Each text is embedded once: vectors are kept by content (up to ``cache_size`` texts), so
  a new revision of a catalog embeds only the operations that changed.
- Nothing a query holds is kept (the tokenizer's own cache is off), and a query costs one
  matrix-vector product however many phrasings it has: well under a millisecond over a
  few hundred operations, about 0.3 ms over 10,000.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._discovery import SemanticIndex, SemanticRanker

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "DIMENSIONS",
    "MAX_QUERY_BYTES",
    "MAX_TEXT_BYTES",
    "SemanticIndex",
    "SemanticRanker",
    "WordLlamaIndex",
    "WordLlamaRanker",
    "load_wordllama",
]

DIMENSIONS = 128
"""How much of each 256-dimension WordLlama vector is used. The model is trained so that a
prefix keeps most of the meaning; on bench/search_quality.py's own set the first 128 rank as
well as all 256, at half the memory and half the time of a search over a large catalog."""
MAX_TEXT_BYTES = 512
"""The most UTF-8 bytes of words embedded from one of an operation's texts."""
MAX_QUERY_BYTES = 200
"""The most UTF-8 bytes of words embedded from one search phrasing: a need, in a few words."""
_WORD = re.compile(r"\w+")
_EXTRA = 'install the semantic extra: pip install "mycelium-codemode[semantic]"'
_model: Any = None
_loading = threading.Lock()


def load_wordllama() -> Any:
    """The process's WordLlama model, loaded on first use from the installed package alone.

    WordLlama's own ``load()`` looks for its tokenizer in a folder the wheel does not ship
    and then downloads it; pointing its cache at the package folder, with downloads off,
    finds both files where the wheel put them. Raises ``ImportError`` naming the extra when
    WordLlama is missing or incomplete.
    """
    global _model
    with _loading:
        if _model is None:
            try:
                import wordllama
            except ImportError as exc:
                raise ImportError(f"semantic search needs WordLlama: {_EXTRA}") from exc
            try:
                model = wordllama.WordLlama.load(
                    cache_dir=Path(wordllama.__file__).parent, disable_download=True, trunc_dim=DIMENSIONS
                )
            except (FileNotFoundError, OSError) as exc:
                raise ImportError(f"WordLlama's bundled model is unreadable ({exc}); reinstall it: {_EXTRA}") from exc
            # The tokenizer would keep every short input it sees, guests' queries included, for
            # the life of the process; every text here is tokenized once anyway.
            resize_cache = getattr(model.tokenizer.model, "_resize_cache", None)
            if resize_cache is None:
                raise ImportError(f"this version of tokenizers cannot turn its cache off; {_EXTRA}")
            resize_cache(0)
            _model = model
        return _model


def _words(text: str, limit: int = MAX_TEXT_BYTES) -> str:
    """The words of ``text``, at most ``limit`` bytes of them in UTF-8: what is embedded.

    Symbols and emoji carry no meaning for finding an operation, and each costs the tokenizer
    several byte tokens; the cap bounds the work of any text.
    """
    words = " ".join(_WORD.findall(text))
    return words.encode()[:limit].decode(errors="ignore")


class WordLlamaRanker:
    """A :class:`~mycelium.semantic.SemanticRanker` over WordLlama's bundled model.

    Cheap to construct: the model loads when the first catalog is indexed. One ranker may
    serve many runtimes and revisions; its cache of vectors is shared by them and safe to
    use from several threads.
    """

    def __init__(self, *, cache_size: int = 50_000) -> None:
        if type(cache_size) is not int or cache_size < 0:
            raise ValueError(f"cache_size must be an int >= 0, got {cache_size!r}")
        self._cache_size = cache_size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def index(self, documents: Sequence[Sequence[str]]) -> WordLlamaIndex:
        """Embed each operation's texts (the new ones only) and index them.

        An operation gets at most two rows: its first text (its words and description), and
        the mean of the rest (the phrasings its host wrote), so however many phrasings a host
        writes, a search costs the same.
        """
        import numpy

        if not all(document for document in documents):
            raise ValueError("every document needs at least one text to embed")
        model = load_wordllama()
        vectors = self._vectors_of({_words(text) for document in documents for text in document}, model)
        rows: list[npt.NDArray[Any]] = []
        starts: list[int] = []
        for first, *rest in documents:
            starts.append(len(rows))
            rows.append(vectors[_words(first)])
            if rest:
                rows.append(_unit(numpy.mean([vectors[_words(text)] for text in rest], axis=0)))
        matrix = numpy.stack(rows) if rows else numpy.zeros((0, model.embedding.shape[1]), numpy.float32)
        return WordLlamaIndex(model, matrix, numpy.array(starts), len(documents))

    def _vectors_of(self, texts: set[str], model: Any) -> dict[str, npt.NDArray[Any]]:
        """A unit vector for each text: from the cache, or embedded now (and cached)."""
        import numpy

        with self._lock:
            known = {text: self._vectors[text] for text in texts if text in self._vectors}
            for text in known:
                self._vectors.move_to_end(text)
        # A text with no words has no direction: a zero row, which matches nothing.
        missing = sorted(text for text in texts if text not in known and text)
        known[""] = numpy.zeros(model.embedding.shape[1], numpy.float32)
        if missing:
            known.update(zip(missing, model.embed(missing, norm=True, batch_size=256), strict=True))
            with self._lock:
                for text in missing[-self._cache_size :] if self._cache_size else ():
                    self._vectors[text] = known[text]
                while len(self._vectors) > self._cache_size:
                    self._vectors.popitem(last=False)
        return known


def _unit(vector: npt.NDArray[Any]) -> npt.NDArray[Any]:
    import numpy

    norm = numpy.linalg.norm(vector)
    return vector / norm if norm else vector


class WordLlamaIndex(SemanticIndex):
    """The vectors of one catalog: one or two rows per operation, each operation's rows together."""

    def __init__(self, model: Any, matrix: npt.NDArray[Any], starts: npt.NDArray[Any], count: int) -> None:
        self._model = model
        self._matrix = matrix
        self._starts = starts
        self._count = count
        # Only operations with two rows (host phrasings) need their best row picked.
        self._grouped = len(matrix) != count

    def nearest(self, queries: Sequence[str], depth: int) -> list[int]:
        """The ``depth`` operations closest to the mean of the queries' vectors, closest first.

        Several phrasings of one need point the same way; their mean points there more
        surely than any one of them (and costs one pass over the catalog, not one each).
        """
        import numpy

        if not self._count or not queries:
            return []
        model = self._model
        need = numpy.zeros(self._matrix.shape[1], numpy.float32)
        for query in queries:
            # The mean of the query's token vectors, as WordLlama's embed() computes it, without
            # the padded batch and thread pool it sets up: a third of the time.
            tokens = model.tokenizer.encode(_words(query, MAX_QUERY_BYTES), add_special_tokens=False).ids
            if tokens:
                need += _unit(model.embedding[tokens].mean(axis=0))
        if not need.any():
            return []  # no phrasing has a word: nothing is near it, rather than everything
        # Cosine similarity to every text (the rows are unit vectors: the need's length
        # changes no order), then each operation's best text. einsum, not `@`: a matrix
        # product goes to BLAS, whose threads for a product this small cost more than the
        # product (milliseconds, and tens of them on a busy machine, against under one).
        similarity = numpy.einsum("ij,j->i", self._matrix, need)
        if self._grouped:
            similarity = numpy.maximum.reduceat(similarity, self._starts)
        depth = min(depth, self._count)
        top = numpy.argpartition(similarity, self._count - depth)[self._count - depth :]
        ranking: list[int] = top[numpy.argsort(-similarity[top], kind="stable")].tolist()
        return ranking
