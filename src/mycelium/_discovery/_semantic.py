"""Ranking by meaning: what a semantic ranker offers, the check of a ``semantic=`` argument, what it embeds.

A catalog given a :class:`SemanticRanker` (:mod:`mycelium.semantic` has one, the
``semantic`` extra) embeds every operation once per revision and fuses the ranking by
meaning with its lexical one, so a need phrased in words no operation uses still finds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .._graph import InstalledOperation
from ._entry import one_line
from ._words import WORDS


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


def semantic_texts(target: InstalledOperation) -> list[str]:
    """What a semantic ranker embeds for an operation: its words and description, then each host phrasing."""
    name = " ".join(WORDS.findall(target.path.replace(".", " ")))
    return [f"{name}: {one_line(target.operation.description)}", *target.operation.phrasings]
