"""Bounded text: what Mycelium shows models and operators is cut to a limit, visibly, and the
references that tie a model's message to the operator's evidence."""

from __future__ import annotations

import secrets
from collections.abc import Sequence

__all__ = ["MAX_PRINTED_CHARS", "clip", "new_reference", "printed"]

MAX_PRINTED_CHARS = 16_384
"""The most of a run's print output a model is shown; the rest is cut, and the cut is said."""


def clip(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its start and ``...`` (``limit`` in all)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def printed(lines: Sequence[str], limit: int = MAX_PRINTED_CHARS) -> str:
    """What a program printed, a line each, cut after ``limit`` characters with a line saying how much was cut.

    A paused run's parts each print up to the sandbox's own bound; this keeps what the model
    reads of all of them bounded too.
    """
    text = "\n".join(lines)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters cut)"


def new_reference() -> str:
    """A short random reference that ties a safe message to the operator's evidence."""
    return f"ref-{secrets.token_hex(6)}"
