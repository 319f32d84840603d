"""Waiting, bounded, for a person's decision: woken at once by a decision made here, and finding one
made by another process sharing the store at its next read.

Real paused runs (a Monty sandbox, a runtime that defers every confirmation) in real stores: memory,
and a SQLite file two ``Suspensions`` share as two processes would.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel

from mycelium import Access, MemorySuspensions, Module, Runtime, Session, SqliteSuspensions, Suspensions, defer
from mycelium.sandbox.monty import MontySandbox
from mycelium.suspensions import StoredSuspension
from mycelium.suspensions._waiting import CHECK_EVERY_S, DecisionWaiters

KEY = b"k" * 32


class Published(BaseModel):
    text: str


def board() -> Module:
    module = Module(id="board-v1", name="board")

    @module.operation(access="write", confirm=True)
    def publish(text: str) -> Published:
        """Put ``text`` on the board once a person approves."""
        return Published(text=text)

    return module


@asynccontextmanager
async def paused(suspensions: Suspensions) -> AsyncIterator[str]:
    """A run paused at its confirmation in ``suspensions``; the id it waits under."""
    async with Runtime(
        modules=[board()],
        sandbox=MontySandbox(),
        access=Access(grants={"board-v1": "write"}, confirm=defer),
        suspensions=suspensions,
    ) as runtime:
        async with runtime.lease(session=Session("session-1")) as lease:
            result = await lease.execute_tool.run(code="return await board.publish(text='hi')", tool_call_id="c-1")
        assert result.suspension is not None, result.text
        yield result.suspension.id


class CountedReads(MemorySuspensions):
    """The memory store, counting how often a suspension is read; a read begun while ``held`` is an
    event waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.held: anyio.Event | None = None

    async def get(self, suspension_id: str) -> StoredSuspension | None:
        self.reads += 1
        if self.held is not None:
            await self.held.wait()
        return await super().get(suspension_id)


class FailingReads(MemorySuspensions):
    """A store that keeps what it is given but cannot be read back: down, as far as a waiter can tell."""

    async def get(self, suspension_id: str) -> StoredSuspension | None:
        raise ConnectionError("the store is down")


async def test_a_decision_recorded_here_ends_the_wait_at_once() -> None:
    suspensions = Suspensions()
    async with paused(suspensions) as suspension_id:
        ended: list[bool] = []

        async def wait() -> None:
            ended.append(await suspensions.until_decided(suspension_id, within_s=60))

        # Far sooner than the next read of the store: the decision itself wakes the waiter.
        with anyio.fail_after(CHECK_EVERY_S / 2):
            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                await anyio.wait_all_tasks_blocked()
                assert await suspensions.decide_as_approver(suspension_id, True)
    assert ended == [True]


async def test_a_decision_another_process_records_in_the_shared_store_is_found_at_the_next_read(
    tmp_path: Path,
) -> None:
    here = Suspensions(store=SqliteSuspensions(tmp_path / "s.sqlite"), key=KEY)
    elsewhere = Suspensions(store=SqliteSuspensions(tmp_path / "s.sqlite"), key=KEY)
    async with paused(here) as suspension_id:
        ended: list[bool] = []

        async def wait() -> None:
            ended.append(await here.until_decided(suspension_id, within_s=60))

        with anyio.fail_after(CHECK_EVERY_S * 5):
            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                await anyio.wait_all_tasks_blocked()
                assert await elsewhere.decide_as_approver(suspension_id, False)
    await here.store.aclose()
    await elsewhere.store.aclose()
    assert ended == [True]


