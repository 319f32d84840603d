"""Modules: operations grouped under one stable authority id and a model-facing name.

A module's ``id`` is its authority: grants and evidence use it, and it never depends
on registration order. Its ``name`` is only the alias a model types. Operations may
sit at dotted relative paths, and child modules add namespace depth; the enclosing
module stays the authority for everything beneath it.
"""

from __future__ import annotations

import keyword
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from ._exceptions import DefinitionError
from ._language import LanguageFacts
from ._operations import AccessLabel, Operation, operation_from_function

__all__ = [
    "MAX_ID_LENGTH",
    "RESERVED_NAMES",
    "Module",
    "check_guest_names",
    "flatten_operations",
    "is_identifier",
]

MAX_ID_LENGTH = 160
RESERVED_NAMES = frozenset({"env", "forage"})
"""Top-level guest names Mycelium itself owns."""


_F = TypeVar("_F", bound=Callable[..., Any])


def is_identifier(segment: object) -> bool:
    """Whether ``segment`` can be an attribute a guest types: an identifier that is not a keyword.

    It must also be in NFKC form: Python normalises identifiers in source, so ``ﬁle``
    typed by a guest would look up ``file``.
    """
    return (
        isinstance(segment, str)
        and segment.isidentifier()
        and not keyword.iskeyword(segment)
        and unicodedata.normalize("NFKC", segment) == segment
    )


def check_id(kind: str, value: object) -> str:
    """Validate a stable id: a non-empty string of at most ``MAX_ID_LENGTH`` characters."""
    if not isinstance(value, str) or not value:
        raise DefinitionError(f"{kind} id must be a non-empty string, got {value!r}")
    if len(value) > MAX_ID_LENGTH:
        raise DefinitionError(f"{kind} id {value[:40]!r}... is {len(value)} characters; the limit is {MAX_ID_LENGTH}")
    return value


class Module:
    """A group of operations (and child modules) under one authority id.

    ``operations`` maps keys to an :class:`Operation` or a child :class:`Module`. A key may
    be a dotted relative path (``"repos.list"``), which is called exactly like a child
    module ``repos`` holding ``list``. ``namespace`` places the module deeper in the
    guest's ``env``: ``Module(name="bazaar", namespace=["apps"])`` is ``env.apps.bazaar``.
    Keys are checked when the module is installed into a runtime.
    """

    def __init__(
        self,
        *,
        id: str,
        name: str,
        operations: Mapping[str, Operation | Module] | None = None,
        namespace: Sequence[str] = (),
        description: str | None = None,
    ) -> None:
        self.id = check_id("module", id)
        if not is_identifier(name) or name in RESERVED_NAMES:
            raise DefinitionError(
                f"module {id!r}: name must be a Python identifier, not a keyword, "
                f"nor one of {sorted(RESERVED_NAMES)}; got {name!r}"
            )
        self.name = name
        if isinstance(namespace, str):
            raise DefinitionError(f"module {id!r}: namespace must be a sequence of identifiers, not a string")
        namespace = tuple(namespace)
        for segment in namespace:
            if not is_identifier(segment):
                raise DefinitionError(f"module {id!r}: namespace segment {segment!r} is not an identifier")
        if namespace and namespace[0] in RESERVED_NAMES:
            raise DefinitionError(f"module {id!r}: namespace may not start with reserved {namespace[0]!r}")
        self.namespace: tuple[str, ...] = namespace
        if description is not None and not isinstance(description, str):
            raise DefinitionError(f"module {id!r}: description must be a string, got {description!r}")
        self.description = description
        self.grant_key: str | None = None
        """Look this module's grant up under another key (see ``mycelium.grant_as``); ``None``: its id."""
        self._operations: dict[str, Operation | Module] = {}
        for key, value in (operations or {}).items():
            self.add(key, value)

    @property
    def operations(self) -> Mapping[str, Operation | Module]:
        """The registered keys, in registration order (a read-only view)."""
        return dict(self._operations)

    def add(self, key: str, value: Operation | Module) -> None:
        """Register an operation or child module under ``key`` (a name or dotted path)."""
        if not isinstance(value, Operation | Module):
            raise DefinitionError(
                f"module {self.id!r}: {key!r} must be an Operation or a Module, got {type(value).__name__}"
            )
        if key in self._operations:
            raise DefinitionError(f"module {self.id!r}: {key!r} is already registered")
        self._operations[key] = value

    def operation(
        self,
        name: str | None = None,
        *,
        access: AccessLabel | None = None,
        confirm: bool = False,
        description: str | None = None,
        phrasings: Sequence[str] | None = None,
    ) -> Callable[[_F], _F]:
        """Decorate a sync or async function to register it as an operation of this module.

        The function's parameters form the input object, its return annotation the output,
        and its docstring's first paragraph the description. ``phrasings`` are how a person
        might ask for it, for search. The function is returned unchanged, so it stays
        callable and testable on its own.
        """

        def register(fn: _F) -> _F:
            made = operation_from_function(
                fn, access=access, confirm=confirm, description=description, phrasings=phrasings
            )
            self.add(name if name is not None else fn.__name__, made)
            return fn

        return register

    def __repr__(self) -> str:
        return f"Module(id={self.id!r}, name={self.name!r}, namespace={list(self.namespace)!r})"


