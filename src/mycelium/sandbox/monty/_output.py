"""What a run printed, as the host's logs get it: bounded, terminal escapes shown escaped, and
the sandbox's own notes after it, among them the hint for a program that returned nothing."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_HINT_TAIL_CHARS = 4_096
_HINT_TRIES = 16


class _PrintBuffer:
    """Collects printed text up to a byte limit and says plainly when it dropped the rest."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[str] = []
        self._size = 0
        self._dropped = 0
        self._notes: list[str] = []

    def write(self, stream: str, text: str) -> None:
        room = self._limit - self._size
        # `room` characters encode to at least `room` bytes: only they can fit, and only they
        # are encoded, so a huge print costs no more than the limit. What is cut is counted
        # in characters, a lower bound of its bytes.
        kept = text[: max(room, 0)]
        self._dropped += len(text) - len(kept)
        data = kept.encode("utf-8", "surrogatepass")
        if len(data) > room:
            self._dropped += len(data) - room
            # Monty hands over output in batches: keep what fits, cut at a character boundary.
            data = data[:room]
        self._parts.append(data.decode("utf-8", "ignore"))
        self._size += len(data)

    def note(self, text: str) -> None:
        """Add a line from the sandbox itself (not the program's output) after the output."""
        self._notes.append(f"[{text}]")

    def hint_if_no_result(self, code: str) -> None:
        """Say why a program that ends in a statement returned nothing."""
        if _ends_without_value(code):
            self.note(
                "the program returned null: its last statement is not an expression or a return; "
                "end it with `return <value>` to send a result back"
            )

    def lines(self) -> Iterator[str]:
        """The output by lines, control characters (terminal escapes) shown escaped, then the notes."""
        for line in "".join(self._parts).splitlines():
            yield _CONTROL.sub(_escaped, line)
        if self._dropped:
            yield f"[at least {self._dropped} more bytes of output dropped: the limit is {self._limit} bytes]"
        yield from self._notes


def _escaped(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def _ends_without_value(code: str) -> bool:
    """Whether the program's last top-level statement is neither an expression nor a return.

    Only the program's tail is parsed: this runs on the event loop after every run that
    returned null, and parsing a whole program of tens of thousands of statements would
    hold the loop for a second. The tail is parsed from each line that starts at column 0,
    the latest first, until one parses; a statement longer than the tail gets no hint.
    """
    tail = code[-_HINT_TAIL_CHARS:].splitlines()
    starts = [i for i, line in enumerate(tail) if line[:1] not in ("", " ", "\t", "#", ")", "]", "}")]
    for start in reversed(starts[-_HINT_TRIES:]):
        if start == 0 and len(code) > _HINT_TAIL_CHARS:
            break  # the tail's first line may be the end of a longer one
        try:
            body = ast.parse("\n".join(tail[start:])).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        return bool(body) and not isinstance(body[-1], ast.Expr | ast.Return)
    return False
