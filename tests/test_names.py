"""Names that explain themselves: no two classes in the package share a name."""

from __future__ import annotations

import ast
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
