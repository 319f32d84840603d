"""Signals: Ctrl-C noticed at once while work runs, and a server stopped in order at SIGINT/SIGTERM.

While a verb loads its app or runs its work, asyncio's own Ctrl-C handling applies (the first
cancels the work, the next raises ``KeyboardInterrupt`` wherever the code is, even in a
blocking call); :func:`waking_at_signals` makes sure the first one is noticed. Once serving,
the first SIGINT/SIGTERM asks the server to stop, the next one insists; each transport says
what insisting means (over HTTP, not waiting for the requests still running), and the catalog
is closed either way.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from ._console import logger

T = TypeVar("T")


async def waking_at_signals(work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` with any signal waking the event loop, so Ctrl-C is never missed.

    asyncio's handler for Ctrl-C is Python code, which runs only when the loop's thread runs
    Python: a signal landing just before the loop blocks waiting for events went unnoticed
    until the next event, and work waiting on nothing (an app still loading) has none. A
    wakeup file descriptor that the loop watches turns the signal itself into an event.
    """
    if threading.current_thread() is not threading.main_thread():
        return await work()  # only the main thread receives signals, and may set the wakeup fd
    loop = asyncio.get_running_loop()
    receive, send = socket.socketpair()
    with receive, send:
        receive.setblocking(False)
        send.setblocking(False)
        loop.add_reader(receive, _drain, receive)
        previous = signal.set_wakeup_fd(send.fileno(), warn_on_full_buffer=False)
        try:
            return await work()
        finally:
            signal.set_wakeup_fd(previous)
            loop.remove_reader(receive)


def _drain(receive: socket.socket) -> None:
    try:
        while receive.recv(512):
            pass
    except BlockingIOError:
        pass


async def stop_on_signal(stop: anyio.Event, second: Any) -> None:
    """Set ``stop`` at the first SIGINT/SIGTERM; call ``second()`` at the next one."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if not stop.is_set():
                logger.info("%s: stopping (again to stop at once)", signal.Signals(signum).name)
                stop.set()
            else:
                second()
