"""How an upstream failure is told: a server's protocol error, and an exception's words for a failed acquisition."""

from __future__ import annotations

from ..._exceptions import MyceliumSourceError
from ..._text import clip


class UpstreamError(Exception):
    """A protocol error from an upstream server, its text redacted: a host failure (the model sees a reference)."""


def _summary(exc: BaseException) -> str:
    """What an exception says, leaf by leaf (exception groups flattened), bounded."""
    leaves: list[BaseException] = []
    pending = [exc]
    while pending and len(leaves) < 4:
        current = pending.pop(0)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        else:
            leaves.append(current)
    said = "; ".join(
        f"{type(leaf).__name__}: {clip(str(leaf), 200)}" if str(leaf) else type(leaf).__name__ for leaf in leaves
    )
    return said or type(exc).__name__


def _reason(error: MyceliumSourceError) -> str:
    return str(error).split(": ", 1)[-1]
