"""JSON values: what crosses between a guest program, Mycelium and the host.

A JSON value here is built only from ``None``, ``bool``, ``int``, finite ``float``,
``str``, ``list`` (or ``tuple``, read as an array) and ``dict`` with ``str`` keys, with no
cycles and at most :data:`MAX_JSON_DEPTH` levels of nesting. Subclasses are refused: an
``IntEnum`` or a ``str`` subclass with a custom ``__str__`` is host data that has not been
encoded. A string (or key) holding a lone surrogate (``"\ud800"``, a file name read with
``surrogateescape``) is refused too: it is not Unicode text, and no UTF-8 transport can
carry it on.

:func:`json_size` checks a value and measures its compact encoding in one walk whose
work is bounded by the size limit it is given, whatever the value's shape: a sub-value
shared a million times is measured once and counted a million times, and the walk
stops as soon as the count passes the limit.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Collection, Hashable, Iterable
from typing import Any, TypeAlias, cast

from ._text import clip

__all__ = [
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "DuplicateKey",
    "JsonTooLarge",
    "JsonValue",
    "NotJson",
    "check_json",
    "dumps_compact",
    "first_repeated",
    "json_size",
    "unique_keys",
]

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None

MAX_JSON_DEPTH = 128
"""How deeply containers may nest in any value that crosses: operation input, output and results."""
MAX_INT_DIGITS = 4_300
"""Python refuses to print a longer int (``sys.get_int_max_str_digits``); JSON text needs one."""
_MAX_INT_BITS = int(MAX_INT_DIGITS * 3.3219280948873626)  # digits * log2(10), a little under
_SCALARS = (type(None), bool)
_NUMBER_KINDS = frozenset({type(None), bool, int, float})
_FLAT_MIN = 32  # shorter containers are cheaper to walk than to measure in C
_FLAT_SLICE = 4_096
_MAX_WHERE_CHARS = 120
_quoted = json.encoder.encode_basestring
_AS_TEXT = "write it as text with .isoformat()"
_AS_LIST = "make it a list with sorted(...), or list(...) if its items cannot be compared"
_AS_BYTES = "make it text with .decode(), or base64.b64encode(...).decode() if it is not text"
# How to turn the values programs most often send by mistake into JSON, by type name: a
# guest's values reach the host as the host's own types.
_FIXES = {
    "datetime": _AS_TEXT,
    "date": _AS_TEXT,
    "time": _AS_TEXT,
    "timedelta": "make it a number of seconds with .total_seconds()",
    "set": _AS_LIST,
    "frozenset": _AS_LIST,
    "bytes": _AS_BYTES,
    "bytearray": _AS_BYTES,
    "Decimal": "make it text with str(...) to keep every digit, or a number with float(...)",
    "complex": "send its parts: [z.real, z.imag]",
    "PurePosixPath": "make it text with str(...)",
    "PosixPath": "make it text with str(...)",
}
_NOUNS = {"MontyClassProxy": "an object of a class the program defined"}  # what Monty hands over for one
_FIX_OBJECT = 'build a dict of the fields it needs instead ({"name": item.name, ...})'

StringCheck: TypeAlias = Callable[[str], "str | None"]
"""Reads one string of a value; returns why it is refused (completing "the value at /x ..."), or ``None``."""


class NotJson(ValueError):
    """A value is not a JSON value; the message says what and where (a JSON-pointer-like path)."""


class JsonTooLarge(NotJson):
    """A value's compact JSON encoding is longer than the limit. ``size`` is a lower bound:
    measuring stopped as soon as the limit was passed."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"the value encodes to more than {limit} bytes (at least {size})")


class DuplicateKey(ValueError):
    """A JSON object names ``key`` twice: Python's parser would keep the last silently."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__("an object has a duplicate key")


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook`` for text where a repeated key is an error, not a loss."""
    mapping = dict(pairs)  # in C: the common case costs no loop in Python
    if len(mapping) == len(pairs):
        return mapping
    raise DuplicateKey(cast(str, first_repeated(key for key, _ in pairs)))


def first_repeated(items: Iterable[Hashable]) -> Any:
    """The first item of ``items`` equal to an earlier one, or ``None`` when every one is new."""
    seen: set[Hashable] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None


