"""Capability sources: snapshots, revisions, invalidation, bounds, unwinding, release failures, close.

Every source here records each acquire and release in a shared ledger so the tests can
assert the order things happened in. Sandboxes are ``direct_sandbox`` functions that call
the guest bindings a lease hands out, so an execute proves which snapshot a lease sees.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence

import anyio
import pytest

from mycelium import Module, Runtime, RuntimeClosed, Session, operation
from mycelium._sources import (
    AcquireContext,
    Acquired,
    CapabilitySource,
    MyceliumSourceError,
    source,
)
from mycelium.testing import direct_sandbox, rejecting_sandbox
from tests.support.probes import closing

# --------------------------------------------------------------------------- helpers


def module_name(text: str) -> str:
    name = re.sub(r"\W", "_", text)
    return name if name[0].isalpha() else f"m_{name}"


def answer_module(module_id: str, answer: str, *, name: str | None = None) -> Module:
    """A real module with one read operation, ``whoami``, that answers ``answer``."""
    return Module(
        id=module_id,
        name=name or module_name(module_id),
        operations={
            "whoami": operation(execute=lambda: answer, access="read", description=f"Answers {answer}"),
        },
    )


class Ledger:
    """Records every acquire and release, in order, across all sources of a test."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.contexts: dict[str, list[AcquireContext]] = {}
        self.counts: dict[str, int] = {}

    def acquired(self) -> list[str]:
        return [what for kind, what in self.events if kind == "acquire"]

    def released(self) -> list[str]:
        return [what for kind, what in self.events if kind == "release"]

    def context(self, source_id: str) -> AcquireContext:
        """The context of the latest acquire of ``source_id``."""
        return self.contexts[source_id][-1]

    def source(
        self,
        source_id: str,
        *,
        modules: Callable[[str], Sequence[Module]] | None = None,
        version: Callable[[str], str] | None = None,
        before: Callable[[AcquireContext], Awaitable[None]] | None = None,
        release_error: Callable[[], BaseException | None] | None = None,
    ) -> CapabilitySource:
        """A function source whose snapshots are versioned ``<id>@<n>``.

        ``modules(version)`` gives the snapshot's modules (default: one module answering the
        version); ``version(default)`` may replace the version; ``before(context)`` runs
        first and may raise or wait; ``release_error()`` may return an exception to raise
        from release.
        """

        async def acquire(context: AcquireContext) -> Acquired:
            self.contexts.setdefault(source_id, []).append(context)
            if before is not None:
                await before(context)
            self.counts[source_id] = self.counts.get(source_id, 0) + 1
            label = f"{source_id}@{self.counts[source_id]}"
            self.events.append(("acquire", label))
            built = (
                modules(label)
                if modules is not None
                else [answer_module(f"mod-{source_id}", label, name=module_name(source_id))]
            )

            async def release() -> None:
                self.events.append(("release", label))
                if release_error is not None:
                    error = release_error()
                    if error is not None:
                        raise error

            return Acquired(version=version(label) if version else label, modules=built, release=release)

        return source(id=source_id, acquire=acquire)


async def whoami_all(bindings: object, signal: object) -> dict[str, str]:
    """A direct sandbox body: ask every top-level module with ``whoami`` who it is."""
    answers: dict[str, str] = {}
    for name in dir(bindings):
        if name == "env":
            continue
        namespace = getattr(bindings, name)
        if "whoami" in dir(namespace):
            answers[name] = await namespace.whoami()
    return answers


# --------------------------------------------------------------------------- the seed's story


class Computer:
    def __init__(self, name: str) -> None:
        self.name = name

    def screenshot(self) -> dict[str, str]:
        return {"computer": self.name}


class Host:
    """A host whose current Computer changes; its source projects the current one."""

    def __init__(self, computer: Computer) -> None:
        self.current = computer
        self.events: list[tuple[str, str]] = []
        self.contexts: list[AcquireContext] = []

    def source(self) -> CapabilitySource:
        async def acquire(context: AcquireContext) -> Acquired:
            computer = self.current  # capture it: a later switch must not reach this snapshot
            self.contexts.append(context)
            version = f"computer-{computer.name}-v{len(self.contexts)}"
            self.events.append(("acquire", version))
            module = Module(
                id="computer",
                name="computer",
                operations={
                    "screenshot": operation(
                        execute=computer.screenshot,
                        access="read",
                        description=f"Take a screenshot of Computer {computer.name}",
                    )
                },
            )

            async def release() -> None:
                self.events.append(("release", version))

            return Acquired(version=version, modules=[module], release=release)

        return source(id="host-computer", acquire=acquire)


