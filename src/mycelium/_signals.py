"""Abort signals: the one authoritative way to ask running work to stop.

An :class:`AbortController` owns a signal; whoever holds the signal observes it
(``aborted``, ``await wait()``, ``throw_if_aborted()``) but cannot abort it. A signal
aborts at most once; the first reason wins.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

__all__ = ["AbortController", "AbortError", "AbortSignal"]


class AbortError(Exception):
    """Raised by :meth:`AbortSignal.throw_if_aborted` once the signal is aborted."""

    def __init__(self, reason: object) -> None:
        self.reason = reason
        super().__init__(f"aborted: {reason!r}")


class AbortSignal:
    """A read-only view of an abort request. Create one with :class:`AbortController`."""

    __slots__ = ("_aborted", "_event", "_listeners", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._event: anyio.Event | None = None  # made only when somebody waits
        self._listeners: list[Callable[[object], object]] = []

    @property
    def aborted(self) -> bool:
        """Whether the signal has been aborted."""
        return self._aborted

    @property
    def reason(self) -> object:
        """Why it was aborted (``None`` until then)."""
        return self._reason

    async def wait(self) -> None:
        """Return once the signal is aborted (at once if it already is)."""
        if self._aborted:
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()

    def throw_if_aborted(self) -> None:
        """Raise :class:`AbortError` if the signal is aborted."""
        if self._aborted:
            raise AbortError(self._reason)

    def add_listener(self, listener: Callable[[object], object]) -> Callable[[], None]:
        """Call ``listener(reason)`` when the signal aborts (at once if it already has).

        Returns a function that removes the listener. Listeners run synchronously inside
        ``abort()``; an exception from one propagates to the caller of ``abort()``.
        """
        if self._aborted:
            listener(self._reason)
            return _nothing
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def _abort(self, reason: object) -> bool:
        if self._aborted:
            return False
        self._aborted = True
        self._reason = reason
        if self._event is not None:
            self._event.set()
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener(reason)
        return True

    def __repr__(self) -> str:
        state = f"aborted reason={self._reason!r}" if self._aborted else "active"
        return f"<AbortSignal {state}>"


def _nothing() -> None:
    return None


class AbortController:
    """Owns an :class:`AbortSignal` and is the only thing that can abort it."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: object = None) -> bool:
        """Abort the signal; returns ``False`` when it was already aborted (the first reason stays)."""
        return self.signal._abort("aborted" if reason is None else reason)
