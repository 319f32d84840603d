"""The texts Monty hands over in place of values it cannot convert, and why each is refused.

What Monty (pydantic-monty 1.4.0, pinned) puts in place of a value it cannot hand to the host:
the value arrives as this text. Read as text it would be silently wrong data, so a string
that is exactly one of these is refused, in operation input and in results alike. (A class or
one of the sandbox's modules arrives as "<class 'C'>" or "<module 'os'>", which is also what
str() makes of it: harmless, so it passes.)
"""

from __future__ import annotations

import re

from ..._values import MAX_JSON_DEPTH

_UNAWAITED_REASON = "is an operation call that was never awaited"
_CONVERSIONS = (
    (re.compile(r"<coroutine external_future\(\d+\)>"), f"{_UNAWAITED_REASON}: write `await` before the call"),
    (re.compile(r"\[\.\.\.\]|\{\.\.\.\}|\(\.\.\.\)"), "contains itself (a cycle)"),
    (re.compile(r"<gather\(\d+\)>"), f"{_UNAWAITED_REASON}: write `await` before asyncio.gather(...)"),
    (re.compile(r"<coroutine object [^<>\n]*>"), "is a coroutine never awaited: write `await` before the call"),
    (re.compile(r"<deeply nested>"), f"is nested deeper than {MAX_JSON_DEPTH} levels"),
    (
        re.compile(r"<function ('[^'\n]*'|[\w.<>]+) at 0x[0-9a-f]+>|<bound method[^<>\n]*>"),
        "is a function, not a JSON value",
    ),
    (re.compile(r"<re\.Match object; [^\n]*>|<std(in|out|err)>"), "is an object, not a JSON value"),
    (re.compile(r"<[a-z_]+ object>"), "is an iterator, not a JSON value: make a list of it with list(...)"),
    (re.compile(r"(range|slice)\(-?\d+(, (-?\d+|None))*\)"), "is a range or slice, not a JSON value: use list(...)"),
    (re.compile(r"dict_(keys|values|items)\(\[.*\]\)", re.DOTALL), "is a dict view, not a JSON value: use list(...)"),
)
_CONVERSION_STARTS = frozenset("<[{(rsd")


def _conversion(text: str) -> str | None:
    """Why ``text`` is refused: it is what Monty made of a value that is not JSON."""
    if not text or text[0] not in _CONVERSION_STARTS:
        return None
    for pattern, reason in _CONVERSIONS:
        if pattern.fullmatch(text):
            return reason
    return None
