"""Watching the worker process that runs a program, so a worker that dies ends the run at once.

Monty notices a dead worker only when the host call it waits on returns, which may be
never; a pidfd wakes the event loop the moment the process ends instead. A worker runs
many programs, one at a time, so its pidfd is opened once and stays registered with the
loop until the process exits (see :class:`_Exits`); each run only says it is the one
watching.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable

import anyio
from pydantic_monty import AsyncMontySession

from ..._signals import AbortError, AbortSignal

_WORKER_LOOKUP_SECS = 0.005
_WORKER_EXIT_GRACE_SECS = 0.05


class _WorkerLost(Exception):
    """The worker process running the program exited."""


class _Worker:
    """The worker process of one session, watched while a feed runs so its death stops the feed."""

    def __init__(self, session: AsyncMontySession, exits: _Exits) -> None:
        self._session = session
        self._exits = exits
        # Read before the feed: once it is sent, Monty may not report the pid until the run ends.
        self._pid = session.worker_pid
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: Callable[[], object] | None = None
        self._stop_watching: Callable[[], None] | None = None
        self._grace: asyncio.TimerHandle | None = None
        self.lost = False

    def watch(self, stop: Callable[[], object]) -> None:
        """Call ``stop`` on the event loop if the worker process exits before :meth:`unwatch`."""
        self._loop = asyncio.get_running_loop()
        self._stop = stop
        self._start()

    def seen(self) -> None:
        """Called at every host call, from Monty's own thread: a pool may start the worker only
        once the feed is sent, and by the first call it surely exists."""
        if self._stop_watching is None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._start)

    def _start(self) -> None:
        if self._stop_watching is not None or self._stop is None or self._loop is None:
            return
        pid = self._pid if self._pid is not None else self._session.worker_pid
        if pid is not None:
            self._stop_watching = self._exits.watch(pid, self._exited)
        else:  # not started yet: look again shortly, also for a program that makes no call
            self._loop.call_later(_WORKER_LOOKUP_SECS, self._start)

    def _exited(self) -> None:
        # Monty ends a worker itself for some limits (memory) and then reports the run's own
        # error: give it a moment to, and stop the feed only if it does not.
        if self._loop is not None:
            self._grace = self._loop.call_later(_WORKER_EXIT_GRACE_SECS, self._lost)

    def _lost(self) -> None:
        if self._stop is not None:
            self.lost = True
            self._stop()

    def unwatch(self) -> None:
        if self._stop_watching is not None:
            self._stop_watching()
        if self._grace is not None:
            self._grace.cancel()
        self._stop_watching = None
        self._grace = None
        self._stop = None


async def _until_stopped(work: Awaitable[object], signal: AbortSignal, *, worker: _Worker | None = None) -> object:
    """Await ``work``; stop it at once when ``signal`` aborts or the ``worker`` process exits.

    Raises :class:`AbortError` for an abort and :class:`_WorkerLost` for a worker that died:
    Monty itself notices a dead worker only when the host call it waits on returns.
    Cancelling a feed kills its worker; the pool replaces it.

    A feed (an asyncio future) is cancelled directly, which costs no cancel scope on the
    common run: cancelled before it is awaited, it is stopped all the same. Other work (a
    stepped drive, calls left to finish) runs under a cancel scope, so the shields inside it
    hold. A cancellation of the task awaiting this goes on as it is.
    """
    feed = work if asyncio.isfuture(work) else None
    scope = anyio.CancelScope() if feed is None else None
    stopping = False

    def stop(_: object = None) -> None:
        nonlocal stopping
        stopping = True
        if scope is not None:
            scope.cancel()
        elif feed is not None:
            feed.cancel()

    stop_watching = signal.add_listener(stop)
    if worker is not None:
        worker.watch(stop)
    try:
        if scope is not None:
            with scope:
                return await work
        else:
            try:
                return await work
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not stopping or (task is not None and task.cancelling()):
                    raise  # not ours: the awaiting task was cancelled, or the feed cancelled itself
    finally:
        stop_watching()
        if worker is not None:
            worker.unwatch()
    if worker is not None and worker.lost:
        raise _WorkerLost
    raise AbortError(signal.reason)


class _Exits:
    """The worker processes being watched, each by a pidfd kept registered with the loop until it exits.

    Opening a pidfd and registering it with the loop for every run costs four system calls
    per run; a worker lives for many runs, so its pidfd is kept. Each worker runs one
    program at a time, so one run at a time watches it. :meth:`close` (the pool's stop)
    drops them all. Off Linux (no pidfd) nothing is watched and Monty notices a dead
    worker itself.
    """

    def __init__(self) -> None:
        self._watched: dict[int, _Watched] = {}

    def watch(self, pid: int, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` on the event loop as soon as process ``pid`` exits; returns a stop function."""
        watched = self._watched.get(pid)
        if watched is None:
            if not hasattr(os, "pidfd_open"):
                return _nothing
            try:
                watched = self._open(pid)
            except ProcessLookupError:  # already gone
                return asyncio.get_running_loop().call_soon(callback).cancel
            except OSError:  # not ours to watch: Monty notices on its own
                return _nothing
        watched.callback = callback

        def stop() -> None:
            if watched.callback is callback:
                watched.callback = None

        return stop

    def _open(self, pid: int) -> _Watched:
        fd = os.pidfd_open(pid)
        watched = self._watched[pid] = _Watched(asyncio.get_running_loop(), fd)
        watched.loop.add_reader(fd, self._exited, pid)
        return watched

    def _exited(self, pid: int) -> None:
        watched = self._watched.pop(pid)
        watched.close()
        if watched.callback is not None:
            watched.callback()

    def close(self) -> None:
        """Stop watching every worker (their pool is stopping)."""
        watched, self._watched = self._watched, {}
        for one in watched.values():
            one.close()


class _Watched:
    """One worker's pidfd and the run watching it now, if any."""

    __slots__ = ("callback", "fd", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self.loop = loop
        self.fd = fd
        self.callback: Callable[[], None] | None = None

    def close(self) -> None:
        if not self.loop.is_closed():
            self.loop.remove_reader(self.fd)
        os.close(self.fd)


def _nothing() -> None:
    return None
