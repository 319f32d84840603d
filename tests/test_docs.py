"""The guide cannot rot: every Python block in ``docs/`` and the README runs here.

Each page runs in a process of its own, in a fresh working directory (see
``docs_page.py``): its Python blocks in order, each ``output`` block checked against what
the block before it printed. Relative links between pages must resolve, and the guide's
index must list every page.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
RUNNER = ROOT / "tests" / "support" / "docs_page.py"
_LINK = re.compile(r"\]\(([^)#\s]+\.md)(#[^)]*)?\)")


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_python_block_runs_and_prints_what_the_page_says(page: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(page)], cwd=tmp_path, capture_output=True, text=True, timeout=110, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_link_between_pages_resolves(page: Path) -> None:
    for target, _ in _LINK.findall(page.read_text()):
        if "://" not in target:
            assert (page.parent / target).is_file(), f"{_name(page)} links to {target}, which does not exist"


def test_every_page_of_the_guide_is_linked_from_its_index() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    for page in PAGES:
        if page.parent.name == "docs" and page.name != "index.md":
            assert f"({page.name})" in index, f"docs/index.md does not link {page.name}"


def test_the_deployment_guide_shows_the_nginx_configuration_the_deployment_tests_run() -> None:
    guide = (ROOT / "docs" / "deployment.md").read_text()
    tested = (ROOT / "tests" / "deployment" / "nginx.conf.template").read_text()
    [shown] = re.findall(r"```nginx\n(.*?)```", guide, flags=re.DOTALL)
    assert shown == tested


_MACHINE_PATH = re.compile(r"(/work/|/tmp/|/root/|/home/(?!me/)|/Users/|site-packages|pytest-of-)")


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_no_page_shows_a_path_of_the_machine_it_was_written_on(page: Path) -> None:
    for number, line in enumerate(page.read_text().splitlines(), start=1):
        assert not _MACHINE_PATH.search(line), f"{_name(page)}:{number} shows a machine's path: {line.strip()}"
