"""Capability sources: changing capabilities, captured as coherent revisions.

Static modules never change. A :class:`CapabilitySource` acquires a snapshot of
something that does (the current Computer, a Connection): a version, its modules, and a
``release()`` that owns what was opened for it. :class:`Capabilities` combines the
static modules and the current snapshot of every source into one graph revision.

- Sources are acquired in id order, whatever order they were registered in.
- A snapshot is reused until its source calls ``invalidate()``; the next capture then
  builds a new revision. A revision already captured keeps its snapshots: nobody ever
  sees a mixed graph.
- If a candidate revision cannot be installed, what was acquired for it is released in
  reverse order and the capture fails with :class:`MyceliumSourceError`; a failure is never
  an empty capability set.
- A snapshot is released once no revision in use holds it; release failures are raised
  from the call that triggered the release, never swallowed.

Invalidation is not revocation: a captured snapshot still needs the host's final
authority check before an operation touches a resource.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import anyio
from anyio.abc import TaskGroup

from . import _tracing
from ._context import Session
from ._exceptions import DefinitionError, MyceliumSourceError, RuntimeClosed
from ._graph import MAX_MODULES, OperationGraph, build_graph
from ._language import LanguageFacts
from ._modules import MAX_ID_LENGTH, Module
from ._signals import AbortController, AbortSignal
from ._text import clip
from ._values import first_repeated

__all__ = [
    "MAX_SOURCES",
    "AcquireContext",
    "Acquired",
    "Capabilities",
    "CapabilitySource",
    "MyceliumSourceError",
    "Revision",
    "source",
]

logger = logging.getLogger("mycelium")

MAX_SOURCES = 128


@dataclass(frozen=True)
class Acquired:
    """One snapshot of a source: a secret-free ``version``, its modules, and its ``release``.

    ``modules`` is copied when the snapshot is taken: later changes to the host's
    collection do not reach it. ``release()`` owns everything acquired for this snapshot.
    """

    version: str
    modules: Sequence[Module]
    release: Callable[[], Awaitable[None]]


class AcquireContext:
    """What a source's ``acquire`` gets: the session, a signal to stop, ``invalidate()``, the guest's language,
    and a task group for work the snapshot keeps running."""

    __slots__ = ("_snapshot", "language", "session", "signal", "tasks")

    def __init__(
        self,
        session: Session | None,
        signal: AbortSignal,
        snapshot: _Snapshot,
        language: LanguageFacts,
        tasks: TaskGroup,
    ) -> None:
        self.session = session
        """The runtime's session, ``None`` for a session-free host."""
        self.signal = signal
        """Aborted when the capture is cancelled or fails: stop, and account for what is open."""
        self.language = language
        """The language the sandbox's programs speak, so a source can name its modules and
        namespaces with names a program can use (installation refuses the others)."""
        self.tasks = tasks
        """The runtime's task group, for work that outlives ``acquire()`` (a connection the
        snapshot holds): such work must end once the snapshots using it are released, as the
        runtime waits for it when it closes. It must not raise either: an exception escaping
        it cancels the runtime and the host's ``async with`` block with it (task-group rules).
        Catch what the work may fail with, and :meth:`invalidate` the snapshot instead."""
        self._snapshot = snapshot

    def invalidate(self) -> None:
        """Mark this snapshot stale: the next capture builds a new revision without it.

        Revisions already captured keep it until they are released.
        """
        self._snapshot.stale = True


@runtime_checkable
class CapabilitySource(Protocol):
    """Acquires snapshots of a changing capability. ``id`` is stable and secret-free."""

    @property
    def id(self) -> str: ...

    async def acquire(self, context: AcquireContext) -> Acquired:
        """Return the current snapshot. Stop when ``context.signal`` aborts."""
        ...


class _FunctionSource:
    def __init__(self, id: str, acquire: Callable[[AcquireContext], Awaitable[Acquired]]) -> None:
        self.id = id
        self._acquire = acquire

    async def acquire(self, context: AcquireContext) -> Acquired:
        return await self._acquire(context)

    def __repr__(self) -> str:
        return f"source(id={self.id!r})"


