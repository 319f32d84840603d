"""An exception the app's own code raised while it loaded, told as the place in the app to fix.

Loading ``APP`` runs its code: importing it, then calling its factory. Whatever that raises
(a SyntaxError, a module that is not installed, a NameError at module level, an exception in
the factory) is told as its type and message, then the app's line, Python-style: the file,
the line number, the line's text and a caret under the part at fault. The import machinery
and this library are never shown: the line is the innermost one in the app's own files, which
are the files under its folder (the file's folder, or its top-level package's) other than the
standard library, installed packages and Mycelium, all of which a virtual environment kept in
that folder would otherwise bring in. A SyntaxError is shown where the parser stopped, which
may be a module the app imports.
"""

from __future__ import annotations

import linecache
import sys
import sysconfig
import traceback
from dataclasses import dataclass
from pathlib import Path

__all__ = ["describe_raised"]

MAX_MESSAGE_CHARS = 1_000
"""An exception's message is cut here: it is one reason, not a dump of data."""
MAX_LINE_CHARS = 240
"""A source line longer than this (minified or generated code) is cut, and the caret with it."""

_MYCELIUM = Path(__file__).resolve().parents[1]
_INSTALLED = tuple(
    {Path(sysconfig.get_paths()[key]).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib")}
)


@dataclass(frozen=True)
class _Place:
    """A line of a file, and the columns (0-based characters, end exclusive) of the part at fault."""

    path: str
    lineno: int
    text: str
    start: int | None = None
    end: int | None = None
    function: str | None = None

    def render(self) -> list[str]:
        where = f'  File "{_shown(self.path)}", line {self.lineno}'
        lines = [where if self.function is None else f"{where}, in {self.function}"]
        full = self.text.rstrip("\r\n")
        code = full.lstrip(" \t\f")
        if not code.strip():
            return lines
        indent = len(full) - len(code)
        shown = _cut(code.rstrip(), MAX_LINE_CHARS)
        lines.append("    " + shown)
        if self.start is not None:
            first = max(self.start - indent, 0)
            last = (self.end if self.end is not None and self.end > self.start else self.start + 1) - indent
            width = max(1, min(last, len(shown)) - first)
            # A caret under the whole line says nothing; one past its end is where the parser ran out of line.
            if first <= len(shown) and (first, width) != (0, len(shown)):
                lines.append("    " + " " * first + "^" * width)
        return lines


def describe_raised(exc: BaseException, home: Path | None) -> str:
    """``Type: message``, then where in the app's files under ``home`` it was raised (when it can be told).

    A group of one exception (a task group in an async factory, say) is told as that one.
    """
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    try:
        message = exc.msg if isinstance(exc, SyntaxError) and exc.msg else str(exc)
    except Exception:  # an exception class of the app's whose __str__ fails in turn
        message = "(its message could not be read)"
    lines = [f"{type(exc).__name__}: {_cut(message, MAX_MESSAGE_CHARS)}"]
    place = _where_parsed(exc) or _where_raised(exc, home)
    if place is not None:
        lines.extend(place.render())
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        # The usual cause: the app's dependencies are installed for another Python than mycelium's.
        lines.append(
            f"  If {exc.name!r} is a package you installed, install it for the Python mycelium runs on: "
            f"{sys.executable} -m pip install <the package that provides it>"
        )
    return "\n".join(lines)


def _where_parsed(exc: BaseException) -> _Place | None:
    """Where the parser stopped, for a SyntaxError in a real file (not one the app compiled from a string)."""
    if not isinstance(exc, SyntaxError) or not exc.filename or exc.filename.startswith("<") or not exc.lineno:
        return None
    text = exc.text if exc.text is not None else linecache.getline(exc.filename, exc.lineno)
    # SyntaxError's offsets are 1-based; a caret beyond the line (end of file) marks its end.
    start = exc.offset - 1 if exc.offset else None
    end = exc.end_offset - 1 if exc.end_offset and exc.end_lineno in (None, exc.lineno) else None
    return _Place(exc.filename, exc.lineno, text, start, end)


def _where_raised(exc: BaseException, home: Path | None) -> _Place | None:
    """The innermost frame in the app's files; failing that, the innermost outside Mycelium and importlib."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if frame.lineno is not None]
    chosen = next((frame for frame in reversed(frames) if home is not None and _owned(frame.filename, home)), None)
    if chosen is None:
        chosen = next((frame for frame in reversed(frames) if _outside_the_machinery(frame.filename)), None)
    if chosen is None or chosen.lineno is None:
        return None
    # The frame's own copy of the line is stripped of its indentation, which its columns count.
    text = linecache.getline(chosen.filename, chosen.lineno)
    start = end = None
    # A statement over several lines (an `async with` block) has no one part to point at.
    if chosen.colno is not None and chosen.end_lineno == chosen.lineno:
        # A frame's columns count UTF-8 bytes of the line; the caret counts characters.
        start = _characters(text, chosen.colno)
        if chosen.end_colno is not None:
            end = _characters(text, chosen.end_colno)
    return _Place(chosen.filename, chosen.lineno, text, start, end, chosen.name)


def _owned(filename: str, home: Path) -> bool:
    if not _outside_the_machinery(filename):
        return False
    path = Path(filename).resolve()
    if not path.is_relative_to(home):
        return False
    # Installed code is not the app's, unless the app is itself installed there.
    return not any(path.is_relative_to(folder) and not home.is_relative_to(folder) for folder in _INSTALLED)


def _outside_the_machinery(filename: str) -> bool:
    """A real file (not ``<frozen importlib._bootstrap>``) that is not part of Mycelium."""
    return not filename.startswith("<") and not Path(filename).resolve().is_relative_to(_MYCELIUM)


def _characters(line: str, byte_offset: int) -> int:
    return len(line.encode()[:byte_offset].decode(errors="replace"))


def _shown(path: str) -> str:
    """The path relative to the current folder when it lies under it (as a person typed it), else as it is."""
    try:
        relative = Path(path).resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path
    return str(relative)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
