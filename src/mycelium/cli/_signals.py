"""Stopping a server at a signal: the first SIGINT/SIGTERM asks it to stop, the next one insists.

Both transports stop this way; each says what insisting means (over HTTP, not waiting for
the requests still running), and the catalog is closed either way.
"""

from __future__ import annotations

import signal
from typing import Any

import anyio

from ._console import logger


async def stop_on_signal(stop: anyio.Event, second: Any) -> None:
    """Set ``stop`` at the first SIGINT/SIGTERM; call ``second()`` at the next one."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if not stop.is_set():
                logger.info("%s: stopping (again to stop at once)", signal.Signals(signum).name)
                stop.set()
            else:
                second()
