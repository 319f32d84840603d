"""Project a request's flat bindings into the logical namespaces a guest program sees.

A request carries bindings keyed by transport alias and relative path. A guest sees
them as nested attributes: every first path segment is a top-level name, and the same
tree also hangs under ``env`` (``demo.ping`` and ``env.apps.bazaar.windows.open``).
An operation takes one positional value (usually a mapping) or keyword arguments,
not both, and everything it receives must be JSON: anything else is :class:`InvalidInput`
naming the field, before the call is placed.

Some transports cannot use dots in a name. :func:`sandbox_provider_operation_name`
gives them one flat name per (transport alias, relative path), one-to-one, and
:func:`sandbox_operation_path` reads it back.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Iterable, Mapping
from typing import NamedTuple, TypeAlias

from .._bindings import BindingCallback
from .._exceptions import InvalidInput
from .._text import clip
from .._values import JsonValue, NotJson, StringCheck, json_size
from ._contract import SandboxRequest

__all__ = [
    "GuestNamespace",
    "GuestOperation",
    "Leaf",
    "NamespaceTree",
    "closest_names",
    "guest_input",
    "guest_root",
    "missing_name_advice",
    "namespace_tree",
    "positional_name",
    "sandbox_operation_path",
    "sandbox_provider_operation_name",
]


class Leaf(NamedTuple):
    """One operation in a namespace tree: where a guest finds it and where its binding is."""

    path: str
    """The complete logical path a guest types (``apps.bazaar.windows.open``)."""
    transport: str
    relative: str
    """The binding is ``request.bindings[transport][relative]``."""


NamespaceTree: TypeAlias = dict[str, "NamespaceTree | Leaf"]
"""Segment -> subtree, or -> :class:`Leaf` at an operation.

It names bindings rather than holding them, so one tree serves every request of a revision."""


def namespace_tree(request: SandboxRequest) -> NamespaceTree:
    """Arrange ``request.bindings`` by logical path. Raises ``ValueError`` on a path conflict."""
    root: NamespaceTree = {}
    for transport, operations in request.bindings.items():
        prefix = request.namespace_paths.get(transport, (transport,))
        for relative in operations:
            path = (*prefix, *relative.split("."))
            node = root
            for depth, segment in enumerate(path[:-1]):
                child = node.setdefault(segment, {})
                if not isinstance(child, dict):
                    raise ValueError(f"{'.'.join(path[: depth + 1])} is both an operation and a namespace")
                node = child
            if path[-1] in node:
                raise ValueError(f"{'.'.join(path)} is bound twice or is also a namespace")
            node[path[-1]] = Leaf(".".join(path), transport, relative)
    return root


def closest_names(name: str, members: Iterable[str], namespace: str = "") -> list[str]:
    """Up to three of ``members`` (names in ``namespace``) spelled most like ``name``, as dotted paths.

    Pass only names the program can reach: a suggestion must never name what its lease does not hold.
    """
    prefix = f"{namespace}." if namespace else ""
    return [prefix + match for match in difflib.get_close_matches(name, sorted(set(members)), n=3, cutoff=0.6)]


def missing_name_advice(namespace: str, suggestions: Iterable[str]) -> str:
    """What a program is told when a name it typed in ``namespace`` (``""``: at the top) is not there.

    ``suggestions`` are the paths it may have meant (see :func:`closest_names`); the advice
    also says how to list the namespace and how to find an operation by what it does.
    """
    suggested = " or ".join(suggestions)
    guess = f"did you mean {suggested}? " if suggested else ""
    logical = "" if namespace == "env" else namespace.removeprefix("env.")
    listing = f'forage.list("{logical}") lists {namespace}, ' if namespace else ""
    return f'{guess}{listing}forage.search("what it should do") finds operations'


def positional_name(callback: BindingCallback) -> str | None:
    """The name a binding gives its one positional argument, if it takes one beside keywords.

    Operations take one mapping or keywords. A host helper may instead declare, as the
    attribute ``positional_name``, that a positional value is its first keyword:
    ``forage.search("query", limit=3)``.
    """
    name = getattr(callback, "positional_name", None)
    return name if isinstance(name, str) else None


def guest_input(
    path: str,
    args: tuple[object, ...],
    kwargs: Mapping[str, object],
    positional: str | None = None,
    *,
    max_bytes: int | None = None,
    strings: StringCheck | None = None,
) -> JsonValue:
    """The one input value for a guest call of ``path``.

    ``TypeError`` for a wrong call shape; :class:`InvalidInput` naming the field for a value
    that is not JSON or encodes to more than ``max_bytes`` (``strings`` as for
    :func:`~mycelium._values.json_size`). With ``positional`` (see :func:`positional_name`),
    one positional value joins the keywords under that name.
    """
    if positional is not None and len(args) == 1 and not isinstance(args[0], Mapping):
        if positional in kwargs:
            raise TypeError(f"{path}() got {positional!r} twice")
        value: object = {positional: args[0], **kwargs}
    elif args and kwargs:
        raise TypeError(f"{path}() takes one mapping or keyword arguments, not both")
    elif len(args) > 1:
        raise TypeError(f"{path}() takes one mapping or keyword arguments, got {len(args)} positional arguments")
    else:
        value = args[0] if args else dict(kwargs)
    try:
        json_size(value, limit=max_bytes, strings=strings)
    except NotJson as exc:
        raise InvalidInput(path, [str(exc)]) from None
    return value  # type: ignore[return-value]  # json_size proved it is JSON


class GuestOperation:
    """A callable operation in a guest namespace; calling it starts the call and returns an awaitable."""

    __slots__ = ("_callback", "_max_bytes", "_path")

    def __init__(self, path: str, callback: BindingCallback, max_bytes: int | None = None) -> None:
        self._path = path
        self._callback = callback
        self._max_bytes = max_bytes

    def __call__(self, *args: object, **kwargs: object) -> Awaitable[JsonValue]:
        positional = positional_name(self._callback)
        return self._callback(guest_input(self._path, args, kwargs, positional, max_bytes=self._max_bytes))

    def __repr__(self) -> str:
        return f"<operation {self._path}>"


class GuestNamespace:
    """A namespace of operations and child namespaces, reached by attribute."""

    __slots__ = ("_children", "_path")

    def __init__(self, path: str, children: Mapping[str, GuestNamespace | GuestOperation]) -> None:
        self._path = path
        self._children = dict(children)

    def __getattr__(self, name: str) -> GuestNamespace | GuestOperation:
        try:
            return self._children[name]
        except KeyError:
            where = f"namespace {self._path}" if self._path else "the guest namespace"
            advice = missing_name_advice(self._path, closest_names(name, self._children, self._path))
            raise AttributeError(f"{where} has no {name!r} ({advice})") from None

    def __dir__(self) -> list[str]:
        return sorted(self._children)

    def __repr__(self) -> str:
        return f"<namespace {self._path or '(root)'}: {', '.join(sorted(self._children))}>"


def guest_root(request: SandboxRequest) -> GuestNamespace:
    """Every top-level name of the request's bindings, plus ``env`` holding the same tree."""
    top = _project(request, namespace_tree(request), ())
    return GuestNamespace("", {**top, "env": GuestNamespace("env", top)})


