"""A stdio server's output cut into lines of bounded size, and what a line too long to keep still shows.

:class:`_LineSplitter` is fed the bytes as they come and keeps only the line in progress,
scanning each byte for a newline once: time is linear in what the server sends. A line
that passes the bound is cut: its first bytes are kept, the rest up to the next newline
is counted and dropped, never stored, so the host's memory does not grow with it.

The line a server sends in answer to a call is a JSON-RPC response, and the call waits
for the id it carries. :func:`_answered_id` reads that id from the ends of a cut line,
where every SDK writes it: first (the Python SDK: ``{"jsonrpc", "id", "result"}``) or
last (the TypeScript SDK: ``{"result", "jsonrpc", "id"}``). A line whose ends do not show
it is a request or notification of the server's, or an answer of another shape.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_HEAD_BYTES = 512
_TAIL_BYTES = 512

_JSONRPC = rb'(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'
_ID = rb'(-?\d{1,19}|"(?:[^"\\]|\\.){0,200}")'
_ANSWER = rb'"(?:result|error)"\s*:'
_ID_FIRST = re.compile(rb"\s*\{\s*" + _JSONRPC + rb'"id"\s*:\s*' + _ID + rb"\s*,\s*" + _JSONRPC + _ANSWER)
_ANSWER_FIRST = re.compile(rb"\s*\{\s*" + _JSONRPC + _ANSWER)
_ID_LAST = re.compile(rb'[{,]\s*"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*\Z')


@dataclass(frozen=True)
class _Cut:
    """A line passed the bound: the rest of it is dropped; ``head`` is its first bytes."""

    head: bytes


@dataclass(frozen=True)
class _Skipped:
    """A cut line ended: its first and last bytes, and how many bytes it had in all."""

    head: bytes
    tail: bytes
    size: int


class _LineSplitter:
    """Cuts a byte stream into lines (without their newline) of at most ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._pending = bytearray()  # the line in progress: never holds a newline
        self._skipping: _Skipped | None = None  # the cut line being dropped, so far

    def feed(self, data: bytes) -> list[bytes | _Cut | _Skipped]:
        """The lines ``data`` completes, in order, a :class:`_Cut` and a :class:`_Skipped` for each cut one."""
        found: list[bytes | _Cut | _Skipped] = []
        start = 0
        if self._skipping is not None:
            end = data.find(b"\n")
            dropped = self._skipping = self._dropping(self._skipping, data[:end] if end >= 0 else data)
            if end < 0:
                return found
            found.append(dropped)
            self._skipping = None
            start = end + 1
        scanned = len(self._pending)  # what it holds was scanned already
        self._pending += memoryview(data)[start:]
        begin = 0
        while (end := self._pending.find(b"\n", scanned)) >= 0:
            if end - begin > self._limit:
                line = memoryview(self._pending)[begin:end]  # its ends are taken from the line alone
                head, tail = bytes(line[:_HEAD_BYTES]), bytes(line[-_TAIL_BYTES:])
                line.release()  # the buffer is resized below: no view of it may stay
                found += [_Cut(head), _Skipped(head, tail, end - begin)]
            else:
                found.append(bytes(self._pending[begin:end]))
            begin = scanned = end + 1
        del self._pending[:begin]
        if len(self._pending) > self._limit:
            head = bytes(self._pending[:_HEAD_BYTES])
            self._skipping = _Skipped(head, bytes(self._pending[-_TAIL_BYTES:]), len(self._pending))
            self._pending = bytearray()
            found.append(_Cut(head))
        return found

    @staticmethod
    def _dropping(skipped: _Skipped, piece: bytes) -> _Skipped:
        tail = (skipped.tail + piece[-_TAIL_BYTES:])[-_TAIL_BYTES:]
        return _Skipped(skipped.head, tail, skipped.size + len(piece))


def _answered_id(head: bytes, tail: bytes | None = None) -> int | str | None:
    """The id of the call a cut line answers, when its first bytes (or, once it ended, its last) show one."""
    found = _ID_FIRST.match(head)
    if found is None and tail is not None and _ANSWER_FIRST.match(head):
        found = _ID_LAST.search(tail)
    if found is None:
        return None
    try:
        request_id = json.loads(found[1])
    except ValueError:  # a number with leading zeros, a string with a bad escape
        return None
    return request_id if isinstance(request_id, int | str) else None
