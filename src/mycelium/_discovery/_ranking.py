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
import operator
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from .._graph import InstalledOperation
from ._words import RELATED, tokens

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
_ZEROS = itertools.repeat(0.0)
_ONES = itertools.repeat(1)
# In reciprocal rank fusion each ranking counts weight / (_FUSION_K + rank) for an operation.
_FUSION_K = 5


def document(target: InstalledOperation, stems: dict[str, str]) -> Counter[str]:
    """The weighted stems :class:`Bm25` indexes for ``target`` (``stems`` memoises stemming over one catalog)."""
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
        for token in tokens(text, stems):
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


class Bm25:
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


def fused(rankings: Sequence[tuple[float, Sequence[int]]], limit: int) -> list[int]:
    """Reciprocal rank fusion: what ranks well in several rankings comes first (earlier rankings win ties)."""
    scores: dict[int, float] = {}
    for weight, ranking in rankings:
        for rank, index in enumerate(ranking):
            scores[index] = scores.get(index, 0.0) + weight / (_FUSION_K + rank)
    return heapq.nlargest(limit, scores, key=scores.__getitem__)