def _project(
    request: SandboxRequest, tree: NamespaceTree, prefix: tuple[str, ...]
) -> dict[str, GuestNamespace | GuestOperation]:
    projected: dict[str, GuestNamespace | GuestOperation] = {}
    for segment, node in tree.items():
        if isinstance(node, dict):
            path = (*prefix, segment)
            projected[segment] = GuestNamespace(".".join(path), _project(request, node, path))
        else:
            callback = request.bindings[node.transport][node.relative]
            projected[segment] = GuestOperation(node.path, callback, request.max_input_bytes)
    return projected


# Flat operation names. Within a segment an ASCII letter or digit stands for itself,
# "_" is written "_1", and any other character (or a digit that would start the
# segment) is written "_u" + 6 lowercase hex digits. Segments are joined by "__".
# Every "_" inside an encoded segment is followed by "1" or "u", so "__" only ever
# separates segments, and reading left to right is unambiguous.
_SEPARATOR = "__"
_FLAT_NAME = re.compile(r"[A-Za-z0-9_]+")
_HEX6 = re.compile(r"[0-9a-f]{6}")


def sandbox_provider_operation_name(alias: str, path: str) -> str:
    """The one flat name for operation ``path`` (relative, dotted) of transport ``alias``.

    The name holds only ASCII letters, digits and underscores, is always a Python
    identifier that is neither a keyword nor starts with ``__``, and is one-to-one:
    ``("demo", "ping")``, ``("demo_ping", "x")`` and ``("demo", "ping_x")`` all differ.
    Segments are normally identifiers (possibly non-ASCII), but any non-empty text
    without a dot is encoded. Raises ``ValueError`` for an empty or dotted alias, or a
    path with an empty segment. :func:`sandbox_operation_path` is the inverse.
    """
    if not isinstance(alias, str) or not alias or "." in alias:
        raise ValueError(f"a transport alias must be non-empty text without dots, got {_show(alias)}")
    if not isinstance(path, str) or not all(path.split(".")):
        raise ValueError(f"an operation path must be dotted non-empty segments, got {_show(path)}")
    return _SEPARATOR.join(_encode_segment(segment) for segment in (alias, *path.split(".")))


def sandbox_operation_path(name: str) -> tuple[str, str]:
    """The ``(alias, relative dotted path)`` a flat name stands for.

    Raises ``ValueError`` naming ``name`` for anything :func:`sandbox_provider_operation_name`
    does not produce, including non-canonical spellings of a valid name.
    """
    if not isinstance(name, str) or not _FLAT_NAME.fullmatch(name):
        raise ValueError(f"{_show(name)} is not a flat operation name")
    segments: list[list[str]] = [[]]
    index = 0
    while index < len(name):
        char = name[index]
        if char != "_":
            segments[-1].append(char)
            index += 1
            continue
        marker = name[index + 1 : index + 2]
        if marker == "1":
            segments[-1].append("_")
            index += 2
        elif marker == "_":
            segments.append([])
            index += 2
        elif marker == "u" and _HEX6.fullmatch(digits := name[index + 2 : index + 8]) and int(digits, 16) <= 0x10FFFF:
            segments[-1].append(chr(int(digits, 16)))
            index += 8
        else:
            raise ValueError(f"{_show(name)} is not a flat operation name: bad escape at offset {index}")
    alias, *path = ("".join(chars) for chars in segments)
    try:
        canonical = sandbox_provider_operation_name(alias, ".".join(path)) if path else None
    except ValueError:
        canonical = None
    if canonical != name:
        raise ValueError(f"{_show(name)} is not a flat operation name")
    return alias, ".".join(path)


def _encode_segment(segment: str) -> str:
    encoded: list[str] = []
    for index, char in enumerate(segment):
        if char.isascii() and char.isalnum() and not (index == 0 and char.isdigit()):
            encoded.append(char)
        elif char == "_":
            encoded.append("_1")
        else:
            encoded.append(f"_u{ord(char):06x}")
    return "".join(encoded)


def _show(value: object) -> str:
    return clip(repr(value), 120)
