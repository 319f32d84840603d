"""One operation as discovery lists it: its path, the first line of its description, its labels.

The one-line description is shared by what a guest is shown and what a semantic ranker
embeds, so both speak of an operation in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._operations import AccessLabel
from .._text import clip

_MAX_LINE_CHARS = 160


@dataclass(frozen=True)
class CatalogEntry:
    """One operation as discovery shows it."""

    path: str
    description: str
    """The first line of the operation's description, clipped; empty when it has none."""
    access: AccessLabel
    confirm: bool

    def to_json(self) -> dict[str, object]:
        """The entry as a JSON object."""
        return {"path": self.path, "description": self.description, "access": self.access, "confirm": self.confirm}


def one_line(description: str | None) -> str:
    """The first line of ``description``, its spaces collapsed and clipped; empty for none."""
    lines = (description or "").strip().splitlines()
    return clip(" ".join(lines[0].split()), _MAX_LINE_CHARS) if lines else ""
