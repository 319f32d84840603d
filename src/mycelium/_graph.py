"""The operation graph of one revision: installed modules, their aliases and paths.

Installing turns modules into an immutable graph. It is deterministic: the same set of
modules gives the same aliases and paths whatever order they were registered in.
Aliases are allocated within each logical namespace (so ``apps.bazaar`` and a top-level
``bazaar`` both keep their names); in a namespace, module ids decide who keeps a
contested name (the first id keeps it, the next gets ``name_2``, ...). A namespace segment
that leads deeper (``apps`` for ``apps.bazaar``) is taken in its level, so a module that
asks for it gets a suffix rather than a half-merged namespace.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from ._exceptions import DefinitionError
from ._language import LanguageFacts
from ._modules import Module, check_guest_names, flatten_operations
from ._operations import Operation
from ._values import first_repeated

__all__ = ["MAX_MODULES", "InstalledModule", "InstalledOperation", "OperationGraph", "build_graph", "install_alone"]

MAX_MODULES = 1_000
_ANY_LANGUAGE = LanguageFacts()


@dataclass(frozen=True, eq=False)
class InstalledModule:
    """A module as installed in one graph."""

    id: str
    """The stable authority id."""
    alias: str
    """The allocated model-facing name (the requested name unless contested)."""
    path: tuple[str, ...]
    """The logical path in the guest's ``env``: namespace segments, then the alias."""
    transport: str
    """A flat, graph-unique key for sandbox transports; host-only, never shown to a model."""
    description: str | None
    grant_key: str
    """The key the access gate looks the grant up under: the id, unless ``grant_as`` widened it."""
    operations: Mapping[str, InstalledOperation] = field(repr=False)
    """Operations by relative dotted path, sorted."""


@dataclass(frozen=True, eq=False)
class InstalledOperation:
    """One operation at its place in the graph."""

    module: InstalledModule
    relative: str
    """The dotted path inside its module (``windows.open``): what a gate on the module sees."""
    operation: Operation

    @property
    def path(self) -> str:
        """The complete logical path a guest calls (``apps.bazaar.windows.open``)."""
        return ".".join((*self.module.path, self.relative))


class OperationGraph:
    """An immutable, coherent set of installed modules: everything one lease sees."""

    def __init__(self, revision: int, modules: Sequence[InstalledModule]) -> None:
        self.revision = revision
        self.modules: tuple[InstalledModule, ...] = tuple(sorted(modules, key=lambda m: m.path))
        self._by_id = {module.id: module for module in self.modules}
        self._by_transport = {module.transport: module for module in self.modules}

    def module(self, module_id: str) -> InstalledModule | None:
        """The installed module with this authority id, if any."""
        return self._by_id.get(module_id)

    def by_transport(self, transport: str) -> InstalledModule | None:
        """The installed module with this transport alias, if any."""
        return self._by_transport.get(transport)

    def operations(self) -> Iterator[InstalledOperation]:
        """Every operation, ordered by logical path."""
        for module in self.modules:
            yield from module.operations.values()

    def __len__(self) -> int:
        return len(self.modules)

    def __repr__(self) -> str:
        return f"<OperationGraph revision={self.revision} modules={len(self.modules)}>"


def build_graph(modules: Sequence[Module], *, revision: int, language: LanguageFacts = _ANY_LANGUAGE) -> OperationGraph:
    """Install ``modules`` as one graph, or raise :class:`DefinitionError` naming the culprit.

    Refuses duplicate module ids, more than :data:`MAX_MODULES` modules, any key or path
    conflict inside a module (see :func:`mycelium._modules.flatten_operations`), and names a
    program in ``language`` already has (see :func:`mycelium._modules.check_guest_names`);
    by default no name is reserved.
    """
    if len(modules) > MAX_MODULES:
        raise DefinitionError(f"{len(modules)} modules is more than the limit of {MAX_MODULES}")
    for module in modules:
        if not isinstance(module, Module):
            raise DefinitionError(f"expected a Module, got {type(module).__name__}")
    twice = first_repeated(module.id for module in modules)
    if twice is not None:
        raise DefinitionError(f"module id {twice!r} is registered twice", module_id=twice)
    # Flatten before allocating so a broken module is reported before anything else.
    leaves = {module.id: flatten_operations(module) for module in modules}
    for module in modules:
        check_guest_names(module, leaves[module.id], language)
    aliases = _allocate_aliases(modules)
    transports = _allocate_transports({module.id: (*module.namespace, aliases[module.id]) for module in modules})
    installed: list[InstalledModule] = []
    for module in modules:
        path = (*module.namespace, aliases[module.id])
        table: dict[str, InstalledOperation] = {}
        entry = InstalledModule(
            id=module.id,
            alias=aliases[module.id],
            path=path,
            transport=transports[module.id],
            description=module.description,
            grant_key=module.grant_key or module.id,
            operations=MappingProxyType(table),
        )
        for relative in sorted(leaves[module.id]):
            dotted = ".".join(relative)
            table[dotted] = InstalledOperation(entry, dotted, leaves[module.id][relative])
        installed.append(entry)
    return OperationGraph(revision, installed)


def install_alone(name: str, authority: str, operation: Operation) -> InstalledOperation:
    """Install one operation outside any module graph (a direct tool): its path is ``name``.

    ``authority`` stands in for the module id: the key its grant and evidence use.
    """
    table: dict[str, InstalledOperation] = {}
    module = InstalledModule(
        id=authority,
        alias=name,
        path=(),
        transport=name,
        description=None,
        grant_key=authority,
        operations=MappingProxyType(table),
    )
    table[name] = InstalledOperation(module, name, operation)
    return table[name]


def _allocate_aliases(modules: Sequence[Module]) -> dict[str, str]:
    groups: dict[tuple[str, ...], list[Module]] = defaultdict(list)
    taken: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for module in modules:
        groups[module.namespace].append(module)
        for depth in range(len(module.namespace)):
            taken[module.namespace[:depth]].add(module.namespace[depth])
    aliases: dict[str, str] = {}
    for namespace, members in groups.items():
        claimed = taken[namespace]
        waiting: list[Module] = []
        for module in sorted(members, key=lambda m: m.id):
            if module.name in claimed:
                waiting.append(module)
            else:
                claimed.add(module.name)
                aliases[module.id] = module.name
        for module in waiting:
            suffix = 2
            while f"{module.name}_{suffix}" in claimed:
                suffix += 1
            aliases[module.id] = f"{module.name}_{suffix}"
            claimed.add(aliases[module.id])
    return aliases


def _allocate_transports(paths: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    transports: dict[str, str] = {}
    used: set[str] = set()
    for module_id, path in sorted(paths.items(), key=lambda item: item[1]):
        candidate = base = "_".join(path)
        suffix = 2
        while candidate in used:
            candidate = f"{base}_{suffix}"
            suffix += 1
        used.add(candidate)
        transports[module_id] = candidate
    return transports
