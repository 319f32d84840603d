"""Project a request's flat bindings into the logical namespaces a guest program sees.

A request carries bindings keyed by transport alias and relative path. A guest sees
them as nested attributes: every first path segment is a top-level name, and the same
tree also hangs under ``env`` (``demo.ping`` and ``env.apps.bazaar.windows.open``).
An operation takes one positional value (usually a mapping) or keyword arguments,
not both, and everything it receives must be JSON.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import TypeAlias

from ..bindings import BindingCallback
from ..values import JsonValue, NotJson, check_json
from . import SandboxRequest

__all__ = ["GuestNamespace", "GuestOperation", "NamespaceTree", "guest_input", "guest_root", "namespace_tree"]

NamespaceTree: TypeAlias = dict[str, "NamespaceTree | tuple[str, BindingCallback]"]
"""Segment -> subtree, or -> (complete logical path, callback) at a leaf."""


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
            node[path[-1]] = (".".join(path), operations[relative])
    return root


def guest_input(path: str, args: tuple[object, ...], kwargs: Mapping[str, object]) -> JsonValue:
    """The one input value for a guest call of ``path``; ``TypeError`` for a wrong call shape."""
    if args and kwargs:
        raise TypeError(f"{path}() takes one mapping or keyword arguments, not both")
    if len(args) > 1:
        raise TypeError(f"{path}() takes one mapping or keyword arguments, got {len(args)} positional arguments")
    value = args[0] if args else dict(kwargs)
    try:
        check_json(value)
    except NotJson as exc:
        raise TypeError(f"{path}() arguments must be JSON values: {exc}") from None
    return value  # type: ignore[return-value]  # check_json proved it is JSON


class GuestOperation:
    """A callable operation in a guest namespace; calling it starts the call and returns an awaitable."""

    __slots__ = ("_callback", "_path")

    def __init__(self, path: str, callback: BindingCallback) -> None:
        self._path = path
        self._callback = callback

    def __call__(self, *args: object, **kwargs: object) -> Awaitable[JsonValue]:
        return self._callback(guest_input(self._path, args, kwargs))

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
            raise AttributeError(f"{where} has no {name!r}") from None

    def __dir__(self) -> list[str]:
        return sorted(self._children)

    def __repr__(self) -> str:
        return f"<namespace {self._path or '(root)'}: {', '.join(sorted(self._children))}>"


def guest_root(request: SandboxRequest) -> GuestNamespace:
    """Every top-level name of the request's bindings, plus ``env`` holding the same tree."""
    top = _project(namespace_tree(request), ())
    return GuestNamespace("", {**top, "env": GuestNamespace("env", top)})


def _project(tree: NamespaceTree, prefix: tuple[str, ...]) -> dict[str, GuestNamespace | GuestOperation]:
    projected: dict[str, GuestNamespace | GuestOperation] = {}
    for segment, node in tree.items():
        if isinstance(node, dict):
            path = (*prefix, segment)
            projected[segment] = GuestNamespace(".".join(path), _project(node, path))
        else:
            projected[segment] = GuestOperation(*node)
    return projected