def check_json(value: object) -> None:
    """Raise :class:`NotJson` unless ``value`` is a JSON value (see the module docstring)."""
    if _plain(value) or (type(value) is dict and all(_ascii(key) and _plain(v) for key, v in value.items())):
        return  # the common small cases, without the walk
    json_size(value)


def json_size(value: object, *, limit: int | None = None, strings: StringCheck | None = None) -> int:
    """The length in bytes of ``value``'s compact JSON encoding (:func:`dumps_compact`, UTF-8).

    Raises :class:`NotJson` (saying where) unless ``value`` is a JSON value, and
    :class:`JsonTooLarge` as soon as the length passes ``limit``. ``strings`` may refuse
    strings (and keys) that stand for something that is not JSON. The work done is
    proportional to the distinct containers reached and, with a ``limit``, to the limit.
    """
    return _Measure(limit, strings).run(value)


class _Measure:
    """One walk. Recursive, because nesting is refused past :data:`MAX_JSON_DEPTH` levels
    before the walk descends further; the containers on the current path are open (a
    shared sub-value is not a cycle), and a finished container's size is kept (a shared
    sub-value is measured once). Where a problem is, is built only when there is one."""

    def __init__(self, limit: int | None, strings: StringCheck | None) -> None:
        self._limit = limit
        self._strings = strings
        self._used = 0
        self._open: set[int] = set()
        self._sizes: dict[int, int] = {}

    def run(self, value: object) -> int:
        try:
            self._visit(value, 0)
        except _Located as exc:
            # A key that is not Unicode text is shown escaped: the message must itself be sendable.
            where = "".join(f"/{part}" for part in reversed(exc.path)).encode("utf-8", "backslashreplace").decode()
            raise NotJson(f"{_at(where)} {exc.reason}") from None
        return self._used

    def _add(self, size: int) -> None:
        self._used += size
        if self._limit is not None and self._used > self._limit:
            raise JsonTooLarge(self._used, self._limit)

    def _need(self, size: int) -> None:
        """Refuse, before any work, what cannot fit in what is left of the limit."""
        if self._limit is not None and self._used + size > self._limit:
            raise JsonTooLarge(self._used + size, self._limit)

    def _string(self, text: str) -> None:
        self._need(len(text) + 2)
        if self._strings is not None:
            reason = self._strings(text)
            if reason is not None:
                raise _Located(reason)
        try:
            self._add(_encoded_length(_quoted(text)))
        except UnicodeEncodeError:
            raise _Located("is text with a lone surrogate, which is not Unicode") from None

    def _visit(self, item: object, depth: int) -> None:
        kind = type(item)
        if kind is str:
            self._string(item)  # type: ignore[arg-type]
        elif kind is int:
            if item.bit_length() > _MAX_INT_BITS:  # type: ignore[attr-defined]
                raise _Located(f"is an integer of more than {MAX_INT_DIGITS} digits")
            self._add(len(str(item)))
        elif kind is bool or item is None:
            self._add(5 if item is False else 4)
        elif kind is float:
            if not math.isfinite(item):  # type: ignore[arg-type]
                raise _Located(f"is {item!r}, which JSON cannot represent: send None instead")
            self._add(len(repr(item)))
        elif kind is list or kind is tuple or kind is dict:
            self._container(item, depth)  # type: ignore[arg-type]
        else:
            raise _Located(_not_json(kind.__name__))

    def _container(self, item: list[object] | tuple[object, ...] | dict[object, object], depth: int) -> None:
        if depth >= MAX_JSON_DEPTH:
            raise _Located(f"is nested deeper than {MAX_JSON_DEPTH} levels")
        ident = id(item)
        if ident in self._open:
            raise _Located("contains itself (a cycle)")
        known = self._sizes.get(ident)
        if known is not None:
            self._add(known)
            return
        count = len(item)
        # Every element costs at least a byte and a comma (an entry at least `"":0,`): a
        # container that cannot fit is refused before any of its elements is looked at.
        self._need(1 + (count * 5 if type(item) is dict else count * 2))
        start = self._used
        if count < _FLAT_MIN or not self._flat(item):
            self._open.add(ident)
            self._add(2 + max(count - 1, 0))  # brackets and commas; elements add their own sizes
            if type(item) is dict:
                for key, child in item.items():
                    if type(key) is not str:
                        raise _Located(f"has {_a(type(key).__name__)} key; JSON keys are strings: use str(key)")
                    try:
                        self._string(key)
                        self._used += 1  # the colon
                        self._element(child, depth)
                    except _Located as exc:
                        exc.path.append(key)
                        raise
            else:
                for index, child in enumerate(item):
                    try:
                        self._element(child, depth)
                    except _Located as exc:
                        exc.path.append(index)
                        raise
            self._open.discard(ident)
        self._sizes[ident] = self._used - start

    def _element(self, child: object, depth: int) -> None:
        # The commonest elements inline: most of a value is short strings and small ints.
        if type(child) is str and self._strings is None and len(child) < 64 and child.isascii():
            self._add(len(_quoted(child)))
        elif type(child) is int and -(2**63) <= child < 2**63:
            self._add(len(str(child)))
        else:
            self._visit(child, depth + 1)

    def _flat(self, item: list[object] | tuple[object, ...] | dict[object, object]) -> bool:
        """Measure a long container of scalars in C and add its size; ``False`` to walk it instead.

        Anything unusual (a string refused, NaN, a huge int, strings beside numbers) is left
        to the walk, which says where it is.
        """
        values: Collection[Any] = item.values() if isinstance(item, dict) else item
        kinds = set(map(type, values))
        if not (kinds <= _NUMBER_KINDS or kinds == {str}):
            return False
        texts: list[Collection[str]] = [values] if kinds == {str} else []
        if isinstance(item, dict):
            if set(map(type, item)) != {str}:
                return False
            texts.append(cast("dict[str, object]", item))
        self._need(2 * len(item) + sum(sum(map(len, group)) for group in texts))
        check = self._strings
        if check is not None and any(reason is not None for group in texts for reason in map(check, group)):
            return False
        if int in kinds and not 0 < sys.get_int_max_str_digits() <= MAX_INT_DIGITS:
            return False  # only the interpreter's digit limit keeps a huge int from printing slowly
        start = self._used
        try:
            if type(item) is dict:
                self._add(_encoded_length(dumps_compact(item)))  # type: ignore[arg-type]
                return True
            # In slices, so a long list of numbers stops at the limit, not at its end.
            self._add(2)
            for begin in range(0, len(item), _FLAT_SLICE):
                part = item[begin : begin + _FLAT_SLICE]
                self._add(_encoded_length(dumps_compact(part)) - 2 + (1 if begin else 0))  # type: ignore[arg-type]
        except ValueError as exc:
            if isinstance(exc, JsonTooLarge):
                raise
            self._used = start  # NaN, an infinity or an int too long to print: the walk says where
            return False
        return True


