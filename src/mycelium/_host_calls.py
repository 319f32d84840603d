"""Calling a host function: an async one is awaited; a sync one runs in a worker thread that is waited for.

Python cannot stop a thread, so a sync call settles only when its thread has returned,
whatever cancelled it; operations stop early by polling ``ctx.signal``.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread

from ._exceptions import DefinitionError

__all__ = ["positional_arity", "runner"]


def runner(fn: Callable[..., Any]) -> Callable[..., Awaitable[object]]:
    """Adapt ``fn`` to an async callable; a sync ``fn`` runs in a worker thread."""
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__):
        return fn  # calling it already gives the coroutine: no frame of ours around every call

    async def run_sync(*args: object, **kwargs: object) -> object:
        result = await _in_thread(functools.partial(fn, *args, **kwargs))
        # A sync callable may still hand back an awaitable (a lambda wrapping a coroutine).
        if inspect.isawaitable(result):
            result = await result
        return result

    return run_sync


async def _in_thread(call: Callable[[], object]) -> object:
    """Run ``call`` in a worker thread (within anyio's thread limiter); settle only when the thread has.

    Python cannot stop a thread. A call cancelled while it waits for a thread never runs;
    once its thread has started, a cancelled call keeps waiting until the thread returns,
    and is cancelled then. So whoever waits for the call (a sandbox run, and so its slot
    and the runtime's close) waits for the real work, and the thread keeps its limiter
    token until it is done. Operations stop early by polling ``ctx.signal``.

    The token is taken here, where waiting for it is cancellable; the thread is awaited by a
    child task, which a cancellation of this task (an anyio scope, or asyncio's own
    ``task.cancel()``) reaches only through its task group, where anyio holds it until the
    thread is done.
    """
    returned: list[object] = []
    raised: list[Exception] = []

    async def run() -> None:
        try:
            # The thread runs on the token this call already holds: its own limiter never waits.
            returned.append(await anyio.to_thread.run_sync(call, limiter=anyio.CapacityLimiter(math.inf)))
        except Exception as exc:  # raised below, as the call's own, not in an exception group
            raised.append(exc)

    async with anyio.to_thread.current_default_thread_limiter(), anyio.create_task_group() as group:
        group.start_soon(run)
    if raised:
        raise raised[0]
    return returned[0]


def positional_arity(fn: Callable[..., Any]) -> int:
    """How many of ``(input, ctx)`` to pass to an explicit ``execute`` callable."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return 2
    required = [p for p in positional if p.default is p.empty]
    required_keyword_only = [p for p in parameters if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if len(required) > 2 or required_keyword_only:
        raise DefinitionError(
            f"execute must take (input) or (input, ctx); {getattr(fn, '__qualname__', fn)!r} "
            f"requires {', '.join(p.name for p in [*required, *required_keyword_only])}"
        )
    return min(len(positional), 2)