async def test_many_waiters_of_one_suspension_share_each_read_of_the_store() -> None:
    # A hostile client holding many retries of one paused run open must not multiply the store's work.
    store = CountedReads()
    suspensions = Suspensions(store=store)
    async with paused(suspensions) as suspension_id:
        ended: list[bool] = []

        async def wait() -> None:
            ended.append(await suspensions.until_decided(suspension_id, within_s=60))

        with anyio.fail_after(CHECK_EVERY_S * 5):
            async with anyio.create_task_group() as group:
                store.reads = 0
                for _ in range(100):
                    group.start_soon(wait)
                await anyio.wait_all_tasks_blocked()
                first_looks = store.reads
                # Recorded as another process would, so no waiter is woken: each finds it at the shared read.
                sealed = suspensions.seal_decision(suspension_id, True)
                assert await store.decide(suspension_id, sealed, now=time.time())
                store.reads = 0
        assert ended == [True] * 100
        assert (first_looks, store.reads) == (1, 1)


async def test_a_waiter_that_leaves_while_reading_hands_the_read_to_the_others() -> None:
    store = CountedReads()
    suspensions = Suspensions(store=store)
    async with paused(suspensions) as suspension_id:
        ended: list[bool] = []

        async def wait() -> None:
            ended.append(await suspensions.until_decided(suspension_id, within_s=60))

        with anyio.fail_after(CHECK_EVERY_S * 5):
            async with anyio.create_task_group() as group:
                store.held = anyio.Event()
                async with anyio.create_task_group() as leaving:
                    leaving.start_soon(wait)
                    await anyio.wait_all_tasks_blocked()  # its read is under way, held
                    group.start_soon(wait)
                    await anyio.wait_all_tasks_blocked()
                    store.held = None  # the read under way stays held: only a read of its own answers
                    leaving.cancel_scope.cancel()
                assert await suspensions.decide_as_approver(suspension_id, True)
        assert ended == [True]


async def test_nobody_deciding_ends_the_wait_undecided_once_its_time_is_up() -> None:
    suspensions = Suspensions()
    async with paused(suspensions) as suspension_id:
        started = anyio.current_time()
        decided = await suspensions.until_decided(suspension_id, within_s=0.2)
        waited = anyio.current_time() - started
    assert decided is False
    assert 0.2 <= waited < 0.2 + CHECK_EVERY_S


async def test_a_discarded_or_unknown_suspension_waits_for_nothing() -> None:
    suspensions = Suspensions()
    async with paused(suspensions) as suspension_id:
        assert await suspensions.discard(suspension_id, "session-1")
        with anyio.fail_after(CHECK_EVERY_S / 2):
            discarded = await suspensions.until_decided(suspension_id, within_s=60)
            unknown = await suspensions.until_decided("susp-never-stored", within_s=60)
    assert (discarded, unknown) == (True, True)


async def test_a_store_that_cannot_be_read_counts_as_still_waiting_and_raises_nothing() -> None:
    suspensions = Suspensions(store=FailingReads())
    async with paused(suspensions) as suspension_id:
        decided = await suspensions.until_decided(suspension_id, within_s=0.1)
    assert decided is False


async def test_the_waiters_table_forgets_ended_waits_and_watches_at_most_its_bound() -> None:
    waiters = DecisionWaiters(max_watched=2)
    with waiters.watching("a") as a, waiters.watching("a") as again, waiters.watching("b") as b:
        with waiters.watching("c") as over:
            # Past the bound: a watch of its own, which reads the store on its schedule, unwoken.
            unwoken = over.woken
            waiters.wake("c")
            assert not unwoken.is_set()
            assert len(waiters) == 2
        assert a is again
        woken_a, woken_b = a.woken, b.woken
        waiters.wake("a")
        assert woken_a.is_set()
        assert not woken_b.is_set()
        assert not a.woken.is_set()  # a fresh event, for the next wake
    assert len(waiters) == 0


@pytest.mark.parametrize("within_s", [0.0, -1.0])
async def test_no_time_to_wait_reads_the_store_once_and_answers(within_s: float) -> None:
    suspensions = Suspensions()
    async with paused(suspensions) as suspension_id:
        undecided = await suspensions.until_decided(suspension_id, within_s=within_s)
        assert await suspensions.decide_as_approver(suspension_id, True)
        decided = await suspensions.until_decided(suspension_id, within_s=within_s)
    assert (undecided, decided) == (False, True)