def source(*, id: str, acquire: Callable[[AcquireContext], Awaitable[Acquired]]) -> CapabilitySource:
    """Build a source from an async ``acquire(context) -> Acquired`` function."""
    if not callable(acquire):
        raise DefinitionError(f"source {id!r}: acquire must be an async callable")
    return _FunctionSource(id, acquire)


class _Snapshot:
    """A source's snapshot as held by the revisions that use it."""

    def __init__(self, source_id: str, order: int) -> None:
        self.source_id = source_id
        self.order = order  # acquisition sequence, for reverse-order release
        self.version = ""
        self.modules: tuple[Module, ...] = ()
        self.release: Callable[[], Awaitable[None]] | None = None
        self.stale = False
        self.holders = 0  # revisions alive that use this snapshot
        self.released = False


class Revision:
    """One coherent graph, with the snapshots it was built from."""

    def __init__(self, graph: OperationGraph, snapshots: tuple[_Snapshot, ...]) -> None:
        self.graph = graph
        self.snapshots = snapshots
        self.leases = 0

    @property
    def number(self) -> int:
        return self.graph.revision

    @property
    def stale(self) -> bool:
        """Whether a source invalidated one of this revision's snapshots."""
        return any(snapshot.stale for snapshot in self.snapshots)


class _Build:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.waiters = 0
        self.revision: Revision | None = None
        self.error: BaseException | None = None


