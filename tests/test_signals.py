"""Abort signals: aborted once with the first reason, listeners told once, waiters woken."""

from __future__ import annotations

import anyio
import pytest

from mycelium import AbortController, AbortError


def test_a_signal_is_aborted_once_and_keeps_the_first_reason() -> None:
    controller = AbortController()
    assert controller.abort("first") is True
    assert controller.abort("second") is False
    assert controller.signal.aborted
    assert controller.signal.reason == "first"


def test_aborting_without_a_reason_still_gives_one() -> None:
    controller = AbortController()
    controller.abort()
    assert controller.signal.reason == "aborted"


def test_a_listener_is_told_once_and_a_removed_one_never() -> None:
    controller = AbortController()
    told: list[object] = []
    controller.signal.add_listener(told.append)
    remove = controller.signal.add_listener(lambda reason: told.append(("removed", reason)))
    remove()
    remove()  # removing twice is harmless
    controller.abort("stop")
    controller.abort("again")
    assert told == ["stop"]


def test_a_listener_added_after_the_abort_is_told_at_once() -> None:
    controller = AbortController()
    controller.abort("late")
    told: list[object] = []
    controller.signal.add_listener(told.append)()
    assert told == ["late"]


def test_throw_if_aborted_raises_with_the_reason_only_once_aborted() -> None:
    controller = AbortController()
    controller.signal.throw_if_aborted()
    controller.abort("gone")
    with pytest.raises(AbortError) as raised:
        controller.signal.throw_if_aborted()
    assert raised.value.reason == "gone"


async def test_a_waiter_is_woken_by_the_abort_and_an_aborted_signal_does_not_wait() -> None:
    controller = AbortController()
    woken = anyio.Event()

    async def waiter() -> None:
        await controller.signal.wait()
        woken.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert not woken.is_set()
        controller.abort()
    assert woken.is_set()
    with anyio.fail_after(1):
        await controller.signal.wait()
