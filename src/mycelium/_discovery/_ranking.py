"""Lexical ranking: a BM25 index of each operation's words, and the fusion of several rankings into one.

An operation is indexed as the stems of its name, module path, description, the phrasings
its host wrote and its input and output field words, each field weighted by how much it
says. Each word of a query counts once per operation, as itself or as its best-scoring close
relative (at a lower weight), and a search merges a bounded number of postings whatever the
query, so none costs more than a few milliseconds over 10,000 operations. Every posting is
computed from the catalog when the index is built: a query adds nothing to what is kept.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard

from .._graph import InstalledOperation
from ._words import RELATED, tokens

if TYPE_CHECKING:
    import numpy
    import numpy.typing as npt

    _Postings: TypeAlias = tuple[npt.NDArray[numpy.intp], npt.NDArray[numpy.float64]]

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
# In reciprocal rank fusion each ranking counts weight / (_FUSION_K + rank) for an operation.
_FUSION_K = 5


def documents(targets: Iterable[InstalledOperation]) -> Iterator[Counter[str]]:
    """The weighted stems :class:`Bm25` indexes for each of ``targets``.

    Texts repeat across a catalog (a module's path in each of its operations, a name like
    ``list`` in every module): each distinct one is read once.
    """
    stems: dict[str, str] = {}
    read: dict[str, list[str]] = {}

    def words(text: str) -> list[str]:
        found = read.get(text)
        if found is None:
            found = read[text] = tokens(text, stems)
        return found

    for target in targets:
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
            # Each occurrence counts the field's weight: counted in C, a word repeated that many times.
            counts.update(words(text) * _FIELD_WEIGHTS[field_name])
        yield counts


def _field_words(schema: Mapping[str, Any]) -> list[str]:
    """Property names and descriptions of an object schema, or of the objects in an array of them."""
    words: list[str] = []
    node: object = schema
    for _ in range(3):  # through `items` and one `$ref` to the object itself
        if not _is_mapping(node):
            return words
        if _is_mapping(node.get("items")):
            node = node["items"]
        elif isinstance(node.get("$ref"), str):
            node = _local_definition(schema, node["$ref"])
        else:
            break
    properties = node.get("properties") if _is_mapping(node) else None
    if _is_mapping(properties):
        for name, field in properties.items():
            words.append(str(name))
            if _is_mapping(field) and isinstance(field.get("description"), str):
                words.append(field["description"])
    return words


def _is_mapping(node: object) -> TypeGuard[Mapping[str, Any]]:
    # Schemas are dicts (and absent keys None) nearly always: both are settled before the check
    # against the ABC, which costs ten times more.
    return isinstance(node, dict) or (node is not None and isinstance(node, Mapping))


def _local_definition(root: Mapping[str, Any], reference: str) -> object:
    name = reference.rsplit("/", 1)[-1]
    for key in ("$defs", "definitions"):
        definitions = root.get(key)
        if isinstance(definitions, Mapping) and name in definitions:
            return definitions[name]
    return None


class Bm25:
    """Okapi BM25 with precomputed weights per term, kept in arrays, so a query only adds, boundedly, in numpy.

    Each term's postings are one slice of two arrays (documents ascending, their weights);
    a query adds whole slices at once, so its cost hardly depends on how long they are.
    """

    def __init__(self, documents: Iterable[Counter[str]]) -> None:
        import numpy

        docs = list(documents)
        self._count = len(docs)
        lengths = [sum(doc.values()) for doc in docs]
        average = (sum(lengths) / len(lengths)) if lengths else 0.0
        # One (term, document, frequency) triple per posting, the documents in order.
        ids: dict[str, int] = {}
        terms: list[int] = []
        frequencies: list[int] = []
        owners: list[int] = []
        norms: list[float] = []
        for index, (doc, length) in enumerate(zip(docs, lengths, strict=True)):
            norms.append(_K1 * (1 - _B + _B * length / average) if average else _K1)
            terms.extend(ids.setdefault(term, len(ids)) for term in doc)
            frequencies.extend(doc.values())
            owners.extend(itertools.repeat(index, len(doc)))
        term_of = numpy.array(terms, dtype=numpy.intp)
        tf = numpy.array(frequencies, dtype=numpy.float64)
        frequency = numpy.bincount(term_of, minlength=len(ids))
        # math.log, term by term, as the weights were always computed: numpy's log may differ in the last bit.
        count = self._count
        idf = numpy.array([math.log(1 + (count - df + 0.5) / (df + 0.5)) for df in frequency.tolist()])
        weights = idf[term_of] * tf * (_K1 + 1) / (tf + numpy.array(norms)[numpy.array(owners, dtype=numpy.intp)])
        # Grouped by term; a stable sort keeps each term's documents in order.
        order = numpy.argsort(term_of, kind="stable")
        self._docs: npt.NDArray[numpy.intp] = numpy.array(owners, dtype=numpy.intp)[order]
        self._weights: npt.NDArray[numpy.float64] = weights[order]
        self._starts = numpy.concatenate(([0], numpy.cumsum(frequency))).tolist()
        self._ids = ids
        # Built here, from the catalog's own words: a query never adds to what is kept.
        self._concepts = {stem: self._relate(stem, others) for stem, others in RELATED.items()}

    def top(self, stems: Sequence[str], limit: int) -> list[int]:
        """The best documents for the distinct query ``stems``, best first.

        Each stem is a concept: the stem itself, or failing that its best-matching close
        relative at a lower weight, counts once per document. The sum is scaled by the share
        of concepts a document covers, so one that answers the whole query beats one that
        repeats a single word of it. The rarest concepts are merged first, up to
        ``_MERGE_BUDGET`` postings (or until ``limit`` documents are found); commoner ones then
        only score the best ``_SHORTLIST`` documents so far, which bounds the work of any query.
        """
        import numpy

        found = [concept for concept in map(self._concept, stems) if concept is not None]
        concepts = sorted(found, key=lambda concept: len(concept[0]))
        if not concepts:
            return []
        # A document's summed score and how many concepts it covers; its rank is their
        # product (the share of the query it covers would divide all alike).
        scores = numpy.zeros(self._count)
        covered = numpy.zeros(self._count, dtype=numpy.intp)
        docs, weights = concepts[0]
        scores[docs] = weights
        covered[docs] = 1
        reached = len(docs)
        budget = _MERGE_BUDGET - reached
        merged = 1
        for docs, weights in concepts[1:]:
            # Past the budget, merge only while there are too few documents to fill the answer.
            if len(docs) > budget and reached >= limit:
                break
            budget -= len(docs)
            merged += 1
            reached += len(docs) - int(numpy.count_nonzero(covered[docs]))
            scores[docs] += weights  # each concept names a document once
            covered[docs] += 1
        if merged == len(concepts):
            return _best(limit, numpy.flatnonzero(covered), scores, covered)
        kept = numpy.sort(_best(max(_SHORTLIST, limit), numpy.flatnonzero(covered), scores, covered))
        shortlisted = numpy.zeros(self._count, dtype=bool)
        shortlisted[kept] = True
        for docs, weights in concepts[merged:]:
            hits = shortlisted[docs]
            scores[docs[hits]] += weights[hits]
            covered[docs[hits]] += 1
        return _best(limit, kept, scores, covered)

    def _postings(self, stem: str) -> _Postings | None:
        """The documents that have ``stem`` and its weight in each (``None`` for a word no document has)."""
        term = self._ids.get(stem)
        if term is None:
            return None
        start, end = self._starts[term], self._starts[term + 1]
        return self._docs[start:end], self._weights[start:end]

    def _concept(self, stem: str) -> _Postings | None:
        """The documents of ``stem`` or a relative, with their best weighted score (``None`` for none)."""
        return self._concepts[stem] if stem in self._concepts else self._postings(stem)

    def _relate(self, stem: str, relatives: frozenset[str]) -> _Postings | None:
        import numpy

        best = numpy.zeros(self._count)
        own = self._postings(stem)
        if own is not None:
            best[own[0]] = own[1]
        for related in relatives:
            postings = self._postings(related)
            if postings is not None:
                docs, weights = postings
                best[docs] = numpy.maximum(best[docs], _RELATED_WEIGHT * weights)
        # Every weight is positive: a document with none has no posting.
        docs = numpy.flatnonzero(best)
        return (docs, best[docs]) if len(docs) else None


def _best(
    count: int,
    candidates: npt.NDArray[numpy.intp],
    scores: npt.NDArray[numpy.float64],
    covered: npt.NDArray[numpy.intp],
) -> list[int]:
    """The ``count`` ``candidates`` of highest ``score * covered``, the lower index first on a tie."""
    import numpy

    ranks = scores[candidates] * covered[candidates]
    if len(candidates) > count:
        # Everything above the count-th best rank is in; ties with it are settled by index below.
        cut = numpy.partition(ranks, len(ranks) - count)[len(ranks) - count]
        keep = ranks >= cut
        candidates, ranks = candidates[keep], ranks[keep]
    order = numpy.lexsort((candidates, -ranks))[:count]
    best: list[int] = candidates[order].tolist()
    return best


def fused(rankings: Sequence[tuple[float, Sequence[int]]], limit: int) -> list[int]:
    """Reciprocal rank fusion: what ranks well in several rankings comes first (earlier rankings win ties)."""
    scores: dict[int, float] = {}
    for weight, ranking in rankings:
        for rank, index in enumerate(ranking):
            scores[index] = scores.get(index, 0.0) + weight / (_FUSION_K + rank)
    return heapq.nlargest(limit, scores, key=scores.__getitem__)