def flatten_operations(module: Module) -> dict[tuple[str, ...], Operation]:
    """Every operation under ``module`` by its relative path, checking keys and conflicts.

    Raises :class:`DefinitionError` naming the module and key for a segment that is not an
    identifier, a path registered twice, a path that is both an operation and a namespace
    prefix (``files`` and ``files.read``), or a module that contains itself.
    """
    leaves: dict[tuple[str, ...], Operation] = {}
    for path, op in _walk(module, (), (module,)):
        if path in leaves:
            raise DefinitionError(
                f"module {module.id!r}: operation {'.'.join(path)!r} is registered twice", module_id=module.id
            )
        leaves[path] = op
    prefixes = {path[:end] for path in leaves for end in range(1, len(path))}
    for path in sorted(leaves):
        if path in prefixes:
            dotted = ".".join(path)
            raise DefinitionError(
                f"module {module.id!r}: {dotted!r} is both an operation and a namespace prefix ({dotted}.*)",
                module_id=module.id,
            )
    return leaves


def check_guest_names(module: Module, paths: Iterable[tuple[str, ...]], language: LanguageFacts) -> None:
    """Refuse a module whose names would clash, in a guest program, with names it already has.

    ``paths`` are the module's operation paths (see :func:`flatten_operations`); ``language``
    is what the sandbox's programs already have. The module's top-level name (its first
    namespace segment, else its name) may be neither one of its reserved modules nor of its
    builtins, and no namespace beneath it may end in one of the reserved modules. Operation
    names are free.
    """
    reserved = language.reserved_modules
    place = (*module.namespace, module.name)
    top = place[0]
    if top in reserved or top in language.builtins:
        what = "a module the sandbox provides" if top in reserved else "a builtin every program has"
        raise DefinitionError(
            f"module {module.id!r}: its top-level name {top!r} is {what}, so a program could not use both; "
            "choose another name, or place the module under a namespace",
            module_id=module.id,
        )
    # Plain loops: this runs for every operation of every module each time a graph is built.
    for segment in place[1:]:
        if segment in reserved:
            raise _namespace_clash(module, place[: place.index(segment, 1) + 1])
    for path in paths:
        for segment in path[:-1]:
            if segment in reserved:
                raise _namespace_clash(module, (*place, *path[: path.index(segment) + 1]))


def _namespace_clash(module: Module, namespace: tuple[str, ...]) -> DefinitionError:
    return DefinitionError(
        f"module {module.id!r}: namespace {'.'.join(namespace)!r} is named like the sandbox's module "
        f"{namespace[-1]!r}, and the sandbox cannot build it; rename that segment",
        module_id=module.id,
    )


def _walk(
    module: Module, prefix: tuple[str, ...], ancestors: tuple[Module, ...]
) -> Iterator[tuple[tuple[str, ...], Operation]]:
    root = ancestors[0].id
    for key, value in module._operations.items():
        segments = tuple(key.split(".")) if isinstance(key, str) else (key,)
        for segment in segments:
            if not is_identifier(segment):
                raise DefinitionError(
                    f"module {root!r}: key {key!r} has segment {segment!r}, which is not an identifier",
                    module_id=root,
                )
        if isinstance(value, Operation):
            yield (*prefix, *segments), value
            continue
        if any(value is ancestor for ancestor in ancestors):
            raise DefinitionError(f"module {root!r}: child module {value.id!r} contains itself", module_id=root)
        yield from _walk(value, (*prefix, *segments, *value.namespace), (*ancestors, value))
