"""The guide cannot rot: every Python block in ``docs/`` and the README runs here.

A page's Python blocks run in order, in one namespace of their own (as if pasted into one
script), in a fresh working directory. A block fenced as ``output`` right after a Python
block is what that block prints, exactly. Relative links between pages must resolve.
"""

from __future__ import annotations

import io
import re
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
_FENCE = re.compile(r"^```\s*([\w-]*)")
_LINK = re.compile(r"\]\(([^)#\s]+\.md)(#[^)]*)?\)")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language tag, its text and the line its text starts on."""

    lang: str
    text: str
    line: int


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, in order."""
    found: list[Block] = []
    lang: str | None = None
    start = 0
    lines: list[str] = []
    for number, line in enumerate(page.read_text().splitlines(), start=1):
        fence = _FENCE.match(line)
        if lang is None and fence:
            lang, start, lines = fence.group(1), number + 1, []
        elif lang is not None and line.strip() == "```":
            found.append(Block(lang, "\n".join(lines) + "\n", start))
            lang = None
        elif lang is not None:
            lines.append(line)
    assert lang is None, f"{page.name}: a block opened on line {start - 1} is never closed"
    return found


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_python_block_runs_and_prints_what_the_page_says(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__main__"}
    found = blocks(page)
    for index, block in enumerate(found):
        if block.lang != "python":
            continue
        printed = io.StringIO()
        # The line offset makes a traceback point at the page's own line.
        code = compile("\n" * (block.line - 1) + block.text, str(page), "exec")
        with redirect_stdout(printed):
            exec(code, namespace)
        following = found[index + 1] if index + 1 < len(found) else None
        if following is not None and following.lang == "output":
            assert printed.getvalue() == following.text, f"{_name(page)}:{following.line}: the output differs"


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
