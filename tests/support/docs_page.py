"""Run one page of the guide as its reader would, and say whether it shows the truth.

``python docs_page.py PAGE`` runs the page's Python blocks in order, in one namespace (as
if pasted into one script), in the current directory. A block whose first line names a file
(``# todo.py``) is one the page tells its reader to write: it is saved under that name and
run as ``python todo.py`` in a process of its own, as the reader would run it. A ``console``
block's ``$ mycelium ...`` lines run as commands in the same folder, each followed by what
it prints. A block fenced as ``output`` right after a Python block must be exactly what that
block printed. It exits 0 when every block ran and printed what the page shows; otherwise it
prints what differed (or the traceback) and exits 1. Each page runs in a process of its own,
so a page may configure process-wide things (a tracer provider, logging) as a reader's
program would.
"""

from __future__ import annotations

import difflib
import io
import re
import shlex
import subprocess
import sys
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^```\s*([\w-]*)")
_FILE = re.compile(r"# ([\w-]+\.py)\n")
# The reader's `mycelium` is the one installed beside this interpreter.
_MYCELIUM = str(Path(sys.executable).with_name("mycelium"))


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
        if block.lang == "console":
            problems.extend(_console(page, block))
            continue
        if block.lang != "python":
            continue
        printed = _as_file(block) if _FILE.match(block.text) else _in_namespace(page, block, namespace)
        following = found[index + 1] if index + 1 < len(found) else None
        if following is not None and following.lang == "output" and printed != following.text:
            problems.append(_differs(page, following.line, following.text, printed))
    return problems


def _in_namespace(page: Path, block: Block, namespace: dict[str, object]) -> str:
    # The line offset makes a traceback point at the page's own line; dont_inherit keeps
    # this file's `from __future__ import annotations` out of the reader's code.
    code = compile("\n" * (block.line - 1) + block.text, str(page), "exec", dont_inherit=True)
    printed = io.StringIO()
    with redirect_stdout(printed):
        exec(code, namespace)
    return printed.getvalue()


def _as_file(block: Block) -> str:
    match = _FILE.match(block.text)
    assert match is not None
    Path(match.group(1)).write_text(block.text)
    done = subprocess.run([sys.executable, match.group(1)], capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"python {match.group(1)} exited {done.returncode}:\n{done.stderr}")
    return done.stdout


def _console(page: Path, block: Block) -> list[str]:
    """Run each ``$ mycelium ...`` line of a console block; what follows it is what it must print."""
    problems: list[str] = []
    commands: list[tuple[int, str, list[str]]] = []
    for number, line in enumerate(block.text.splitlines(), start=block.line):
        if line.startswith("$ "):
            commands.append((number, line[2:], []))
        elif commands:
            commands[-1][2].append(line)
    for number, command, expected in commands:
        words = shlex.split(command)
        if words[0] != "mycelium":
            raise ValueError(f"{page.name}:{number}: a console block runs mycelium only, not {words[0]!r}")
        done = subprocess.run(
            [_MYCELIUM, *words[1:]], capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL
        )
        shown = "".join(f"{line}\n" for line in expected)
        if done.stdout + done.stderr != shown:
            problems.append(_differs(page, number, shown, done.stdout + done.stderr))
    return problems


def _differs(page: Path, line: int, shown: str, printed: str) -> str:
    diff = difflib.unified_diff(shown.splitlines(), printed.splitlines(), "the page", "printed", lineterm="")
    return f"{page.name}:{line}: the output differs\n" + "\n".join(diff)


if __name__ == "__main__":
    problems = differences(Path(sys.argv[1]))
    print("\n\n".join(problems))
    sys.exit(1 if problems else 0)
