"""Bounded text: what Mycelium shows models and operators is cut to a limit, visibly."""

from __future__ import annotations

__all__ = ["clip"]


def clip(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its start and ``...`` (``limit`` in all)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
