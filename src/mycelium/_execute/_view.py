"""What every lease of one revision shares: its catalog, its tool definition and the request tables."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from .._discovery import FORAGE_MODULE_ID, Catalog, NamespaceStubs, SemanticRanker
from .._graph import OperationGraph
from .._tool_calls import ToolDefinition
from ..sandbox import Sandbox
from ..suspensions._records import module_digests
from ._description import execute_definition

__all__ = ["RevisionView"]


@dataclass(frozen=True)
class RevisionView:
    """One revision as its leases see it. Built once per revision, off the event loop (it indexes)."""

    graph: OperationGraph
    catalog: Catalog
    definition: ToolDefinition
    namespace_paths: Mapping[str, tuple[str, ...]]
    module_ids: Mapping[str, str]
    stubs: Mapping[str, str]
    sources: Mapping[str, str] = field(default_factory=dict)
    """Source id -> version of the snapshots the graph was built from."""

    @functools.cached_property
    def has_confirm(self) -> bool:
        """Whether any operation asks a person first: only then can a run pause."""
        return any(target.operation.confirm for target in self.catalog.targets)

    @functools.cached_property
    def digests(self) -> dict[str, str]:
        """What a paused run relies on, module by module (see :func:`~mycelium.suspensions._records.module_digests`)."""
        return module_digests(self.graph)

    @classmethod
    def build(
        cls,
        graph: OperationGraph,
        sandbox: Sandbox,
        sources: Mapping[str, str] | None = None,
        semantic: SemanticRanker | None = None,
    ) -> RevisionView:
        """Build the view of ``graph`` once, as ``sandbox`` runs it; leases of the revision reuse it."""
        catalog = Catalog(graph, semantic)
        return cls(
            graph=graph,
            catalog=catalog,
            definition=execute_definition(catalog, sandbox.language, sandbox.guest_notes),
            namespace_paths={"forage": ("forage",), **{m.transport: m.path for m in graph.modules}},
            module_ids={"forage": FORAGE_MODULE_ID, **{m.transport: m.id for m in graph.modules}},
            stubs=NamespaceStubs(catalog),
            sources=dict(sources or {}),
        )
