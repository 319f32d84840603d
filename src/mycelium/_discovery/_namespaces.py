"""A catalog's namespaces: outlined for the model, and as one stub file each for sandboxes that type-check.

The outline (each namespace with its operation count, bounded) tells a model where to
look before it searches; the stubs are complete, as a type checker needs them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping

from .._graph import InstalledOperation
from ._catalog import Catalog
from ._forage import FORAGE_STUB
from ._stubs import STUB_HEADER, StubRenderer


def namespace_outline(catalog: Catalog, max_chars: int) -> str:
    """The namespaces of ``catalog`` with their operation counts, bounded."""
    counts: Counter[str] = Counter()
    for entry in catalog.entries:
        segments = entry.path.split(".")[:-1]
        for depth in range(1, min(len(segments), 3) + 1):
            counts[".".join(segments[:depth])] += 1
    lines: list[str] = []
    used = 0
    for shown, (name, count) in enumerate(sorted(counts.items())):
        line = f"{'  ' * name.count('.')}{name.rsplit('.', 1)[-1]} ({count} operation{'s' if count != 1 else ''})"
        if used + len(line) + 1 > max_chars - 80:
            lines.append(f"... and {len(counts) - shown} more namespaces: use forage.list(prefix)")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


class NamespaceStubs(Mapping[str, str]):
    """Logical namespace path -> stub source of the operations directly in it (and their types).

    For sandboxes that type-check programs. Rendered on first use, then kept: a revision's
    stubs never change.
    """

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._stubs: dict[str, str] | None = None

    def _rendered(self) -> dict[str, str]:
        if self._stubs is None:
            groups: dict[str, list[InstalledOperation]] = defaultdict(list)
            for target in self._catalog.targets:
                groups[target.path.rsplit(".", 1)[0]].append(target)
            self._stubs = {"forage": FORAGE_STUB}
            for path, members in groups.items():
                self._stubs[path] = STUB_HEADER + StubRenderer(qualified=True).render(members)
        return self._stubs

    def __getitem__(self, path: str) -> str:
        return self._rendered()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rendered())

    def __len__(self) -> int:
        return len(self._rendered())
