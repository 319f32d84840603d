"""A source's secrets: the values redacted from whatever is built from upstream text, and a URL's credentials.

Header and ``env`` values, and a URL's user, password and query values, are secrets; the
URL's user and password travel as basic auth instead, so the URL the SDK logs holds none.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable

import httpx2

MIN_SECRET_CHARS = 8
"""Header and env values (and words of them) at least this long are redacted wherever they appear.

Digits are redacted in numbers too: a number (in JSON, or written in text) that shows this
many consecutive digits of a secret's is replaced.
"""

_REDACTED = "[redacted]"
_DIGIT_RUN = re.compile(rf"\d{{{MIN_SECRET_CHARS},}}")
# A number written with at least that many characters of digits and points (and an exponent, replaced
# with it); a shorter one holds too few digits to show a secret's, and its sign is not needed to hide it.
_WRITTEN_NUMBER = re.compile(rf"(?:\d|\.(?=\d))[\d.]{{{MIN_SECRET_CHARS - 1},}}(?:[eE][-+]?\d+)?")
_NOT_DIGITS = str.maketrans("", "", "+-.")
_NUMBER_CHARS = frozenset("0123456789.+-e")  # a repr writes its exponent with a small e


class _Secrets:
    """Values that must not show: replaced wherever this package writes upstream or exception text.

    A value (or a word of it) is replaced wherever it appears. A server can also send a secret
    of digits back as a number, which JSON and the server may write in another form
    (``73925501846271``, ``-7.3925501846271e13``, ``1739255018462719``, without the leading
    zeros of ``0073925501846271``), and a float keeps about 16 of its digits. So digits are
    compared as digits: a number shown anywhere (a JSON number, or one written in text) whose
    digits, sign, point and exponent aside, hold :data:`MIN_SECRET_CHARS` consecutive digits of
    a run of digits in a secret is replaced whole, in text by ``[redacted]`` and in JSON by the
    string ``"[redacted]"``. A secret split into pieces (across fields, or digits spelled out) is
    not recognised.
    """

    def __init__(self, values: Iterable[str]) -> None:
        found = {part for value in values for part in (value, *value.split()) if len(part) >= MIN_SECRET_CHARS}
        self._values = sorted(found, key=len, reverse=True)  # longest first: a value before its words
        runs = {run for value in found for run in _DIGIT_RUN.findall(value)}
        windows = {run[i : i + MIN_SECRET_CHARS] for run in runs for i in range(len(run) - MIN_SECRET_CHARS + 1)}
        self._windows = re.compile("|".join(sorted(windows))) if windows else None
        # Values a number's text could hold whole, such as "1234.5678" (its runs are too short for windows).
        self._numeric = [value for value in self._values if set(value) <= _NUMBER_CHARS]

    def text(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, _REDACTED)
        if self._windows is not None:
            text = _WRITTEN_NUMBER.sub(self._written_number, text)
        return text

    def value(self, value: object) -> object:
        if not self._values:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {self.text(str(key)): self.value(item) for key, item in value.items()}
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
        if any(value in shown for value in self._numeric) or self._shows_digits(shown):
            return _REDACTED
        return number

    def _written_number(self, match: re.Match[str]) -> str:
        return _REDACTED if self._shows_digits(match[0]) else match[0]

    def _shows_digits(self, written: str) -> bool:
        """Whether the number ``written`` holds MIN_SECRET_CHARS consecutive digits of a secret's."""
        if self._windows is None:
            return False
        digits = written.lower().partition("e")[0].translate(_NOT_DIGITS)
        return self._windows.search(digits) is not None


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
