"""A state machine over acquire / release / invalidate / execute / close of capability sources.

The model knows which snapshot is current for each source and which ones are stale. Every
rule runs on one persistent asyncio loop (the Runtime is created inside it). Invariants:

- every acquired snapshot is released exactly once by the end (teardown releases every
  lease and closes the runtime);
- no snapshot is released while a lease that captured it is still held;
- each lease sees one revision for its life (its graph, catalog and executes agree);
- revisions only grow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mycelium import (
    AcquireContext,
    Acquired,
    Lease,
    Module,
    MyceliumSourceError,
    Runtime,
    RuntimeClosed,
    operation,
    source,
)
from mycelium.testing import direct_sandbox

SOURCE_IDS = ("gamma", "alpha", "beta")  # registered out of order on purpose
SORTED_IDS = tuple(sorted(SOURCE_IDS))

T = TypeVar("T")


@dataclass(eq=False)
class Snap:
    """One snapshot as the model sees it."""

    source_id: str
    version: str
    sequence: int  # position in the global acquisition order
    context: AcquireContext
    stale: bool = False
    releases: int = 0


@dataclass(eq=False)
class Held:
    lease: Lease
    revision: int
    snaps: dict[str, Snap]
    catalog: dict[str, str] = field(default_factory=dict)


class SourcesMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.snaps: list[Snap] = []  # in acquisition order
        self.by_version: dict[str, Snap] = {}
        self.current: dict[str, Snap] = {}
        self.held: list[Held] = []
        self.release_log: list[Snap] = []
        self.violations: list[str] = []
        self.attempt: list[Snap] = []  # snapshots acquired during the acquire in progress
        self.fail_next: set[str] = set()
        self.counts = dict.fromkeys(SOURCE_IDS, 0)
        self.last_revision = 0
        self.every_lease: list[Lease] = []
        self.closed = False
        self._stop, self._entered = self.run(self._make_events())
        self._hosting = self.loop.create_task(self._host())
        self.runtime: Runtime = self.run(self._started())

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    async def _acquire(self) -> Lease:
        lease = await self.runtime.acquire()
        self.every_lease.append(lease)  # so teardown can release it even if a check fails
        return lease

    # ------------------------------------------------------------------ the system under test

    async def _make_events(self) -> tuple[anyio.Event, anyio.Event]:
        return anyio.Event(), anyio.Event()

    async def _host(self) -> None:
        """Run the runtime in a task of its own: every rule runs in another task of the loop."""
        sources = [self._source(source_id) for source_id in SOURCE_IDS]
        async with Runtime(sources=sources, sandbox=direct_sandbox(_versions)) as runtime:
            self._running = runtime
            self._entered.set()
            await self._stop.wait()

    async def _started(self) -> Runtime:
        await self._entered.wait()
        return self._running

    async def _stopped(self) -> None:
        self._stop.set()
        await self._hosting

    def _source(self, source_id: str) -> Any:
        async def acquire(context: AcquireContext) -> Acquired:
            if source_id in self.fail_next:
                self.fail_next.discard(source_id)
                raise ConnectionError(f"{source_id} is unreachable")
            self.counts[source_id] += 1
            version = f"{source_id}-{self.counts[source_id]}"
            snap = Snap(source_id, version, len(self.snaps), context)
            self.snaps.append(snap)
            self.by_version[version] = snap
            self.attempt.append(snap)
            module = Module(
                id=f"mod-{source_id}",
                name=source_id,
                operations={
                    "version": operation(execute=lambda: version, access="read", description=f"{source_id} {version}")
                },
            )

            async def release() -> None:
                self._on_release(snap)

            return Acquired(version=version, modules=[module], release=release)

        return source(id=source_id, acquire=acquire)

    def _on_release(self, snap: Snap) -> None:
        snap.releases += 1
        self.release_log.append(snap)
        if snap.releases > 1:
            self.violations.append(f"{snap.version} released {snap.releases} times")
        for held in self.held:
            if snap in held.snaps.values():
                self.violations.append(f"{snap.version} released while the lease of revision {held.revision} holds it")

    # ------------------------------------------------------------------ rules

    @rule(failing=st.sampled_from(SOURCE_IDS))
    def arm_failure(self, failing: str) -> None:
        """The next acquire of ``failing`` raises."""
        self.fail_next.add(failing)

    @rule()
    def acquire(self) -> None:
        if self.closed:
            with pytest.raises(RuntimeClosed):
                self.run(self._acquire())
            return
        to_acquire = [sid for sid in SORTED_IDS if sid not in self.current or self.current[sid].stale]
        failing = next((sid for sid in to_acquire if sid in self.fail_next), None)
        released_before = len(self.release_log)
        self.attempt = []
        if failing is not None:
            with pytest.raises(MyceliumSourceError) as caught:
                self.run(self._acquire())
            assert caught.value.source_id == failing
            assert caught.value.phase == "acquire"
            assert isinstance(caught.value.__cause__, ConnectionError)
            opened = to_acquire[: to_acquire.index(failing)]
            assert [snap.source_id for snap in self.attempt] == opened, "sources not acquired in id order"
            unwound = self.release_log[released_before:]
            assert unwound == list(reversed(self.attempt)), "the candidate was not unwound in reverse order"
            return
        lease = self.run(self._acquire())
        assert [snap.source_id for snap in self.attempt] == to_acquire, (
            f"expected to acquire {to_acquire}, acquired {[snap.source_id for snap in self.attempt]}"
        )
        for snap in self.attempt:
            self.current[snap.source_id] = snap
        if to_acquire:
            assert lease.revision > self.last_revision, "a rebuilt revision did not grow"
        else:
            assert lease.revision == self.last_revision, "an unchanged graph got a new revision"
        self.last_revision = lease.revision
        held = Held(lease, lease.revision, dict(self.current))
        held.catalog = {entry.path: entry.description for entry in lease.catalog.entries}
        assert held.catalog == {f"{sid}.version": f"{sid} {snap.version}" for sid, snap in held.snaps.items()}
        self.held.append(held)
        self._check_lease(held)
        self._check_tight()

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        held = data.draw(st.sampled_from(self.held))
        self.held.remove(held)
        self.run(held.lease.release())
        assert held.lease.released
        self._check_tight()

    @rule(which=st.sampled_from(SOURCE_IDS))
    def invalidate_current(self, which: str) -> None:
        snap = self.current.get(which)
        if snap is not None:
            snap.context.invalidate()
            snap.stale = True

    @precondition(lambda self: self.snaps)
    @rule(data=st.data())
    def invalidate_any(self, data: st.DataObject) -> None:
        """Invalidate any snapshot ever acquired, even one replaced or released long ago."""
        snap = data.draw(st.sampled_from(self.snaps))
        snap.context.invalidate()
        snap.stale = True

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def execute(self, data: st.DataObject) -> None:
        held = data.draw(st.sampled_from(self.held))
        self._check_lease(held)

    @rule()
    def close(self) -> None:
        self.run(self._close())

    async def _close(self) -> None:
        done = anyio.Event()

        async def close() -> None:
            await self.runtime.close()
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(close)
            await anyio.wait_all_tasks_blocked()
            assert self.runtime.closed
            with pytest.raises(RuntimeClosed):
                await self._acquire()
            if self.held:
                assert not done.is_set(), "close() settled while leases were held"
            while self.held:
                held = self.held.pop()
                await held.lease.release()
                if self.held:
                    await anyio.wait_all_tasks_blocked()
                    assert not done.is_set(), "close() settled while leases were held"
            remaining = [snap for snap in self.snaps if snap.releases == 0]
        assert done.is_set()
        self.closed = True
        # What close() released itself came last, newest acquisition first.
        tail = self.release_log[len(self.release_log) - len(remaining) :] if remaining else []
        assert tail == sorted(remaining, key=lambda snap: snap.sequence, reverse=True)
        self.current = {}
        self._check_all_released()

    # ------------------------------------------------------------------ checks

    def _check_lease(self, held: Held) -> None:
        lease = held.lease
        assert lease.revision == held.revision
        assert lease.graph.revision == held.revision
        assert lease.catalog.revision == held.revision
        assert {entry.path: entry.description for entry in lease.catalog.entries} == held.catalog
        result = self.run(lease.execute_tool.run("versions"))
        assert not result.is_error, result.text
        assert result.value == {sid: snap.version for sid, snap in held.snaps.items()}, (
            f"the lease of revision {held.revision} sees {result.value}"
        )

    def _check_tight(self) -> None:
        """After a release or a successful acquire, exactly the snapshots still in use are open."""
        in_use = {snap for held in self.held for snap in held.snaps.values()}
        in_use |= {snap for snap in self.current.values() if not snap.stale}
        unreleased = {snap for snap in self.snaps if snap.releases == 0}
        assert unreleased == in_use, (
            f"open {sorted(s.version for s in unreleased)} != in use {sorted(s.version for s in in_use)}"
        )

    def _check_all_released(self) -> None:
        assert [snap.version for snap in self.snaps if snap.releases != 1] == []

    @invariant()
    def nothing_released_while_held(self) -> None:
        assert self.violations == []

    @invariant()
    def every_held_snapshot_is_open(self) -> None:
        for held in self.held:
            for snap in held.snaps.values():
                assert snap.releases == 0, f"{snap.version} is released but revision {held.revision} holds it"

    def teardown(self) -> None:
        try:
            if not self.closed:
                held = {id(held.lease) for held in self.held}
                for stray in self.every_lease:  # left behind only if a check failed mid-rule
                    if not stray.released and id(stray) not in held:
                        self.run(stray.release())
                self.run(self._close())
            self.run(self._stopped())
            self._check_all_released()
            assert self.violations == []
        finally:
            self.loop.close()


async def _versions(bindings: Any, signal: object) -> dict[str, str]:
    return {sid: await getattr(bindings, sid).version() for sid in SORTED_IDS}


SourcesMachine.TestCase.settings = settings(max_examples=50, stateful_step_count=30, deadline=None)
TestSourcesStateMachine = SourcesMachine.TestCase
