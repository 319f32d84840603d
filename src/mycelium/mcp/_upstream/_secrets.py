"""A source's secrets: the values redacted from whatever is built from upstream text, and a URL's credentials.

Header and ``env`` values, and a URL's user, password and query values, are secrets; the
URL's user and password travel as basic auth instead, so the URL the SDK logs holds none.

What a server sends is large and may be hostile (a result of up to ``MAX_RESULT_CHARS``, an
error's text of up to a whole message), so redacting it is bounded in time too: a text
shown cut is redacted only as far as it is shown (:meth:`_Secrets.clipped`), a value is
first checked in its JSON for anything to redact at all (:meth:`_Secrets.value`), and no
search over digits is one long call that holds the interpreter (``_SEARCH_CHARS``).
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

import httpx2

from ..._text import clip

MIN_SECRET_CHARS = 8
"""Header and env values (and words of them) at least this long are redacted wherever they appear.

Digits are redacted in numbers too: a number (in JSON, or written in text) that shows this
many consecutive digits of a secret's is replaced.
"""

_REDACTED = "[redacted]"
_DIGIT_RUN = re.compile(rf"[0-9]{{{MIN_SECRET_CHARS},}}")
# A number written with at least MIN_SECRET_CHARS digits, plain or grouped (7.3925501846271e13,
# 73,925,501,846,271, 7392 5501 8462 71): one separator at a time between digits (group 1), then
# perhaps an exponent (its digits, group 2), replaced with it. Its sign is left: it shows no digit.
# Fewer digits cannot show a secret's.
_WRITTEN_NUMBER = re.compile(rf"(\.?[0-9](?:[.,_' -]?[0-9]){{{MIN_SECRET_CHARS - 1},}})(?:[eE][-+]?([0-9]+))?")
_SEPARATORS = ".,_' -"
_NUMBER_CHARS = frozenset("0123456789.+-e")  # a repr writes its exponent with a small e
_SEARCH_CHARS = 4_096  # digits searched per call: one call over a long run would hold the GIL throughout


class _Secrets:
    """Values that must not show: replaced wherever this package writes upstream or exception text.

    A value (or a word of it) is replaced wherever it appears. A server can also send a secret
    of digits back as a number, which JSON and the server may write in another form
    (``73925501846271``, ``-7.3925501846271e13``, ``1739255018462719``, ``73,925,501,846,271``,
    without the leading zeros of ``0073925501846271``), and a float keeps about 16 of its
    digits. So digits are compared as digits: a number shown anywhere (a JSON number, or one
    written in text) whose digits, sign, separators, point and exponent aside, hold
    :data:`MIN_SECRET_CHARS` consecutive digits of a run of digits in a secret is replaced
    whole, in text by ``[redacted]`` and in JSON by the string ``"[redacted]"``. A secret split
    into pieces (across fields, by letters, or digits spelled out) is not recognised.
    """

    def __init__(self, values: Iterable[str]) -> None:
        found = {part for value in values for part in (value, *value.split()) if len(part) >= MIN_SECRET_CHARS}
        self._values = sorted(found, key=len, reverse=True)  # longest first: a value before its words
        self._longest = len(self._values[0]) if self._values else 0
        # Each value as it shows inside a JSON string: JSON escapes character by character.
        self._in_json = [json.dumps(value, ensure_ascii=False)[1:-1] for value in self._values]
        runs = {run for value in found for run in _DIGIT_RUN.findall(value)}
        windows = {run[i : i + MIN_SECRET_CHARS] for run in runs for i in range(len(run) - MIN_SECRET_CHARS + 1)}
        self._windows = re.compile(_any_of(windows)) if windows else None
        # Values a number's text could hold whole, such as "1234.5678" (its runs are too short for windows).
        self._numeric = [value for value in self._values if set(value) <= _NUMBER_CHARS]

    def text(self, text: str) -> str:
        """``text`` with every secret, and every number showing a secret's digits, replaced."""
        for value in self._values:
            if value in text:
                text = text.replace(value, _REDACTED)
        if self._holds_window(text):  # only then can a number in it show a secret's digits
            text = _WRITTEN_NUMBER.sub(self._written_number, text)
        return text

    def clipped(self, text: str, limit: int) -> str:
        """``text`` redacted and cut to ``limit`` characters, at a cost that grows with ``limit``, not with ``text``.

        A long text is redacted only as far as twice the longest secret past ``limit``. A secret
        that straddles that end is not matched, and redactions before it may pull it into what
        is shown, but its first characters sit in the last ``_longest`` characters of the
        redacted start: those are dropped before it is cut.
        """
        reach = limit + 2 * self._longest
        if len(text) <= reach:
            return clip(self.text(text), limit)
        start = self.text(text[:reach])
        return clip(start[: len(start) - self._longest] + "...", limit)

    def value(self, value: object) -> object:
        """A JSON value with every secret replaced, in strings, keys and numbers.

        Most values hold nothing to redact, and their JSON says so at C speed: every string
        and key of the value is in it, where each secret shows escaped as JSON escapes it,
        and so is the text of every number. Only a value whose JSON may show a secret, or a
        secret's digits, is walked.
        """
        if not self._values:
            return value
        try:
            written = json.dumps(value, ensure_ascii=False)
        except ValueError:  # an int past Python's limit on digits to write: the walk redacts it
            return self._walked(value)
        if any(secret in written for secret in self._in_json) or self._holds_window(written):
            return self._walked(value)
        return value

    def _walked(self, value: object) -> object:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._walked(item) for item in value]
        if isinstance(value, dict):
            return {self.text(str(key)): self._walked(item) for key, item in value.items()}
        if isinstance(value, int | float) and not isinstance(value, bool):
            return self._number(value)
        return value

    def _number(self, number: int | float) -> int | float | str:
        if self._windows is None and not self._numeric:
            return number
        try:
            shown = repr(number)  # a float's shortest form, which keeps every digit it has
        except ValueError:  # an int past Python's limit on digits to write: it cannot be checked
            return _REDACTED
        if len(shown) < MIN_SECRET_CHARS:
            return number
        if any(value in shown for value in self._numeric) or self._holds_window(shown.partition("e")[0]):
            return _REDACTED
        return number

    def _written_number(self, found: re.Match[str]) -> str:
        return _REDACTED if self._shows_digits(found) else found[0]

    def _shows_digits(self, found: re.Match[str]) -> bool:
        """Whether a number written in text shows a secret's digits, before its exponent or in it."""
        return self._holds_window(found[1]) or (found[2] is not None and self._holds_window(found[2]))

    def _holds_window(self, text: str) -> bool:
        """Whether ``text``, its separators dropped, holds MIN_SECRET_CHARS consecutive digits of a secret's.

        For one number (before its exponent, or its exponent), whether it shows a secret's
        digits. For a whole text, whether a number in it may: every number's digits run on
        in it, and so do those of numbers side by side, so it may say yes for none.
        """
        if self._windows is None:
            return False
        for separator in _SEPARATORS:  # str.translate would be as quick for ASCII text only
            text = text.replace(separator, "")
        reach = _SEARCH_CHARS + MIN_SECRET_CHARS - 1  # each piece overlaps the next by a window less one
        if len(text) <= reach:
            return self._windows.search(text) is not None
        last = len(text) - MIN_SECRET_CHARS + 1
        return any(self._windows.search(text, at, at + reach) for at in range(0, last, _SEARCH_CHARS))


def _any_of(words: Iterable[str]) -> str:
    """A pattern matching any of ``words`` (at least one), written as a tree of their common starts.

    Python's ``re`` tries the alternatives of ``a|b|c`` one by one at each position; branching
    one character at a time costs a few tries a position however many words there are.
    """
    tree: dict[str, dict[str, Any]] = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})

    def written(node: dict[str, Any]) -> str:
        if not node:
            return ""
        branches = [re.escape(char) + written(child) for char, child in sorted(node.items())]
        return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"

    return written(tree)


def _url_secrets(url: str | None) -> list[str]:
    if url is None:
        return []
    parts = urllib.parse.urlsplit(url)
    query = [value for _key, value in urllib.parse.parse_qsl(parts.query)]
    return [value for value in (parts.password, parts.username, *query) if value]


def _without_userinfo(url: str | None) -> tuple[str | None, httpx2.BasicAuth | None]:
    if url is None:
        return None, None
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.netloc.rpartition("@")[2]
    auth = httpx2.BasicAuth(urllib.parse.unquote(parts.username or ""), urllib.parse.unquote(parts.password or ""))
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), auth
