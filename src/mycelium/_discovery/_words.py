"""How discovery reads text: words, their stems, and the close relatives of common ones.

An operation's texts and a guest's query are read the same way: split into words whatever
the naming style (snake_case, camelCase, dotted paths), lower-cased, stopwords dropped and
stemmed, so that "created notes" meets ``notes.create``. A few groups of related words
("delete", "remove", "trash"...) let a query reach an operation named in other words.
"""

from __future__ import annotations

import re
from collections import defaultdict

WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
"""One word of a text: a lower-case run (capitalised or not), a run of capitals (``HTTP`` in ``HTTPServer``), digits."""
_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "for",
        "from",
        "get",
        "give",
        "i",
        "in",
        "into",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "show",
        "some",
        "that",
        "the",
        "their",
        "them",
        "there",
        "this",
        "to",
        "up",
        "us",
        "we",
        "what",
        "whats",
        "where",
        "which",
        "who",
        "with",
        "you",
        "your",
    }
)
_VOWELS = frozenset("aeiouy")
# Close relatives among the words people use for what apps do: a word reaches the others in
# its group at a lower weight (the ranking's). Kept by evidence: each group here, taken out
# alone, costs at least one query of bench/search_quality.py's own set (recall@3 or MRR, with
# one phrasing or three); the groups that cost nothing, or whose words mean different things in
# different apps ("room" is a chat channel and part of a house), were dropped. Semantic ranking
# (the `semantic` extra) covers the rest of the vocabulary without lists.
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


def tokens(text: str, stems: dict[str, str] | None = None) -> list[str]:
    """Lower-case word stems, splitting snake_case, camelCase and dotted paths.

    ``stems`` memoises stemming while one index is built; a query is stemmed afresh, so no
    word a guest sends is kept.
    """
    words = [word for word in map(str.lower, WORDS.findall(text)) if len(word) > 1 and word not in _STOPWORDS]
    if stems is None:
        return [_stem(word) for word in words]
    return [stems[word] if word in stems else stems.setdefault(word, _stem(word)) for word in words]


def distinct_stems(query: str) -> list[str]:
    """The stems of ``query``, each once, in the order they first appear."""
    return list(dict.fromkeys(tokens(query)))


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


def _relatives() -> dict[str, frozenset[str]]:
    related: dict[str, set[str]] = defaultdict(set)
    for group in _RELATED_GROUPS:
        stems = {_stem(word) for word in group.split()}
        for stem in stems:
            related[stem] |= stems - {stem}
    return {stem: frozenset(others) for stem, others in related.items()}


RELATED = _relatives()
"""Stem -> the stems of its close relatives (the words sharing a group with it)."""
