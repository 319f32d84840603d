"""Data flows one way: no module imports from a layer above its own, as ``docs/design.md`` lists them.

The layer table of the design page is the source: a new module must be placed in it, and an
import that goes up fails here naming both modules. Imports under ``TYPE_CHECKING`` count too:
a reader follows them just the same.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support.paths import ROOT

PACKAGE = ROOT / "src" / "mycelium"
_ROW = re.compile(r"^\| (\d+) \| [^|]+ \| (.+) \|$")


def layers() -> dict[str, int]:
    """Module path under ``mycelium`` -> its layer number, from the design page's table."""
    found: dict[str, int] = {}
    for line in (ROOT / "docs" / "design.md").read_text().splitlines():
        row = _ROW.match(line)
        if row:
            for name in re.findall(r"`([\w.]+)`", row.group(2)):
                found[name] = int(row.group(1))
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """The modules of this package that ``path`` imports, as paths under ``mycelium`` ("" is the root).

    ``from .x import y`` counts ``x`` and ``x.y`` (``y`` may be a module); ``x.y`` when it is a
    name, not a module, is passed over by the caller (it has no layer of its own).
    """
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets.update(_under_package(alias.name) for alias in node.names if _ours(alias.name))
        elif isinstance(node, ast.ImportFrom) and (node.level or _ours(node.module or "")):
            if node.level:
                start = ".".join([*package[: len(package) - node.level + 1], *filter(None, [node.module])])
            else:
                start = _under_package(node.module or "")
            if node.module:  # ``from . import _tracing`` imports a module, not its package's names
                targets.add(start)
            targets.update(f"{start}.{alias.name}".lstrip(".") for alias in node.names)
    return targets


def _ours(module: str) -> bool:
    return module.split(".")[0] == "mycelium"


def _under_package(module: str) -> str:
    return module.removeprefix("mycelium").lstrip(".")


def layer_of(module: str, table: dict[str, int]) -> int | None:
    """The layer of the longest listed path that ``module`` is or is inside."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        layer = table.get(".".join(parts[:end]))
        if layer is not None:
            return layer
    return None


SOURCES = [path for path in sorted(PACKAGE.rglob("*.py")) if path.parent != PACKAGE or path.name != "__init__.py"]


def test_the_design_page_lists_layers_in_order_with_no_module_twice() -> None:
    table = layers()
    assert sorted(set(table.values())) == list(range(1, max(table.values()) + 1))
    rows = sum(1 for line in (ROOT / "docs" / "design.md").read_text().splitlines() if _ROW.match(line))
    assert rows == max(table.values())


@pytest.mark.parametrize("path", SOURCES, ids=module_name)
def test_every_module_is_in_a_layer_and_imports_only_its_own_or_lower_ones(path: Path) -> None:
    table = layers()
    name = module_name(path)
    own = layer_of(name, table)
    assert own is not None, f"mycelium.{name} is in no layer of docs/design.md: add it to the table"
    for target in imported(path) - {name}:
        assert target != "" or name == "", f"mycelium.{name} imports the package root, which only re-exports"
        theirs = layer_of(target, table)
        if theirs is None:
            continue  # a name inside a module (``from ._values import JsonValue``), counted with its module
        assert theirs >= own, f"mycelium.{name} (layer {own}) imports mycelium.{target} (layer {theirs}, above it)"
