"""How often the event loop let another task run while one awaited something."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")


async def turns_during(action: Callable[[], Awaitable[T]]) -> tuple[T, int]:
    """What ``action`` returned, and how many turns a task that only yields got while it ran.

    Zero means ``action`` held the loop from start to end; counting turns, not time, keeps a
    test of it deterministic on a loaded machine.
    """
    turns = 0
    done = anyio.Event()

    async def other_task() -> None:
        nonlocal turns
        while not done.is_set():
            turns += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(other_task)
        await anyio.lowlevel.checkpoint()  # the other task is running
        turns = 0
        result = await action()
        done.set()
    return result, turns
