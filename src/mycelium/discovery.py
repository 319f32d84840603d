"""The discovery catalog of one graph: what a model can find and how it is described.

A catalog is built once per graph revision and describes exactly that graph. Entries
use the complete logical path (``apps.bazaar.windows.open``) and stay short.
"""

from __future__ import annotations

from dataclasses import dataclass

from .graph import OperationGraph
from .operations import AccessLabel

__all__ = ["Catalog", "CatalogEntry"]

_MAX_LINE_CHARS = 160


@dataclass(frozen=True)
class CatalogEntry:
    """One operation as discovery shows it."""

    path: str
    description: str
    """The first line of the operation's description, clipped; empty when it has none."""
    access: AccessLabel
    confirm: bool

    def to_json(self) -> dict[str, object]:
        """The entry as a JSON object."""
        return {"path": self.path, "description": self.description, "access": self.access, "confirm": self.confirm}


class Catalog:
    """The operations of one graph revision, ordered by logical path."""

    def __init__(self, graph: OperationGraph) -> None:
        self.revision = graph.revision
        self.entries: tuple[CatalogEntry, ...] = tuple(
            CatalogEntry(
                path=target.path,
                description=_one_line(target.operation.description),
                access=target.operation.access,
                confirm=target.operation.confirm,
            )
            for target in graph.operations()
        )

    def list(self, prefix: str = "") -> list[CatalogEntry]:
        """Entries at ``prefix`` or below it, by whole path segments (``apps`` matches ``apps.x``, not ``appsx``)."""
        if not prefix:
            return list(self.entries)
        return [entry for entry in self.entries if entry.path == prefix or entry.path.startswith(prefix + ".")]

    def __len__(self) -> int:
        return len(self.entries)


def _one_line(description: str | None) -> str:
    if not description:
        return ""
    line = " ".join(description.split())
    return line if len(line) <= _MAX_LINE_CHARS else line[: _MAX_LINE_CHARS - 3] + "..."