class Capabilities:
    """Static modules plus sources, captured as revisions. One per runtime."""

    def __init__(
        self,
        *,
        modules: Sequence[Module],
        sources: Sequence[CapabilitySource],
        session: Session | None,
        language: LanguageFacts,
    ) -> None:
        if isinstance(sources, CapabilitySource) or not isinstance(sources, Sequence):
            raise ValueError("sources must be a sequence of capability sources")
        if len(sources) > MAX_SOURCES:
            raise ValueError(f"{len(sources)} sources is more than the limit of {MAX_SOURCES}")
        for candidate in sources:
            if not isinstance(candidate, CapabilitySource):
                raise ValueError(f"sources: {candidate!r} has no id and async acquire(context)")
            _check_label("source id", candidate.id)
        twice = first_repeated(candidate.id for candidate in sources)
        if twice is not None:
            raise ValueError(f"sources: id {twice!r} is used twice")
        self.static = tuple(modules)
        """The modules every revision installs."""
        self.sources = tuple(sorted(sources, key=lambda candidate: candidate.id))
        """The sources each revision acquires, by id."""
        self._session = session
        self._language = language
        self._numbers = itertools.count(1)
        self._orders = itertools.count()
        self._current_snapshot: dict[str, _Snapshot] = {}
        self._open: list[_Snapshot] = []  # acquired, installed and not yet released
        self._alive: set[Revision] = set()
        self._current: Revision | None = None
        self._building: _Build | None = None
        self._closed = False
        # Static modules are checked now, so a broken registration fails at construction.
        if sources:
            build_graph(self.static, revision=0, language=language)
        else:
            self._install(Revision(build_graph(self.static, revision=next(self._numbers), language=language), ()))

    async def capture(self, tasks: TaskGroup) -> Revision:
        """Hold the current revision, building a new one when there is none or a snapshot went stale.

        ``tasks`` is where sources start work their snapshots keep running (see :class:`AcquireContext`).
        """
        while True:
            if self._closed:
                raise RuntimeClosed("the runtime is closed; it hands out no more leases")
            current = self._current
            if current is not None and not current.stale:
                current.leases += 1
                return current
            build = self._building
            if build is None:
                return await self._build(tasks)
            # Shared even if a source invalidates it meanwhile (the next capture rebuilds). The
            # build hands each waiter its hold before it wakes anyone, so the builder releasing
            # first cannot retire the revision under a waiter.
            build.waiters += 1
            try:
                await build.done.wait()
            except anyio.get_cancelled_exc_class():
                if build.revision is None:
                    build.waiters -= 1
                else:
                    with anyio.CancelScope(shield=True):
                        await self.release(build.revision)
                raise
            if build.revision is not None:
                return build.revision
            if build.error is not None and not isinstance(build.error, anyio.get_cancelled_exc_class()):
                raise build.error
            # The task building it was cancelled: build again here.

    async def release(self, revision: Revision) -> None:
        """Give back one hold on ``revision``; release the snapshots nobody uses any more."""
        revision.leases -= 1
        _raise_all(await self._release_unused())

    async def close(self, *, held_too: bool = False) -> None:
        """Refuse new captures and release every snapshot no revision holds, newest first.

        Call it once nothing holds a revision: a held revision keeps its snapshots, unless
        ``held_too`` (the runtime has stopped, and the leases still holding it were abandoned).
        """
        self._closed = True
        if self._building is not None:
            await self._building.done.wait()
        if held_too:
            for revision in self._alive:
                revision.leases = 0
        _raise_all(await self._release_unused())

    async def _build(self, tasks: TaskGroup) -> Revision:
        build = self._building = _Build()
        controller = AbortController()
        fresh: list[_Snapshot] = []
        try:
            revision = await self._candidate(controller.signal, tasks, fresh)
        except BaseException as exc:
            controller.abort("the capture failed")
            unwind_errors = await _release_each(reversed(fresh))
            build.error = exc
            if unwind_errors and isinstance(exc, Exception):
                message = "capture failed, and so did releasing what it acquired"
                build.error = ExceptionGroup(message, [exc, *unwind_errors])
            else:
                for error in unwind_errors:
                    logger.error("releasing what a cancelled capture acquired failed", exc_info=error)
            self._building = None
            build.done.set()
            if build.error is not exc:
                raise build.error from None
            raise
        for snapshot in fresh:
            self._current_snapshot[snapshot.source_id] = snapshot
            self._open.append(snapshot)
        self._install(revision)
        revision.leases += 1 + build.waiters  # the builder's hold and every waiter's
        build.revision = revision
        self._building = None
        build.done.set()
        errors = await self._release_unused()
        if errors:
            revision.leases -= 1
            _raise_all(errors)
        return revision

    def _install(self, revision: Revision) -> None:
        for snapshot in revision.snapshots:
            snapshot.holders += 1
        self._alive.add(revision)
        self._current = revision

    async def _candidate(self, signal: AbortSignal, tasks: TaskGroup, fresh: list[_Snapshot]) -> Revision:
        chosen: list[_Snapshot] = []
        count = len(self.static)
        for candidate in self.sources:
            snapshot = self._current_snapshot.get(candidate.id)
            if snapshot is None or snapshot.stale:
                snapshot = await self._acquire(candidate, signal, tasks, fresh)
            count += len(snapshot.modules)
            if count > MAX_MODULES:
                # Blame what changed: the newest snapshot taken for this candidate, if any.
                culprit = fresh[-1].source_id if fresh else candidate.id
                raise MyceliumSourceError(
                    culprit, "acquire", f"the graph would hold {count} modules; the limit is {MAX_MODULES}"
                )
            chosen.append(snapshot)
        modules = [*self.static, *(module for snapshot in chosen for module in snapshot.modules)]
        try:
            graph = build_graph(modules, revision=next(self._numbers), language=self._language)
        except DefinitionError as exc:
            culprit = _culprit(exc, chosen)
            raise MyceliumSourceError(culprit, "acquire", f"its modules cannot be installed: {exc}") from exc
        return Revision(graph, tuple(chosen))

    async def _acquire(
        self, candidate: CapabilitySource, signal: AbortSignal, tasks: TaskGroup, fresh: list[_Snapshot]
    ) -> _Snapshot:
        """Acquire one source's snapshot; with tracing on, as one span (the source id, its version)."""
        if not _tracing.active():
            return await self._acquire_snapshot(candidate, signal, tasks, fresh)
        with _tracing.run_span("acquire", source_id=candidate.id) as span:
            try:
                snapshot = await self._acquire_snapshot(candidate, signal, tasks, fresh)
            except MyceliumSourceError:
                _tracing.outcome(span, "failed", failed=True)
                raise
            _tracing.outcome(span, "ok", failed=False, version=snapshot.version)
            return snapshot

    async def _acquire_snapshot(
        self, candidate: CapabilitySource, signal: AbortSignal, tasks: TaskGroup, fresh: list[_Snapshot]
    ) -> _Snapshot:
        snapshot = _Snapshot(candidate.id, next(self._orders))
        try:
            acquired = await candidate.acquire(AcquireContext(self._session, signal, snapshot, self._language, tasks))
        except Exception as exc:
            raise MyceliumSourceError(candidate.id, "acquire", f"it raised {type(exc).__name__}") from exc
        if not isinstance(acquired, Acquired) or not callable(acquired.release):
            raise MyceliumSourceError(candidate.id, "acquire", f"acquire returned {type(acquired).__name__}")
        snapshot.release = acquired.release
        fresh.append(snapshot)  # from here on, it is ours to release
        try:
            snapshot.version = _check_label("version", acquired.version)
            snapshot.modules = tuple(acquired.modules)
        except (TypeError, ValueError) as exc:
            raise MyceliumSourceError(candidate.id, "acquire", str(exc)) from exc
        for module in snapshot.modules:
            if not isinstance(module, Module):
                raise MyceliumSourceError(candidate.id, "acquire", f"{module!r} is not a Module")
        return snapshot

    async def _release_unused(self) -> list[MyceliumSourceError]:
        """Retire revisions nobody holds, then release the snapshots they were the last to use."""
        current = self._current
        if current is not None and current.leases == 0 and (current.stale or self._closed):
            self._current = None
        for revision in [r for r in self._alive if r.leases == 0 and r is not self._current]:
            self._alive.discard(revision)
            for snapshot in revision.snapshots:
                snapshot.holders -= 1
        unused = [
            snapshot
            for snapshot in self._open
            if snapshot.holders == 0
            and (snapshot.stale or self._closed or self._current_snapshot.get(snapshot.source_id) is not snapshot)
        ]
        for snapshot in unused:
            self._open.remove(snapshot)
            if self._current_snapshot.get(snapshot.source_id) is snapshot:
                del self._current_snapshot[snapshot.source_id]
        return await _release_each(sorted(unused, key=lambda snapshot: snapshot.order, reverse=True))


