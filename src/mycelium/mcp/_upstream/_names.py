"""Guest names from upstream names: a path for each tool, and a module name for a source id.

A tool's name may hold any characters and may clash with another's once made an
identifier; the paths are one to one and depend on the set of names only, so a listing
in another order projects the same operations.
"""

from __future__ import annotations

import hashlib
import keyword
import unicodedata
from collections.abc import Iterable, Mapping

from ..._language import LanguageFacts
from ..._modules import RESERVED_NAMES
from ..._text import clip

MAX_SEGMENT_CHARS = 64
"""A path segment made from a tool name is cut to this (names cut alike then clash, and get suffixes)."""
MAX_SEGMENTS = 4
"""A tool name splits into at most this many path segments; the rest joins the last one."""

_SUFFIX_LENGTHS = (0, 8, 16, 64)  # hash characters tried in turn to keep clashing paths apart


def tool_paths(names: Iterable[str], language: LanguageFacts) -> dict[str, tuple[str, ...]]:
    """Map each tool name to its guest path, one to one, whatever order the names come in.

    A name splits at ``.`` and ``/`` into nested namespaces (empty parts dropped, at most
    :data:`MAX_SEGMENTS`); each part becomes an ASCII identifier (accents dropped, other
    characters ``_``, leading underscores dropped, ``tool`` for nothing, ``tool_`` before a
    digit, ``_`` after a keyword or after a namespace named like a module ``language``
    reserves, cut to :data:`MAX_SEGMENT_CHARS`). Where two names would share a path, the one
    whose name *is* that path keeps it and the others end in ``_`` and a hash of their own
    name; a path that is also a namespace of another (``issues`` and ``issues.list``) gets
    the suffix too. Longer hashes settle what is left; if that cannot, :class:`ValueError`
    names the tool. A path therefore depends on the set of names (and the language) only.
    """
    bases = {name: _base_path(name, language.reserved_modules) for name in names}
    levels = dict.fromkeys(bases, 0)
    for _ in _SUFFIX_LENGTHS:
        paths = {name: _suffixed(bases[name], name, _SUFFIX_LENGTHS[levels[name]]) for name in bases}
        clashing = _clashing(paths)
        if not clashing:
            return paths
        for name in clashing:
            if levels[name] + 1 == len(_SUFFIX_LENGTHS):
                raise ValueError(f"the tool {clip(name, 80)!r} cannot be given a path of its own")
            levels[name] += 1
    raise AssertionError("unreachable: every round raises a level or returns")


def _base_path(name: str, reserved: frozenset[str]) -> tuple[str, ...]:
    parts = [part for part in name.replace("/", ".").split(".") if part]
    if len(parts) > MAX_SEGMENTS:
        parts = [*parts[: MAX_SEGMENTS - 1], "_".join(parts[MAX_SEGMENTS - 1 :])]
    segments = [_identifier(part) for part in parts] or ["tool"]
    # A namespace named like a sandbox module cannot be built (see modules.check_guest_names).
    return (*(s + "_" if s in reserved else s for s in segments[:-1]), segments[-1])


def _identifier(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text)
    kept = "".join(
        c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in folded if not unicodedata.combining(c)
    )
    kept = kept.lstrip("_") or "tool"
    if kept[0].isdigit():
        kept = "tool_" + kept
    if keyword.iskeyword(kept):
        kept += "_"
    return kept[:MAX_SEGMENT_CHARS]


def _suffixed(path: tuple[str, ...], name: str, length: int) -> tuple[str, ...]:
    if not length:
        return path
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:length]
    return (*path[:-1], f"{path[-1][: MAX_SEGMENT_CHARS - length - 1]}_{digest}")


def _clashing(paths: Mapping[str, tuple[str, ...]]) -> set[str]:
    """The names that must move: sharing a path with another (bar the one named exactly so), or a prefix of one."""
    by_path: dict[tuple[str, ...], list[str]] = {}
    for name, path in paths.items():
        by_path.setdefault(path, []).append(name)
    clashing: set[str] = set()
    for path, sharing in by_path.items():
        if len(sharing) > 1:
            exact = [name for name in sharing if name == ".".join(path)]
            clashing.update(name for name in sharing if name not in exact[:1] or len(exact) > 1)
    prefixes = {path[:end] for path in paths.values() for end in range(1, len(path))}
    clashing.update(name for name, path in paths.items() if path in prefixes)
    return clashing


def _guest_name(id: str, *, has_namespace: bool, language: LanguageFacts) -> str:
    name = _identifier(id)
    if name in RESERVED_NAMES or name in language.reserved_modules or (not has_namespace and name in language.builtins):
        name += "_"
    return name
