"""A source's secrets: the values redacted from whatever is built from upstream text, and a URL's credentials.

Header and ``env`` values, and a URL's user, password and query values, are secrets; the
URL's user and password travel as basic auth instead, so the URL the SDK logs holds none.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable

import httpx2

MIN_SECRET_CHARS = 8
"""Header and env values (and words of them) at least this long are redacted wherever they appear."""

_REDACTED = "[redacted]"


class _Secrets:
    """Values that must not show: replaced wherever this package writes upstream or exception text."""

    def __init__(self, values: Iterable[str]) -> None:
        found = {part for value in values for part in (value, *value.split()) if len(part) >= MIN_SECRET_CHARS}
        self._values = sorted(found, key=len, reverse=True)  # longest first: a value before its words

    def text(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, _REDACTED)
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
        return value


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