async def _release_each(snapshots: Iterable[_Snapshot]) -> list[MyceliumSourceError]:
    """Release each snapshot once, in the order given, collecting every failure.

    Shielded: once snapshots are taken off the books they must all be released, and a
    cancelled caller cannot stop that half-way.
    """
    errors: list[MyceliumSourceError] = []
    with anyio.CancelScope(shield=True):
        for snapshot in snapshots:
            if snapshot.released or snapshot.release is None:
                continue
            snapshot.released = True
            try:
                await snapshot.release()
            except Exception as exc:
                error = MyceliumSourceError(snapshot.source_id, "release", f"it raised {type(exc).__name__}")
                error.__cause__ = exc
                errors.append(error)
    return errors


def _raise_all(errors: list[MyceliumSourceError]) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ExceptionGroup("several snapshots failed to release", errors)


def _check_label(kind: str, value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LENGTH:
        shown = clip(value, 43) if isinstance(value, str) else value
        raise ValueError(f"{kind} must be a non-empty string of at most {MAX_ID_LENGTH} characters, got {shown!r}")
    return value


def _culprit(error: DefinitionError, chosen: Sequence[_Snapshot]) -> str:
    """The source whose modules made the graph fail to install (the latest one, on a clash)."""
    for snapshot in reversed(chosen):
        if any(module.id == error.module_id for module in snapshot.modules):
            return snapshot.source_id
    return chosen[-1].source_id if chosen else "(static modules)"
