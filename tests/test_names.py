"""Names that explain themselves: no two classes share one, and every path a docstring names exists."""

from __future__ import annotations

import ast
import importlib
import re
from collections import defaultdict

from tests.support.paths import ROOT

PACKAGE = ROOT / "src" / "mycelium"


def test_no_two_classes_in_the_package_share_a_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    shared = {name: places for name, places in where.items() if len(places) > 1}
    assert shared == {}, f"classes of one name: {shared}"


_REFERENCE = re.compile(r":(?:class|func|meth|data|mod|attr|exc):`~?(mycelium(?:\.\w+)+)`")


def _resolves(reference: str) -> bool:
    parts = reference.split(".")
    for end in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        for name in parts[end:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def test_every_mycelium_path_a_docstring_names_exists() -> None:
    unresolved = [
        f"{path.relative_to(PACKAGE)}:{number}: {reference}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for reference in _REFERENCE.findall(line)
        if not _resolves(reference)
    ]
    assert unresolved == []
