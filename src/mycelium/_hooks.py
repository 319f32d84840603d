"""Host observers: callbacks that watch what happens and can never change it."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import TypeAlias, TypeVar

__all__ = ["Observer", "notify"]

logger = logging.getLogger("mycelium")

_E = TypeVar("_E")

Observer: TypeAlias = Callable[[_E], object]
"""A sync or async callable receiving one event; its result is ignored."""


async def notify(observer: Observer[_E] | None, event: _E, *, name: str) -> None:
    """Deliver ``event`` to ``observer`` (awaiting it if async). Its exceptions are logged, never raised."""
    if observer is None:
        return
    try:
        outcome = observer(event)
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:
        logger.exception("%s raised while observing %r; the outcome is unchanged", name, event)