def screenshot(bindings: object, signal: object) -> Awaitable[object]:
    return bindings.computer.screenshot()  # type: ignore[attr-defined, no-any-return]


async def test_lease_keeps_computer_a_after_the_host_switches_to_b_and_invalidates() -> None:
    host = Host(Computer("A"))
    async with Runtime(sources=[host.source()], sandbox=direct_sandbox(screenshot)) as runtime:
        l1 = await runtime.acquire()
        assert host.events == [("acquire", "computer-A-v1")]
        assert [entry.description for entry in l1.catalog.entries] == ["Take a screenshot of Computer A"]

        host.current = Computer("B")
        host.contexts[-1].invalidate()
        assert host.events == [("acquire", "computer-A-v1")], "invalidate() must not release anything by itself"

        l2 = await runtime.acquire()
        assert l2.revision == l1.revision + 1
        assert host.events == [("acquire", "computer-A-v1"), ("acquire", "computer-B-v2")]
        assert ("release", "computer-A-v1") not in host.events, "A was released while L1 still holds it"

        # L1 still sees A: same revision, same catalog, and its execute bindings reach A.
        assert l1.revision == 1
        assert l1.graph.revision == 1
        assert l1.catalog.revision == 1
        assert [entry.description for entry in l1.catalog.entries] == ["Take a screenshot of Computer A"]
        assert [entry.description for entry in l2.catalog.entries] == ["Take a screenshot of Computer B"]
        on_l1 = await l1.execute_tool.run("computer.screenshot()")
        on_l2 = await l2.execute_tool.run("computer.screenshot()")
        assert not on_l1.is_error
        assert not on_l2.is_error
        assert on_l1.value == {"computer": "A"}
        assert on_l2.value == {"computer": "B"}

        # Releasing L2 does not free A; releasing L1 does.
        await l2.release()
        assert ("release", "computer-A-v1") not in host.events
        assert (await l1.execute_tool.run("again")).value == {"computer": "A"}
        await l1.release()
        assert host.events[-1] == ("release", "computer-A-v1")
        assert ("release", "computer-B-v2") not in host.events, "B is current: it stays until close"
    assert host.events == [
        ("acquire", "computer-A-v1"),
        ("acquire", "computer-B-v2"),
        ("release", "computer-A-v1"),
        ("release", "computer-B-v2"),
    ]


# --------------------------------------------------------------------------- order and reuse


class ClassSource:
    """A source written as a class, implementing the CapabilitySource protocol."""

    def __init__(self, source_id: str, ledger: Ledger) -> None:
        self.id = source_id
        self._inner = ledger.source(source_id)

    async def acquire(self, context: AcquireContext) -> Acquired:
        return await self._inner.acquire(context)


async def test_sources_are_acquired_in_sorted_id_order_and_a_snapshot_is_reused_until_invalidated() -> None:
    ledger = Ledger()
    class_source = ClassSource("alpha", ledger)
    assert isinstance(class_source, CapabilitySource)
    sources = [ledger.source("charlie"), class_source, ledger.source("bravo")]
    async with Runtime(sources=sources, sandbox=direct_sandbox(whoami_all)) as runtime:
        first = await runtime.acquire()
        assert ledger.acquired() == ["alpha@1", "bravo@1", "charlie@1"]

        later = [await runtime.acquire() for _ in range(3)]
        assert ledger.acquired() == ["alpha@1", "bravo@1", "charlie@1"], "a fresh snapshot was acquired again"
        assert {lease.revision for lease in later} == {first.revision}
        assert all(lease.graph is first.graph for lease in later)
        for lease in later:
            await lease.release()
        async with runtime.lease() as again:  # still reused once only ``first`` holds it
            assert again.revision == first.revision
        assert ledger.acquired() == ["alpha@1", "bravo@1", "charlie@1"]
        assert ledger.released() == []

        ledger.context("bravo").invalidate()
        rebuilt = await runtime.acquire()
        assert ledger.acquired() == ["alpha@1", "bravo@1", "charlie@1", "bravo@2"], "only bravo is acquired again"
        assert rebuilt.revision == first.revision + 1
        result = await rebuilt.execute_tool.run("whoami")
        assert result.value == {"alpha": "alpha@1", "bravo": "bravo@2", "charlie": "charlie@1"}
        assert (await first.execute_tool.run("whoami")).value == {
            "alpha": "alpha@1",
            "bravo": "bravo@1",
            "charlie": "charlie@1",
        }
        await first.release()
        assert ledger.released() == ["bravo@1"]
        await rebuilt.release()
    assert ledger.released() == ["bravo@1", "bravo@2", "charlie@1", "alpha@1"], "close releases newest first"


