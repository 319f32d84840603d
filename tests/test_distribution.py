"""The distribution is mycelium-codemode, and importing it beside another ``mycelium`` is refused, naming the other."""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import mycelium
from mycelium._distribution import DISTRIBUTION
from tests.support.paths import ROOT


def fake_distribution(folder: Path, name: str, *, record: str | None = None, top_level: str | None = None) -> Path:
    """A dist-info as pip leaves one, for a distribution that ships the files ``record`` lists."""
    info = folder / f"{name.replace('-', '_')}-9.9.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 9.9\n")
    if record is not None:
        (info / "RECORD").write_text(record)
    if top_level is not None:
        (info / "top_level.txt").write_text(top_level)
    return folder


def import_beside(folder: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(folder)}
    return subprocess.run(
        [sys.executable, "-c", "import mycelium"], capture_output=True, text=True, env=environment, timeout=60
    )


def test_the_distribution_is_named_mycelium_codemode_in_pyproject_and_at_runtime() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "mycelium-codemode"
    assert mycelium.__version__ == project["version"]


@pytest.mark.parametrize(
    ("record", "top_level"),
    [
        ("mycelium/__init__.py,,\nmycelium/cli/__init__.py,,\n", None),
        (None, "mycelium\n"),
        ('"mycelium/__init__.py",,\n', None),
        ("mycelium/__init__.py,,\n", ""),
    ],
    ids=["by its RECORD", "by its top_level.txt", "by a quoted RECORD path", "by its RECORD beside an empty top_level"],
)
def test_another_distribution_shipping_a_mycelium_package_is_refused_at_import_naming_it(
    tmp_path: Path, record: str | None, top_level: str | None
) -> None:
    folder = fake_distribution(tmp_path, "mycelium-elsewhere", record=record, top_level=top_level)
    finished = import_beside(folder)
    assert finished.returncode == 1
    assert "ImportError: the distribution mycelium-elsewhere 9.9 is installed too" in finished.stderr
    assert "pip uninstall mycelium-elsewhere" in finished.stderr
    assert f"pip install --force-reinstall {DISTRIBUTION}" in finished.stderr


def test_a_distribution_whose_package_only_starts_with_mycelium_is_no_clash(tmp_path: Path) -> None:
    folder = fake_distribution(tmp_path, "myceliumx", record="myceliumx/__init__.py,,\nnot_mycelium/a.py,,\n")
    finished = import_beside(folder)
    assert finished.returncode == 0, finished.stderr


def test_an_egg_listing_a_mycelium_package_is_refused_too(tmp_path: Path) -> None:
    info = tmp_path / "mycelium_egg-9.9-py3.11.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: mycelium-egg\nVersion: 9.9\n")
    (info / "installed-files.txt").write_text("../mycelium/__init__.py\nPKG-INFO\n")
    finished = import_beside(tmp_path)
    assert "ImportError: the distribution mycelium-egg 9.9 is installed too" in finished.stderr


def test_a_clashing_distribution_without_a_name_is_named_by_its_folder(tmp_path: Path) -> None:
    info = tmp_path / "nameless-9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nVersion: 9.9\n")
    (info / "RECORD").write_text("mycelium/__init__.py,,\nnameless-9.9.dist-info/RECORD,,\n")
    finished = import_beside(tmp_path)
    assert "the distribution in nameless-9.9.dist-info (its metadata has no name) is installed too" in finished.stderr


@pytest.mark.parametrize("file", ["RECORD", "top_level.txt", "METADATA"])
def test_an_unrelated_distribution_whose_metadata_is_not_utf8_does_not_stop_the_import(
    tmp_path: Path, file: str
) -> None:
    folder = fake_distribution(tmp_path, "unrelated", record="unrelated/__init__.py,,\n", top_level="unrelated\n")
    info = folder / "unrelated-9.9.dist-info"
    (info / file).write_bytes((info / file).read_bytes() + b"Summary: caf\xe9\n")
    finished = import_beside(folder)
    assert finished.returncode == 0, finished.stderr


def _installed_with(distribution: str, into: set[str]) -> set[str]:
    """``distribution`` and everything its requirements (no extras) install, by normalised name."""
    name = _normalised(distribution)
    if name in into:
        return into
    into.add(name)
    for requirement in importlib.metadata.requires(distribution) or []:
        if "extra ==" in requirement:
            continue
        match = re.match(r"[A-Za-z0-9_.-]+", requirement)
        assert match is not None, requirement
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):  # a marker keeps it off this machine
            _installed_with(match.group(0), into)
    return into


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_module_level_import_of_the_core_comes_with_its_declared_dependencies() -> None:
    # `make run` installs the core alone: a module the core imports that only the dev extras bring
    # (sniffio, once anyio stopped requiring it) breaks `import mycelium` on a fresh machine.
    installed = _installed_with(DISTRIBUTION, set())
    providers = importlib.metadata.packages_distributions()
    unprovided = []
    for path in sorted((ROOT / "src" / "mycelium").rglob("*.py")):
        if "integrations" in path.parts:  # each needs its own extra, and says so when it is missing
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # lazy and guarded imports are not here
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "mycelium":
                    continue
                if not {_normalised(dist) for dist in providers.get(top, [])} & installed:
                    unprovided.append(f"{path.relative_to(ROOT)}: {top}")
    assert unprovided == []