class _Located(Exception):
    """A problem found inside a value; the walk adds where on its way out."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.path: list[object] = []


def _encoded_length(text: str) -> int:
    """UTF-8 length; ``UnicodeEncodeError`` (a ``ValueError``) for a lone surrogate."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _ascii(value: object) -> bool:
    return type(value) is str and value.isascii()


def _plain(value: object) -> bool:
    """A scalar that is certainly JSON: no float (NaN), no int too long to print, no lone surrogate."""
    kind = type(value)
    return kind in _SCALARS or _ascii(value) or (kind is int and -(2**63) <= value < 2**63)  # type: ignore[operator]


def dumps_compact(value: JsonValue) -> str:
    """Encode a checked JSON value compactly (no spaces), keeping non-ASCII text as is."""
    return _COMPACT.encode(value)


# Made once: json.dumps makes an encoder for every call given anything but its defaults.
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _not_json(type_name: str) -> str:
    """Why a value of type ``type_name`` is refused, and how to send it as JSON when that is known."""
    noun = _NOUNS.get(type_name)
    fix = _FIX_OBJECT if noun is not None else _FIXES.get(type_name)
    told = f"is {noun or _a(type_name)}, not a JSON value"
    return f"{told}: {fix}" if fix else told


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1].lower() in "aeiou" else f"a {noun}"


def _at(where: str) -> str:
    return f"the value at {clip(where, _MAX_WHERE_CHARS)}" if where else "the value"
