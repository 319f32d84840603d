"""JSON values: what crosses between a guest program, Mycelium and the host.

A JSON value here is built only from ``None``, ``bool``, ``int``, finite ``float``,
``str``, ``list`` (or ``tuple``, read as an array) and ``dict`` with ``str`` keys, with no
cycles and bounded depth. Subclasses are refused: an ``IntEnum`` or a ``str`` subclass
with a custom ``__str__`` is host data that has not been encoded.
"""

from __future__ import annotations

import json
import math
from typing import TypeAlias

__all__ = ["MAX_INT_DIGITS", "MAX_JSON_DEPTH", "JsonValue", "NotJson", "check_json", "dumps_compact"]

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None

MAX_JSON_DEPTH = 256
MAX_INT_DIGITS = 4_300
"""Python refuses to print a longer int (``sys.get_int_max_str_digits``); JSON text needs one."""
_MAX_INT_BITS = int(MAX_INT_DIGITS * 3.3219280948873626)  # digits * log2(10), a little under
_SCALARS = (type(None), bool, str)


class NotJson(ValueError):
    """A value is not a JSON value; the message says what and where (a JSON-pointer-like path)."""


def check_json(value: object) -> None:
    """Raise :class:`NotJson` unless ``value`` is a JSON value (see the module docstring)."""
    if _plain(value) or (type(value) is dict and all(type(key) is str and _plain(v) for key, v in value.items())):
        return  # the common small cases, without the walk
    # Iterative walk: a hostile value may be nested far deeper than Python's recursion limit.
    stack: list[tuple[object, str, int]] = [(value, "", 0)]
    # Containers on the current path, so a shared (non-cyclic) sub-value is not a cycle.
    open_ids: dict[int, int] = {}
    exits: list[tuple[int, int]] = []
    while stack:
        item, where, depth = stack.pop()
        while exits and exits[-1][1] >= depth:
            open_ids.pop(exits.pop()[0], None)
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind is int:
            if item.bit_length() > _MAX_INT_BITS:  # type: ignore[attr-defined]
                raise NotJson(f"{_at(where)} is an integer of more than {MAX_INT_DIGITS} digits")
            continue
        if kind is float:
            if not math.isfinite(item):  # type: ignore[arg-type]
                raise NotJson(f"{_at(where)} is {item!r}, which JSON cannot represent")
            continue
        if kind not in (list, tuple, dict):
            raise NotJson(f"{_at(where)} is a {kind.__name__}, not a JSON value")
        if depth >= MAX_JSON_DEPTH:
            raise NotJson(f"{_at(where)} is nested deeper than {MAX_JSON_DEPTH} levels")
        if id(item) in open_ids:
            raise NotJson(f"{_at(where)} contains itself (a cycle)")
        open_ids[id(item)] = depth
        exits.append((id(item), depth))
        if kind is dict:
            mapping: dict[object, object] = item  # type: ignore[assignment]
            children: list[tuple[object, str, int]] = []
            for key, child in mapping.items():
                if type(key) is not str:
                    raise NotJson(f"{_at(where)} has a {type(key).__name__} key; JSON keys are strings")
                children.append((child, f"{where}/{key}", depth + 1))
            stack.extend(reversed(children))
        else:
            sequence: list[object] = item  # type: ignore[assignment]
            stack.extend((child, f"{where}/{index}", depth + 1) for index, child in reversed(list(enumerate(sequence))))


def _plain(value: object) -> bool:
    """A scalar that is certainly JSON: no float (NaN) and no int too long to print."""
    kind = type(value)
    return kind in _SCALARS or (kind is int and -(2**63) <= value < 2**63)  # type: ignore[operator]


def dumps_compact(value: JsonValue) -> str:
    """Encode a checked JSON value compactly (no spaces), keeping non-ASCII text as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _at(where: str) -> str:
    return f"the value at {where}" if where else "the value"
