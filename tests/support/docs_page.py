"""Run one page of the guide as its reader would, and say whether it shows the truth.

``python docs_page.py PAGE`` runs the page's Python blocks in order, in one namespace (as
if pasted into one script), in the current directory. A block fenced as ``output`` right
after a Python block must be exactly what that block printed. It exits 0 when every block
ran and printed what the page shows; otherwise it prints what differed (or the traceback)
and exits 1. Each page runs in a process of its own, so a page may configure process-wide
things (a tracer provider, logging) as a reader's program would.
"""

from __future__ import annotations

import difflib
import io
import re
import sys
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^```\s*([\w-]*)")


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
    if lang is not None:
        raise ValueError(f"{page}: the block opened on line {start - 1} is never closed")
    return found


def differences(page: Path) -> list[str]:
    """Run the page's Python blocks; each output block that differs from what was printed, as a diff."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    found = blocks(page)
    problems: list[str] = []
    for index, block in enumerate(found):
        if block.lang != "python":
            continue
        # The line offset makes a traceback point at the page's own line; dont_inherit keeps
        # this file's `from __future__ import annotations` out of the reader's code.
        code = compile("\n" * (block.line - 1) + block.text, str(page), "exec", dont_inherit=True)
        printed = io.StringIO()
        with redirect_stdout(printed):
            exec(code, namespace)
        following = found[index + 1] if index + 1 < len(found) else None
        if following is not None and following.lang == "output" and printed.getvalue() != following.text:
            diff = difflib.unified_diff(
                following.text.splitlines(), printed.getvalue().splitlines(), "the page", "printed", lineterm=""
            )
            problems.append(f"{page.name}:{following.line}: the output differs\n" + "\n".join(diff))
    return problems


if __name__ == "__main__":
    problems = differences(Path(sys.argv[1]))
    print("\n\n".join(problems))
    sys.exit(1 if problems else 0)