async def test_four_sources_unwind_in_reverse_order_when_the_third_fails() -> None:
    ledger = Ledger()
    broken = {"third": True}
    original = LookupError("the third source's backend is gone")

    async def maybe_fail(context: AcquireContext) -> None:
        if broken["third"]:
            raise original

    sources = [
        ledger.source("s4"),
        ledger.source("s2"),
        ledger.source("s3", before=maybe_fail),
        ledger.source("s1"),
    ]
    async with Runtime(sources=sources, sandbox=direct_sandbox(whoami_all)) as runtime:
        with pytest.raises(MyceliumSourceError) as caught:
            await runtime.acquire()
        error = caught.value
        assert error.source_id == "s3"
        assert error.phase == "acquire"
        assert error.__cause__ is original
        assert ledger.events == [
            ("acquire", "s1@1"),
            ("acquire", "s2@1"),
            ("release", "s2@1"),
            ("release", "s1@1"),
        ]
        assert "s4" not in ledger.contexts, "s4 was acquired after s3 failed"
        assert ledger.context("s1").signal.aborted, "the candidate's signal was not aborted"

        broken["third"] = False
        async with runtime.lease() as lease:
            assert ledger.acquired()[-4:] == ["s1@2", "s2@2", "s3@1", "s4@1"]
            result = await lease.execute_tool.run("whoami")
            assert result.value == {"s1": "s1@2", "s2": "s2@2", "s3": "s3@1", "s4": "s4@1"}
    assert ledger.released()[-4:] == ["s4@1", "s3@1", "s2@2", "s1@2"]


async def test_a_failed_acquisition_is_never_an_empty_success() -> None:
    ledger = Ledger()

    async def refuse(context: AcquireContext) -> None:
        raise ConnectionError("no computer")

    async def not_acquired(context: AcquireContext) -> Acquired:
        return None  # type: ignore[return-value]

    for sources in (
        [ledger.source("computer", before=refuse)],
        [ledger.source("fine"), source(id="wrong", acquire=not_acquired)],
    ):
        async with Runtime(sources=sources, sandbox=direct_sandbox(whoami_all)) as runtime:
            leases = []
            with pytest.raises(MyceliumSourceError) as caught:
                leases.append(await runtime.acquire())
            assert leases == []
            assert caught.value.phase == "acquire"
            with pytest.raises(MyceliumSourceError):
                await runtime.invoke("mod-computer", "whoami")
            await runtime.close()
    # The well-behaved source of the second runtime was unwound each time it was acquired.
    assert ledger.acquired() == ["fine@1", "fine@2"]
    assert ledger.released() == ["fine@1", "fine@2"]


# --------------------------------------------------------------------------- bounds


async def test_128_sources_are_admitted_and_129_are_refused_at_construction() -> None:
    ledger = Ledger()
    sources = [ledger.source(f"source-{index:03d}") for index in range(128)]
    async with Runtime(sources=sources, sandbox=rejecting_sandbox()) as runtime:
        async with runtime.lease() as lease:
            assert len(lease.graph) == 128
    assert len(ledger.acquired()) == 128
    assert ledger.acquired() == sorted(ledger.acquired())
    with pytest.raises(ValueError, match="128"):
        Runtime(sources=[*sources, ledger.source("source-128")], sandbox=rejecting_sandbox())


def many_modules(prefix: str, count: int) -> list[Module]:
    return [answer_module(f"{prefix}-{index}", f"{prefix}-{index}") for index in range(count)]


async def test_1000_modules_across_static_and_snapshots_are_admitted() -> None:
    ledger = Ledger()
    sources = [
        ledger.source("a", modules=lambda version: many_modules("a", 250)),
        ledger.source("b", modules=lambda version: many_modules("b", 250)),
    ]
    async with Runtime(modules=many_modules("static", 500), sources=sources, sandbox=rejecting_sandbox()) as runtime:
        async with runtime.lease() as lease:
            assert len(lease.graph) == 1_000
            assert await runtime.invoke("b-249", "whoami") == "b-249"


