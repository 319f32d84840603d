"""The garbage collector of a process that serves one MCP server for its life.

CPython's full collection walks every tracked object that is not frozen while it holds the
interpreter lock, so while it runs no request moves. Left alone, it walks the SDK, pydantic
and the catalog over and over: a 150 ms stall every few seconds under load. What a serving
process holds for its life is therefore taken out of the walk (:func:`gc.freeze`) twice:

- when the server starts running: the app, the SDK and everything imported;
- once more after its first :data:`FREEZE_AFTER_REQUESTS` answered requests: what the first
  requests load lazily and then keep (the principal's runtime and discovery index with numpy,
  the SDK's handlers). On the bench's catalog that is about 9,700 objects after the first
  request and flat after it, so freezing a little later loses nothing.

Frozen objects are never collected as cyclic garbage, even once dropped. The first freeze
holds only what start-up made; the second, besides what the first requests loaded, whatever
the connections and requests open at that moment hold: at most once, and bounded by the
connection table. Everything made afterwards is collected as usual; the collector stays on.
"""

from __future__ import annotations

import gc

__all__ = ["FREEZE_AFTER_REQUESTS", "ServingCollector"]

FREEZE_AFTER_REQUESTS = 100
"""Answered requests after which what they loaded is frozen too (once)."""


class ServingCollector:
    """Freezes what start-up loaded, then once more what the first requests loaded."""

    def __init__(self, freeze_after: int = FREEZE_AFTER_REQUESTS) -> None:
        self._freeze_after = freeze_after
        self._answered = 0

    def started(self) -> None:
        """The server runs: what is loaded by now lives as long as it."""
        _freeze()

    def answered(self) -> None:
        """One more request was answered; the one that completes the first batch freezes what it loaded."""
        self._answered += 1
        if self._answered == self._freeze_after:
            _freeze()


def _freeze() -> None:
    # Collect first: garbage frozen would never be freed.
    gc.collect()
    gc.freeze()
