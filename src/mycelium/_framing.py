"""A byte format for a JSON header followed by opaque bytes: how Mycelium keeps its own records.

``magic`` (a fixed tag naming the format and its version), the header's length as four
bytes, the header as compact JSON, then the body. The tag makes a record of another kind
(or another version) fail at once; the length lets the body be anything.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["frame", "unframe"]

_LENGTH_BYTES = 4


def frame(magic: bytes, header: object, body: bytes) -> bytes:
    """``header`` (a JSON value, with finite numbers only) and ``body`` in one byte string tagged ``magic``."""
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    return magic + len(text).to_bytes(_LENGTH_BYTES, "big") + text + body


def unframe(magic: bytes, data: bytes) -> tuple[Any, bytes]:
    """The header and the body of ``data``; ``ValueError`` when it is not a whole record tagged ``magic``."""
    if not data.startswith(magic):
        raise ValueError("not a record of this kind")
    start = len(magic) + _LENGTH_BYTES
    if len(data) < start:
        raise ValueError("the record is cut short")
    end = start + int.from_bytes(data[len(magic) : start], "big")
    if len(data) < end:
        raise ValueError("the record's header is cut short")
    try:
        header = json.loads(data[start:end])
    except RecursionError:
        raise ValueError("the record's header is nested too deeply") from None
    return header, data[end:]