async def test_1001_modules_fail_with_a_source_error_and_release_everything_acquired_for_the_candidate() -> None:
    ledger = Ledger()
    sources = [
        ledger.source("a", modules=lambda version: many_modules("a", 250)),
        ledger.source("b", modules=lambda version: many_modules("b", 251)),
        ledger.source("c", modules=lambda version: []),
    ]
    async with Runtime(modules=many_modules("static", 500), sources=sources, sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(MyceliumSourceError, match=r"1,?000") as caught:
            await runtime.acquire()
        assert caught.value.source_id == "b"
        assert caught.value.phase == "acquire"
        assert ledger.events == [("acquire", "a@1"), ("acquire", "b@1"), ("release", "b@1"), ("release", "a@1")]
        assert "c" not in ledger.contexts


def test_duplicate_source_ids_are_refused() -> None:
    ledger = Ledger()
    with pytest.raises(ValueError, match="twice"):
        Runtime(
            sources=[ledger.source("dup"), ledger.source("other"), ledger.source("dup")], sandbox=rejecting_sandbox()
        )


@pytest.mark.parametrize("bad_id", ["x" * 161, ""])
def test_a_source_id_must_be_non_empty_and_at_most_160_characters(bad_id: str) -> None:
    with pytest.raises(ValueError, match="160"):
        Runtime(sources=[Ledger().source(bad_id)], sandbox=rejecting_sandbox())


async def test_a_160_character_source_id_is_admitted() -> None:
    ledger = Ledger()
    long_id = "x" * 160
    only = ledger.source(
        long_id,
        modules=lambda version: [answer_module("long-source-module", "v1")],
        version=lambda label: "v1",  # the default label (<id>@1) would itself exceed 160 characters
    )
    async with Runtime(sources=[only], sandbox=rejecting_sandbox()) as runtime:
        async with runtime.lease() as lease:
            assert lease.graph.module("long-source-module") is not None
        assert ledger.acquired() == [f"{long_id}@1"]


@pytest.mark.parametrize("bad_version", ["v" * 161, ""])
async def test_a_version_that_is_empty_or_longer_than_160_characters_is_a_source_error(bad_version: str) -> None:
    ledger = Ledger()
    sources = [ledger.source("first"), ledger.source("second", version=lambda label: bad_version)]
    async with Runtime(sources=sources, sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(MyceliumSourceError) as caught:
            await runtime.acquire()
        assert caught.value.source_id == "second"
        assert caught.value.phase == "acquire"
        # The refused snapshot still owns what it opened: it is released, then the first.
        assert ledger.released() == ["second@1", "first@1"]


async def test_a_160_character_version_is_admitted() -> None:
    ledger = Ledger()
    async with Runtime(
        sources=[ledger.source("s", version=lambda label: "v" * 160)], sandbox=rejecting_sandbox()
    ) as rt:
        async with rt.lease() as lease:
            assert lease.revision == 1


async def test_a_duplicate_module_id_between_two_sources_names_the_later_source() -> None:
    ledger = Ledger()
    sources = [
        ledger.source("zeta", modules=lambda version: [answer_module("shared-module", version, name="zeta_mod")]),
        ledger.source("alpha", modules=lambda version: [answer_module("shared-module", version, name="alpha_mod")]),
    ]
    async with Runtime(sources=sources, sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(MyceliumSourceError, match="shared-module") as caught:
            await runtime.acquire()
        assert caught.value.source_id == "zeta", "zeta is acquired after alpha, so it is the later source"
        assert caught.value.phase == "acquire"
        assert caught.value.__cause__ is not None
        assert ledger.released() == ["zeta@1", "alpha@1"]


async def test_a_module_id_of_a_source_that_clashes_with_a_static_module_names_the_source() -> None:
    ledger = Ledger()
    sources = [ledger.source("a"), ledger.source("b", modules=lambda version: [answer_module("static", version)])]
    async with Runtime(modules=[answer_module("static", "s")], sources=sources, sandbox=rejecting_sandbox()) as rt:
        with pytest.raises(MyceliumSourceError) as caught:
            await rt.acquire()
        assert caught.value.source_id == "b"
        assert ledger.released() == ["b@1", "a@1"]


async def test_a_path_conflict_in_a_source_module_names_that_source() -> None:
    ledger = Ledger()

    def conflicting(version: str) -> list[Module]:
        return [
            Module(
                id="files",
                name="files",
                operations={
                    "read": operation(execute=lambda: 1, access="read"),
                    "read.all": operation(execute=lambda: 2, access="read"),
                },
            )
        ]

    sources = [ledger.source("early"), ledger.source("late", modules=conflicting)]
    async with Runtime(sources=sources, sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(MyceliumSourceError, match="read") as caught:
            await runtime.acquire()
        assert caught.value.source_id == "late"
        assert caught.value.phase == "acquire"
        assert ledger.released() == ["late@1", "early@1"]


async def test_two_sources_asking_for_the_same_module_name_are_both_installed_without_a_mixed_graph() -> None:
    # Names are model-facing aliases: a contested name gets a suffix (see graph.py), so it is not a conflict.
    ledger = Ledger()
    sources = [
        ledger.source("one", modules=lambda version: [answer_module("mod-one", version, name="computer")]),
        ledger.source("two", modules=lambda version: [answer_module("mod-two", version, name="computer")]),
    ]
    async with Runtime(sources=sources, sandbox=rejecting_sandbox()) as runtime:
        async with runtime.lease() as lease:
            assert sorted(module.alias for module in lease.graph.modules) == ["computer", "computer_2"]
            assert await runtime.invoke("mod-two", "whoami") == "two@1"


# --------------------------------------------------------------------------- copies


async def test_snapshot_modules_are_a_copy_of_the_collection_the_source_returned() -> None:
    ledger = Ledger()
    live: list[Module] = []

    def live_collection(version: str) -> list[Module]:
        live.append(answer_module("live-1", version))
        return live  # the host's own, live list

    sources = [ledger.source("live", modules=live_collection), ledger.source("other")]
    async with Runtime(sources=sources, sandbox=direct_sandbox(whoami_all)) as runtime:
        l1 = await runtime.acquire()
        live.append(answer_module("live-2", "added later"))
        live.pop(0)
        assert [module.id for module in l1.graph.modules] == ["live-1", "mod-other"]

        # A rebuild caused by another source reuses the live source's snapshot as captured.
        ledger.context("other").invalidate()
        l2 = await runtime.acquire()
        assert l2.revision == l1.revision + 1
        assert ledger.acquired() == ["live@1", "other@1", "other@2"]
        assert [module.id for module in l2.graph.modules] == ["live-1", "mod-other"]
        assert (await l2.execute_tool.run("whoami")).value == {"live_1": "live@1", "other": "other@2"}
        await l1.release()
        await l2.release()


# --------------------------------------------------------------------------- concurrency


async def test_concurrent_acquires_share_the_build_in_flight() -> None:
    ledger = Ledger()
    gate = anyio.Event()

    async def wait_for_gate(context: AcquireContext) -> None:
        await gate.wait()

    sources = [ledger.source("fast"), ledger.source("slow", before=wait_for_gate)]
    async with Runtime(sources=sources, sandbox=direct_sandbox(whoami_all)) as runtime:
        leases = []

        async def take() -> None:
            leases.append(await runtime.acquire())

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(take)
            await anyio.wait_all_tasks_blocked()
            assert len(ledger.contexts["slow"]) == 1, "a second build started while one was in flight"
            gate.set()
        assert ledger.acquired() == ["fast@1", "slow@1"]
        assert [lease.revision for lease in leases] == [1, 1, 1]
        assert all(lease.graph is leases[0].graph for lease in leases)
        for lease in leases:
            await lease.release()


async def test_an_invalidation_during_a_build_makes_the_following_acquire_rebuild() -> None:
    ledger = Ledger()
    gate = anyio.Event()

    async def wait_for_gate(context: AcquireContext) -> None:
        if not gate.is_set():
            await gate.wait()

    sources = [ledger.source("slow", before=wait_for_gate)]
    async with Runtime(sources=sources, sandbox=direct_sandbox(whoami_all)) as runtime:
        leases = []

        async def take() -> None:
            leases.append(await runtime.acquire())

        async with anyio.create_task_group() as tg:
            tg.start_soon(take)
            tg.start_soon(take)
            await anyio.wait_all_tasks_blocked()
            ledger.context("slow").invalidate()  # the host's change arrives mid-build
            gate.set()
        assert [lease.revision for lease in leases] == [1, 1], "the build in flight is still shared"
        for lease in leases:
            assert (await lease.execute_tool.run("whoami")).value == {"slow": "slow@1"}

        following = await runtime.acquire()
        assert following.revision == 2
        assert ledger.acquired() == ["slow@1", "slow@2"]
        assert (await following.execute_tool.run("whoami")).value == {"slow": "slow@2"}
        assert "slow@1" not in ledger.released(), "slow@1 was released while two leases hold it"
        for lease in leases:
            await lease.release()
        assert ledger.released() == ["slow@1"]
        await following.release()


async def test_a_lease_sharing_a_build_keeps_its_snapshot_when_the_builder_releases_first() -> None:
    # Two acquires share a build; the host invalidates mid-build; the builder's task gets its
    # lease and releases it straight away. The other lease captured the same revision: its
    # snapshot must stay unreleased while it is held.
    ledger = Ledger()
    gate = anyio.Event()

    async def wait_for_gate(context: AcquireContext) -> None:
        if not gate.is_set():
            await gate.wait()

    async with Runtime(sources=[ledger.source("slow", before=wait_for_gate)], sandbox=direct_sandbox(whoami_all)) as rt:
        sharer_saw: list[tuple[int, list[str]]] = []
        held = []

        async def builder() -> None:
            lease = await rt.acquire()
            await lease.release()

        async def sharer() -> None:
            lease = await rt.acquire()
            held.append(lease)
            sharer_saw.append((lease.revision, ledger.released()))

        async with anyio.create_task_group() as tg:
            tg.start_soon(builder)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(sharer)
            await anyio.wait_all_tasks_blocked()
            ledger.context("slow").invalidate()
            gate.set()
        assert len(held) == 1
        revision, released_when_acquired = sharer_saw[0]
        try:
            result = await held[0].execute_tool.run("whoami")
            released_while_held = list(ledger.released())
        finally:
            await held[0].release()
        snapshot_of_lease = result.value["slow"]  # type: ignore[index, call-overload]
        assert snapshot_of_lease not in released_when_acquired, (
            f"the lease of revision {revision} was handed a snapshot ({snapshot_of_lease}) already released"
        )
        assert snapshot_of_lease not in released_while_held
        assert ledger.released().count(snapshot_of_lease) == 1


async def test_a_waiter_builds_again_when_the_build_it_was_sharing_is_cancelled() -> None:
    ledger = Ledger()
    blocking = {"first": True}

    async def block_first(context: AcquireContext) -> None:
        if blocking["first"]:
            blocking["first"] = False
            await anyio.sleep_forever()

    async with Runtime(sources=[ledger.source("s", before=block_first)], sandbox=direct_sandbox(whoami_all)) as rt:
        leases = []
        builder_scope = anyio.CancelScope()

        async def builder() -> None:
            with builder_scope:
                leases.append(await rt.acquire())

        async def waiter() -> None:
            leases.append(await rt.acquire())

        async with anyio.create_task_group() as tg:
            tg.start_soon(builder)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            builder_scope.cancel()
        assert len(ledger.contexts["s"]) == 2, "the waiter did not build again"
        assert ledger.contexts["s"][0].signal.aborted
        assert len(leases) == 1
        assert (await leases[0].execute_tool.run("whoami")).value == {"s": "s@1"}
        await leases[0].release()


# --------------------------------------------------------------------------- release failures


async def test_a_release_that_fails_is_raised_from_lease_release() -> None:
    ledger = Ledger()
    cause = OSError("the adapter would not close")
    source_ = ledger.source("flaky", release_error=lambda: cause)
    async with Runtime(sources=[source_], sandbox=rejecting_sandbox()) as runtime:
        lease = await runtime.acquire()
        ledger.context("flaky").invalidate()
        with pytest.raises(MyceliumSourceError) as caught:
            await lease.release()
        assert caught.value.source_id == "flaky"
        assert caught.value.phase == "release"
        assert caught.value.__cause__ is cause
        assert lease.released
        assert ledger.released() == ["flaky@1"]
    # close() had nothing left to release and did not raise the failure a second time.
    assert ledger.released() == ["flaky@1"]


async def test_a_release_that_fails_is_raised_from_close() -> None:
    ledger = Ledger()
    cause = OSError("subscription stuck")
    async with Runtime(
        sources=[ledger.source("flaky", release_error=lambda: cause)], sandbox=rejecting_sandbox()
    ) as runtime:
        async with runtime.lease():
            pass
        with pytest.raises(MyceliumSourceError) as caught:
            await runtime.close()
        assert caught.value.phase == "release"
        assert caught.value.source_id == "flaky"
        assert caught.value.__cause__ is cause


async def test_several_release_failures_in_one_close_are_an_exception_group_and_all_are_attempted() -> None:
    ledger = Ledger()
    causes = {name: OSError(f"{name} stuck") for name in ("a", "c")}
    sources = [
        ledger.source("a", release_error=lambda: causes["a"]),
        ledger.source("b"),
        ledger.source("c", release_error=lambda: causes["c"]),
    ]
    async with Runtime(sources=sources, sandbox=rejecting_sandbox()) as runtime:
        async with runtime.lease():
            pass
        with pytest.raises(ExceptionGroup) as caught:
            await runtime.close()
        errors = caught.value.exceptions
        assert all(isinstance(error, MyceliumSourceError) for error in errors)
        assert [(error.source_id, error.phase, error.__cause__) for error in errors] == [  # type: ignore[attr-defined]
            ("c", "release", causes["c"]),
            ("a", "release", causes["a"]),
        ]
        assert ledger.released() == ["c@1", "b@1", "a@1"]


async def test_a_release_failure_while_unwinding_a_failed_acquire_is_raised_with_the_acquire_failure() -> None:
    ledger = Ledger()
    release_cause = OSError("could not close a")
    acquire_cause = RuntimeError("b is down")

    async def fail(context: AcquireContext) -> None:
        raise acquire_cause

    sources = [ledger.source("a", release_error=lambda: release_cause), ledger.source("b", before=fail)]
    async with Runtime(sources=sources, sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(ExceptionGroup) as caught:
            await runtime.acquire()
    errors = caught.value.exceptions
    assert [(error.source_id, error.phase) for error in errors] == [("b", "acquire"), ("a", "release")]  # type: ignore[attr-defined]
    assert errors[0].__cause__ is acquire_cause
    assert errors[1].__cause__ is release_cause
    assert ledger.released() == ["a@1"]


# --------------------------------------------------------------------------- close


async def test_close_stops_acquisitions_waits_for_held_leases_then_releases_in_reverse_acquisition_order() -> None:
    ledger = Ledger()
    async with Runtime(sources=[ledger.source("b"), ledger.source("a")], sandbox=direct_sandbox(whoami_all)) as runtime:
        l1 = await runtime.acquire()  # acquires a@1, b@1
        ledger.context("a").invalidate()
        l2 = await runtime.acquire()  # acquires a@2 after b@1: reverse acquisition order is a@2, b@1
        assert ledger.acquired() == ["a@1", "b@1", "a@2"]
        async with closing(runtime) as closed:
            assert runtime.closed
            assert not closed.is_set(), "close() settled while two leases were held"
            with pytest.raises(RuntimeClosed):
                await runtime.acquire()
            assert ledger.released() == []
            assert (await l1.execute_tool.run("whoami")).value == {"a": "a@1", "b": "b@1"}

            await l1.release()  # a@1 is stale and only l1 used it
            await anyio.wait_all_tasks_blocked()
            assert ledger.released() == ["a@1"]
            assert not closed.is_set(), "close() settled while a lease was held"

            await l2.release()
        assert closed.is_set()
        assert ledger.released() == ["a@1", "a@2", "b@1"]
        assert len(ledger.acquired()) == 3


# --------------------------------------------------------------------------- cancellation


async def test_cancelling_an_acquire_aborts_the_signal_and_releases_what_the_candidate_opened() -> None:
    ledger = Ledger()
    opened: list[str] = []
    closed_by_signal: list[object] = []
    hang = {"b": True}
    entered = anyio.Event()

    async def open_then_wait(context: AcquireContext) -> None:
        if not hang["b"]:
            return
        opened.append("b-connection")
        # The source accounts for what it opened when the signal aborts.
        context.signal.add_listener(lambda reason: closed_by_signal.append(reason))
        entered.set()
        await anyio.sleep_forever()

    sources = [ledger.source("c"), ledger.source("b", before=open_then_wait), ledger.source("a")]
    async with Runtime(sources=sources, sandbox=direct_sandbox(whoami_all)) as runtime:
        outcome: list[object] = []

        async def attempt() -> None:
            outcome.append(await runtime.acquire())

        async with anyio.create_task_group() as tg:
            tg.start_soon(attempt)
            await entered.wait()
            await anyio.wait_all_tasks_blocked()
            assert ledger.released() == []
            tg.cancel_scope.cancel()
        assert outcome == []
        assert ledger.context("b").signal.aborted
        assert ledger.context("a").signal is ledger.context("b").signal
        assert len(closed_by_signal) == 1
        assert ledger.events == [("acquire", "a@1"), ("release", "a@1")]
        assert "c" not in ledger.contexts

        hang["b"] = False
        async with runtime.lease() as lease:
            assert (await lease.execute_tool.run("whoami")).value == {"a": "a@2", "b": "b@1", "c": "c@1"}
            assert not ledger.context("a").signal.aborted
    assert ledger.released() == ["a@1", "c@1", "b@1", "a@2"]


# --------------------------------------------------------------------------- session, revisions, invoke


async def test_acquire_context_session_is_the_runtimes_session() -> None:
    session = Session("conversation-7")
    for runtime_session in (session, None):
        ledger = Ledger()
        async with Runtime(sources=[ledger.source("s")], session=runtime_session, sandbox=rejecting_sandbox()) as rt:
            async with rt.lease():
                pass
        assert ledger.context("s").session is runtime_session


async def test_revisions_only_grow_and_a_static_only_runtime_keeps_revision_1() -> None:
    async with Runtime(modules=[answer_module("static", "s")], sandbox=rejecting_sandbox()) as runtime:
        revisions = []
        for _ in range(5):
            async with runtime.lease() as lease:
                revisions.append(lease.revision)
        assert revisions == [1, 1, 1, 1, 1]

    ledger = Ledger()
    flaky = {"fail": False}

    async def maybe_fail(context: AcquireContext) -> None:
        if flaky["fail"]:
            raise RuntimeError("down")

    sources = [ledger.source("a"), ledger.source("b", before=maybe_fail)]
    async with Runtime(sources=sources, sandbox=rejecting_sandbox()) as runtime:
        seen = []
        held = []
        for step in range(6):
            lease = await runtime.acquire()
            held.append(lease)
            seen.append(lease.revision)
            ledger.context("a" if step % 2 else "b").invalidate()
            if step == 3:
                ledger.context("b").invalidate()
                flaky["fail"] = True
                with pytest.raises(MyceliumSourceError):
                    await runtime.acquire()
                flaky["fail"] = False
        assert seen == sorted(set(seen)), f"revisions did not strictly grow: {seen}"
        assert all(lease.graph.revision == lease.revision for lease in held)
        for lease in held:
            await lease.release()


async def test_runtime_invoke_runs_an_operation_of_a_sources_module() -> None:
    host = Host(Computer("A"))
    async with Runtime(sources=[host.source()], sandbox=rejecting_sandbox()) as runtime:
        assert await runtime.invoke("computer", "screenshot") == {"computer": "A"}
        host.current = Computer("B")
        assert await runtime.invoke("computer", "screenshot") == {"computer": "A"}, "no invalidate yet"
        host.contexts[-1].invalidate()
        assert await runtime.invoke("computer", "screenshot") == {"computer": "B"}
        assert host.events == [
            ("acquire", "computer-A-v1"),
            ("acquire", "computer-B-v2"),
            ("release", "computer-A-v1"),
        ]


# --------------------------------------------------------------------------- cancellation while releasing


class SlowReleases:
    """Sources whose snapshots' releases can be held at a gate, to cancel the caller mid-release."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.contexts: dict[str, list[AcquireContext]] = {}
        self.slow: set[str] = set()
        self.gate = anyio.Event()
        self.entered = anyio.Event()

    def released(self) -> list[str]:
        return [what for kind, what in self.events if kind == "release"]

    def source(self, source_id: str) -> CapabilitySource:
        async def acquire(context: AcquireContext) -> Acquired:
            self.contexts.setdefault(source_id, []).append(context)
            label = f"{source_id}@{len(self.contexts[source_id])}"
            self.events.append(("acquire", label))

            async def release() -> None:
                if label in self.slow:
                    self.entered.set()
                    await self.gate.wait()
                self.events.append(("release", label))

            module = answer_module(f"mod-{source_id}", label, name=source_id)
            return Acquired(version=label, modules=[module], release=release)

        return source(id=source_id, acquire=acquire)


async def test_cancelling_an_acquire_while_it_releases_a_stale_snapshot_leaks_nothing() -> None:
    # The new revision (a@2) is installed; the acquire then releases the stale a@1 and is
    # cancelled there. The caller gets no lease, so nothing may keep a@2 from being released.
    sources = SlowReleases()
    sources.slow.add("a@1")
    async with Runtime(sources=[sources.source("a")], sandbox=direct_sandbox(whoami_all)) as runtime:
        async with runtime.lease():
            pass
        sources.contexts["a"][-1].invalidate()
        outcome: list[object] = []

        async def attempt() -> None:
            outcome.append(await runtime.acquire())

        async with anyio.create_task_group() as tg:
            tg.start_soon(attempt)
            await sources.entered.wait()
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
            sources.gate.set()
        for lease in outcome:
            await lease.release()  # type: ignore[attr-defined]
        await runtime.close()
        assert [what for kind, what in sources.events if kind == "acquire"] == ["a@1", "a@2"]
        assert sources.released().count("a@2") == 1, f"a@2 was never released: {sources.events}"
        assert sources.released().count("a@1") <= 1


async def test_a_cancelled_lease_release_still_releases_every_stale_snapshot() -> None:
    sources = SlowReleases()
    sources.slow.add("b@1")
    async with Runtime(
        sources=[sources.source("a"), sources.source("b")], sandbox=direct_sandbox(whoami_all)
    ) as runtime:
        l1 = await runtime.acquire()
        sources.contexts["a"][-1].invalidate()
        sources.contexts["b"][-1].invalidate()
        l2 = await runtime.acquire()

        async with anyio.create_task_group() as tg:
            tg.start_soon(l1.release)  # releases b@1 (held at the gate), then a@1
            await sources.entered.wait()
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
            sources.gate.set()
        await l2.release()
        await runtime.close()
        released = sources.released()
        for label in ("a@1", "a@2", "b@2"):
            assert released.count(label) == 1, f"{label} was not released exactly once: {sources.events}"
        assert released.count("b@1") <= 1
