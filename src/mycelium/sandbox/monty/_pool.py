"""The pool of Monty worker processes a sandbox runs its programs in, behind an explicit start and stop."""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio
from pydantic_monty import AsyncMonty

from ._watch import _Exits

# Closing the pool and letting the loop end at once can abort the interpreter (exit code
# 134, a library thread calling into Python during shutdown); a short pause avoids it.
_CLOSE_PAUSE_SECS = 0.05


class _WorkerPool:
    """Monty's worker pool, started on first use, stopped by :meth:`aclose`, and startable again.

    ``AsyncMonty``'s ``async with`` is its only start/stop API: its stubs offer no other
    method to start or stop it. A sandbox's pool outlives any one ``async with`` of the
    caller's, though: it starts at the first run, in whichever task makes that run, and
    stops when its owner closes it, often in another task. So it is held in an exit stack
    of its own. That is sound because the native pool holds no task or cancel scope of the
    caller: entering it spawns the workers and exiting stops them, whichever task does
    each. The lock lets one start or stop happen at a time.
    """

    def __init__(self, *, max_processes: int | None, max_checkouts_per_worker: int | None) -> None:
        self._max_processes = max_processes
        self._recycle = max_checkouts_per_worker
        self._pool: AsyncMonty | None = None
        self._running = AsyncExitStack()
        self._lock = anyio.Lock()
        self.exits = _Exits()
        """The pidfds of the pool's workers, kept while they live (see :class:`_Exits`)."""

    async def start(self) -> AsyncMonty:
        """The running pool: started now if it is not running."""
        if self._pool is not None:  # the common case: no lock, no trip round the event loop
            return self._pool
        async with self._lock:
            if self._pool is None:
                pool = AsyncMonty(
                    min_processes=1, max_processes=self._max_processes, max_checkouts_per_worker=self._recycle
                )
                self._pool = await self._running.enter_async_context(pool)
            return self._pool

    async def aclose(self) -> None:
        """Stop the workers. Idempotent; a later :meth:`start` starts a new pool."""
        async with self._lock:
            if self._pool is not None:
                self._pool = None
                self.exits.close()
                await self._running.aclose()
                await anyio.sleep(_CLOSE_PAUSE_SECS)
