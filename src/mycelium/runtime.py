"""The runtime and its leases: the lifecycle around a captured graph revision.

A :class:`Runtime` installs modules into an operation graph. A :class:`Lease` captures
one revision of that graph; its catalog, execute tool and bindings describe that
revision for the lease's whole life. ``close()`` stops new leases and waits until every
held lease is released; when that takes long, it says which leases it waits for and
where they were acquired. A lease garbage-collected unreleased is warned about and its
hold given back.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import sys
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Self

import anyio

from .access import Access, AccessGate, AccessRefusal
from .admission import (
    AdmissionPolicy,
    SandboxSlots,
    SharedSandbox,
    available_cores,
    can_suspend,
    normalize_sandbox_admission_policy,
)
from .bindings import Invoker, OperationErrorHandler
from .context import CallContext, InvocationContext, Session
from .discovery import Catalog, SemanticRanker, check_ranker
from .errors import LeaseReleased, RuntimeClosed, UnknownOperation
from .execute import ExecuteServices, ExecuteTool, RevisionView, ToolResult
from .failures import FailureEvidence
from .graph import InstalledOperation, OperationGraph
from .hooks import Observer
from .modules import Module
from .options import ExecutionOptions, check_int
from .sandbox import UNENFORCED_LIMIT_NOTICES, Sandbox, close_sandbox
from .signals import AbortController, AbortSignal
from .sources import Capabilities, CapabilitySource, Revision
from .suspend import Suspension, Suspensions, now
from .tools import DirectTool, GatedTool
from .values import JsonValue

__all__ = ["Lease", "Runtime"]

logger = logging.getLogger("mycelium")

_ACQUIRED_AT_FRAMES = 3
_NAMED_AT_MOST = 10
# Frames in these files are the runtime's own (``lease()``'s context manager included):
# where a lease was acquired means the host's frames.
_OWN_FILES = (os.path.dirname(os.path.abspath(__file__)) + os.sep, contextlib.__file__)


class _Holds:
    """Counts holders of something and lets one wait until there are none."""

    def __init__(self) -> None:
        self.count = 0
        self._idle: anyio.Event | None = None  # made only when somebody waits

    @contextmanager
    def held(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def acquire(self) -> None:
        self.count += 1

    def release(self) -> None:
        self.count -= 1
        if self.count == 0 and self._idle is not None:
            self._idle.set()
            self._idle = None

    async def wait_idle(self) -> None:
        while self.count:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()


class Runtime:
    """Hosts modules, hands out leases and runs operations.

    ``sandbox`` evaluates guest programs; the runtime owns it and closes it (if it has
    ``aclose()``) when the runtime closes. A :class:`~mycelium.admission.SharedSandbox` is
    not owned: runtimes given the same one share its worker pool and admission slots, and
    its owner closes it. ``execution`` sets host-only limits, validated
    here. ``session`` is the host's session (``None`` for session-free hosts).
    ``on_operation_error`` receives the evidence of every host failure of an operation;
    ``on_sandbox_failure`` receives the evidence of every failed execute. Both only
    observe: an exception inside them is logged and changes nothing.
    ``close_warning_ms``: once ``close()`` has waited this long (5 s) for held leases or
    for sandbox runs still settling, it logs a warning naming them.
    ``suspensions`` opts in to pausing runs at confirmations the host defers (see
    :mod:`mycelium.suspend`); the sandbox must be able to resume runs (Monty can).
    ``semantic`` adds a ranking by meaning to search (see :mod:`mycelium.semantic`).
    """

    def __init__(
        self,
        *,
        modules: Sequence[Module] = (),
        sources: Sequence[CapabilitySource] = (),
        sandbox: Sandbox,
        execution: ExecutionOptions | None = None,
        session: Session | None = None,
        access: Access | None = None,
        tools: Sequence[DirectTool] = (),
        on_operation_error: OperationErrorHandler | None = None,
        on_sandbox_failure: Observer[FailureEvidence] | None = None,
        close_warning_ms: int = 5_000,
        suspensions: Suspensions | None = None,
        semantic: SemanticRanker | None = None,
    ) -> None:
        if not isinstance(sandbox, Sandbox):
            raise ValueError(f"sandbox must implement the Sandbox protocol, got {type(sandbox).__name__}")
        if execution is not None and not isinstance(execution, ExecutionOptions):
            raise ValueError(f"execution must be ExecutionOptions or None, got {type(execution).__name__}")
        if session is not None and not isinstance(session, Session):
            raise ValueError(f"session must be a Session or None, got {type(session).__name__}")
        for name, hook in (("on_operation_error", on_operation_error), ("on_sandbox_failure", on_sandbox_failure)):
            if hook is not None and not callable(hook):
                raise ValueError(f"{name} must be callable")
        if access is not None and not isinstance(access, Access):
            raise ValueError(f"access must be an Access or None, got {type(access).__name__}")
        check_ranker(semantic)
        if suspensions is not None and not isinstance(suspensions, Suspensions):
            raise ValueError(f"suspensions must be Suspensions or None, got {type(suspensions).__name__}")
        if suspensions is not None and not can_suspend(sandbox):
            raise ValueError(f"suspensions need a sandbox that can resume runs; {sandbox.adapter!r} cannot")
        if isinstance(modules, Module) or not isinstance(modules, Sequence):
            raise ValueError("modules must be a sequence of Module")
        if not isinstance(tools, Sequence) or not all(isinstance(tool, DirectTool) for tool in tools):
            raise ValueError("tools must be a sequence of direct_tool(...) definitions")
        names = [tool.definition.name for tool in tools]
        if len(set(names)) != len(names):
            raise ValueError(f"tools: a name is used twice in {names!r}")
        self._close_warning_s = check_int("close_warning_ms", close_warning_ms) / 1000
        self._tools = tuple(tools)
        self.sandbox = sandbox
        self.session = session
        self.options = execution or ExecutionOptions()
        self._on_operation_error = on_operation_error
        self._owns_sandbox = not isinstance(sandbox, SharedSandbox)
        if isinstance(sandbox, SharedSandbox):
            policy, slots = sandbox.policy, sandbox.slots()
        else:
            # The core count is observed once per runtime.
            policy = normalize_sandbox_admission_policy(self.options, available_cores())
            slots = SandboxSlots(policy.capacity)
        self._services = ExecuteServices(
            sandbox=sandbox,
            # Always gated: without an Access, a confirm=True operation is still refused, never run unasked.
            invoker=self._gated(access or Access()),
            options=self.options,
            policy=policy,
            slots=slots,
            session_id=session.id if session else None,
            on_sandbox_failure=on_sandbox_failure,
            suspensions=suspensions,
        )
        self.suspensions = suspensions
        self._semantic = semantic
        self._invoker = self._services.invoker
        self._capabilities = Capabilities(modules=list(modules), sources=sources, session=session)
        # The current revision's view, shared by its leases (each lease holds its own view, so
        # an older one lives exactly as long as the leases that use it).
        self._view: RevisionView | None = None
        # A new revision's view being built: one task per graph, owned here, awaited by every
        # acquire that wants it and by close().
        self._building: dict[OperationGraph, asyncio.Task[RevisionView]] = {}
        self._leases = _Holds()
        self._unreleased: set[_LeaseRecord] = set()
        # Strong references: the event loop keeps only weak ones to tasks.
        self._giving_back: set[asyncio.Task[None]] = set()
        self._closed = False
        self._announced_limits: set[str] = set()
        self._announce_unenforced_limits(sandbox)

    @property
    def admission(self) -> AdmissionPolicy:
        """The resolved admission policy: sandbox capacity and the admission wait."""
        return self._services.policy

    def _announce_unenforced_limits(self, sandbox: Sandbox) -> None:
        # A fact about where the host runs the sandbox, said once per runtime; it enforces nothing.
        declared = getattr(sandbox, "unenforced_limits", ())
        if isinstance(declared, str) or not all(limit in UNENFORCED_LIMIT_NOTICES for limit in declared):
            known = sorted(UNENFORCED_LIMIT_NOTICES)
            raise ValueError(f"sandbox.unenforced_limits must be a collection of {known}, got {declared!r}")
        for limit in sorted(set(declared)):
            if limit not in self._announced_limits:
                self._announced_limits.add(limit)
                logger.warning(UNENFORCED_LIMIT_NOTICES[limit])

    @property
    def closed(self) -> bool:
        """Whether ``close()`` has begun: no new leases are handed out."""
        return self._closed

    @property
    def leases_held(self) -> int:
        """How many leases are held now (acquired and not yet released): what ``close()`` waits for."""
        return self._leases.count

    def _gated(self, access: Access) -> Invoker:
        return Invoker(AccessGate(access), self._on_operation_error)

    async def acquire(self, *, session: Session | None = None, access: Access | None = None) -> Lease:
        """Capture the current graph revision in a new lease. Release it when the run settles.

        ``session`` and ``access``, when given, replace the runtime's own for every call made
        through this lease (its execute tool and its direct tools): a server that runs many
        connections on one runtime gives each lease the connection's session and the access
        read for this request. Nothing of them is kept after the lease is released.

        With sources, this acquires every source whose snapshot is missing or stale (in id
        order) and builds a new revision; if that fails, what was acquired is released
        and :class:`MyceliumSourceError` is raised. Cancelling it aborts the sources' signal.
        """
        if self._closed:
            raise RuntimeClosed("the runtime is closed; it hands out no more leases")
        if session is not None and not isinstance(session, Session):
            raise ValueError(f"session must be a Session or None, got {type(session).__name__}")
        if access is not None and not isinstance(access, Access):
            raise ValueError(f"access must be an Access or None, got {type(access).__name__}")
        services = self._services
        if session is not None or access is not None:
            services = dataclasses.replace(
                services,
                invoker=services.invoker if access is None else self._gated(access),
                session_id=services.session_id if session is None else session.id,
            )
        acquired_at = _host_frames()  # before any await: the caller's frames are still on the stack
        self._leases.acquire()
        try:
            revision = await self._capabilities.capture()
        except BaseException:
            self._leases.release()
            raise
        try:
            view = self._view
            if view is None or view.graph is not revision.graph:
                view = await self._view_of(revision)
            record = _LeaseRecord(revision, acquired_at, asyncio.get_running_loop())
            lease = Lease(self, revision, view, record, services)
        except BaseException:
            # Nothing holds the revision: give it and the hold back, or close() would wait forever.
            self._leases.release()
            with anyio.CancelScope(shield=True):
                await self._capabilities.release(revision)
            raise
        self._unreleased.add(record)
        return lease

    async def _view_of(self, revision: Revision) -> RevisionView:
        """The view of a new revision, built once by a task of the runtime's, whoever asks first.

        Indexing a large graph (and embedding it) takes a while: it runs in a worker thread,
        never on the event loop. An acquire cancelled while it waits leaves the build going
        (the next acquire gets its result); every acquire waiting when a build fails gets
        that failure, and a later acquire builds again.
        """
        graph = revision.graph
        task = self._building.get(graph)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._build(revision))
            self._building[graph] = task
            task.add_done_callback(functools.partial(self._built, graph))
        return await asyncio.shield(task)

    async def _build(self, revision: Revision) -> RevisionView:
        notes = getattr(self.sandbox, "guest_notes", None)
        sources = {snapshot.source_id: snapshot.version for snapshot in revision.snapshots}
        view = await anyio.to_thread.run_sync(
            functools.partial(RevisionView.build, revision.graph, notes, sources, self._semantic)
        )
        if self._view is None or self._view.graph.revision <= revision.graph.revision:
            self._view = view  # an older revision finishing late does not displace a newer one
        return view

    def _built(self, graph: OperationGraph, task: asyncio.Task[RevisionView]) -> None:
        if self._building.get(graph) is task:
            del self._building[graph]
        # Retrieved here, so a failure every waiter gave up on is not reported as never retrieved.
        if not task.cancelled() and task.exception() is not None:
            logger.debug("building a revision's view failed", exc_info=task.exception())

    @asynccontextmanager
    async def lease(self, *, session: Session | None = None, access: Access | None = None) -> AsyncIterator[Lease]:
        """``async with runtime.lease() as lease:`` acquires a lease and always releases it.

        ``session`` and ``access`` are as for :meth:`acquire`.
        """
        lease = await self.acquire(session=session, access=access)
        try:
            yield lease
        finally:
            await lease.release()

    async def invoke(
        self, module_id: str, path: str, input: object = None, *, context: CallContext | None = None
    ) -> JsonValue | AccessRefusal:
        """Run one operation directly, outside any execute, through the same checks as a guest call.

        ``path`` is relative to the module (``windows.open``). ``input`` defaults to ``{}``.
        ``context`` supplies the caller's identity; ordinal and tool call id may stay ``None``.
        Returns the encoded output, or the :class:`AccessRefusal` when access refused the call.
        Raises :class:`InvalidInput`, :class:`OperationFailed` or :class:`UnknownOperation`.
        """
        async with self.lease() as lease:
            return await self._invoke(lease.graph, module_id, path, input, context or CallContext())

    async def _invoke(
        self, graph: OperationGraph, module_id: str, path: str, input: object, context: CallContext
    ) -> JsonValue | AccessRefusal:
        target = _find(graph, module_id, path)
        invocation = InvocationContext(
            execution_id=context.execution_id or f"exec-{uuid.uuid4().hex}",
            tool_call_id=context.tool_call_id,
            session_id=self.session.id if self.session else None,
            operation_ordinal=context.operation_ordinal,
            module_id=target.module.id,
            operation=target.relative,
            signal=context.signal or AbortController().signal,
        )
        return await self._invoker.invoke(target, {} if input is None else input, invocation)

    async def resume(
        self,
        suspension_id: str,
        *,
        approved: bool | None = None,
        lease: Lease | None = None,
        signal: AbortSignal | None = None,
    ) -> ToolResult:
        """Continue a paused run with a person's decision on its pending call.

        ``approved``: the decision (``None`` uses the one recorded with :meth:`decide`).
        ``lease``: the lease to continue in, carrying the session and access to read
        afresh. By default one is acquired for the run and released after it, with the
        runtime's own session and access: a host that gives each request its own access
        resumes with a lease made the same way. See
        :meth:`~mycelium.execute.ExecuteTool.resume` for what is guaranteed.
        """
        if lease is not None:
            return await lease.execute_tool.resume(suspension_id, approved=approved, signal=signal)
        async with self.lease() as held:
            return await held.execute_tool.resume(suspension_id, approved=approved, signal=signal)

    async def decide(self, suspension_id: str, *, approved: bool, session: Session | None = None) -> bool:
        """Record a person's decision on a suspension, to be used when it resumes.

        For hosts whose agent framework replays the tool call after approval: executing the
        same tool call id with the same code then resumes with this decision. Returns
        ``False`` when there is no such undecided, unexpired suspension in ``session`` (the
        runtime's by default). Raises :class:`~mycelium.suspend.StoreUnavailable` when the store
        fails or does not answer within ``Suspensions.store_timeout_ms``, as the methods below do.
        """
        suspensions = self._require_suspensions()
        if type(approved) is not bool:
            raise ValueError(f"approved must be True or False, got {approved!r}")
        if await self.suspension(suspension_id, session=session) is None:
            return False
        sealed = suspensions.seal_decision(suspension_id, approved)
        return await suspensions.stored(lambda: suspensions.store.decide(suspension_id, sealed, now=now()))

    async def discard(self, suspension_id: str, *, session: Session | None = None) -> bool:
        """Drop a suspension of ``session`` (the runtime's by default) without resuming it.

        For a host whose person declined and whose framework ends the tool call there (so the
        program is not told of the refusal): nothing more of the run runs, the record stops
        counting against ``max_per_session``, and a later resume or replayed decision is
        refused as ``not-found``. Returns ``False`` when there is no such unexpired suspension,
        or it was resumed or discarded first (claiming is atomic, as for a resume).
        """
        suspensions = self._require_suspensions()
        if await self.suspension(suspension_id, session=session) is None:
            return False
        return await suspensions.stored(lambda: suspensions.store.claim(suspension_id, now=now())) is not None

    async def suspension(self, suspension_id: str, *, session: Session | None = None) -> Suspension | None:
        """The unexpired suspension ``suspension_id`` of ``session`` (the runtime's by default), for a
        host's approval screen; ``None`` when there is none, or its record fails its seal."""
        suspensions = self._require_suspensions()
        if not isinstance(suspension_id, str):
            return None
        stored = await suspensions.stored(lambda: suspensions.store.get(suspension_id))
        record = suspensions.unseal(stored) if stored is not None else None
        asking = session or self.session
        owner = asking.id if asking is not None else None
        if record is None or record.session_id != owner or record.expires_at <= now():
            return None
        return record.suspension()

    async def purge_expired_suspensions(self) -> int:
        """Remove expired suspensions from the store; how many were removed."""
        suspensions = self._require_suspensions()
        return await suspensions.stored(lambda: suspensions.store.purge_expired(now=now()))

    def _require_suspensions(self) -> Suspensions:
        if self.suspensions is None:
            raise ValueError("this runtime keeps no suspensions: give it Runtime(suspensions=Suspensions(...))")
        return self.suspensions

    async def close(self) -> None:
        """Stop handing out leases, wait until every held lease is released, then clean up.

        Clean-up waits for sandbox work that is still settling (a run whose stop was not
        acknowledged keeps its slot until then), then closes the sandbox. Awaiting
        ``close()`` in a task that still holds a lease never returns: release the lease
        first (``async with`` does this for you).
        """
        self._closed = True
        await self._wait_or_warn(self._leases.wait_idle, self._held_leases)
        if self._building:  # builds whose acquires all gave up: they end on their own
            await asyncio.wait(list(self._building.values()))
        await self._wait_or_warn(self._services.slots.wait_settled, self._settling_runs)
        try:
            await self._capabilities.close()
        finally:
            await self._close_sandbox()

    async def _wait_or_warn(self, wait: Callable[[], Awaitable[None]], waiting_for: Callable[[], str]) -> None:
        # A forgotten lease or a thread that never returns would make close() hang without a word.
        with anyio.move_on_after(self._close_warning_s):
            await wait()
            return
        logger.warning("runtime.close() has waited %g s for %s", self._close_warning_s, waiting_for())
        await wait()

    def _held_leases(self) -> str:
        records = sorted(self._unreleased, key=lambda record: (record.revision.number, record.acquired_at))
        named = "; ".join(record.describe() for record in records[:_NAMED_AT_MOST])
        more = f"; and {len(records) - _NAMED_AT_MOST} more" if len(records) > _NAMED_AT_MOST else ""
        acquiring = self._leases.count - len(records)
        still = f"; and {acquiring} acquire() call(s) in progress" if acquiring > 0 else ""
        return (
            f"{len(records)} unreleased lease(s): {named}{more}{still}. "
            "Release every lease (`async with runtime.lease()` does it for you)"
        )

    def _settling_runs(self) -> str:
        return (
            f"{self._services.slots.unsettled} sandbox run(s) still settling after a stop they did not "
            "acknowledge (a sync operation's thread runs to its end: poll ctx.signal.aborted to stop early)"
        )

    def _lost(self, record: _LeaseRecord) -> None:
        """A lease was garbage-collected unreleased: give its hold back, and say so.

        Called from ``Lease.__del__``, in whatever thread the garbage collector runs: the
        hold is given back on the lease's own event loop.
        """
        try:
            record.loop.call_soon_threadsafe(self._give_back, record)
        except RuntimeError:
            return  # its event loop is closed: nothing can wait for this runtime any more
        text = f"{record.describe()} was garbage-collected without being released; release every lease"
        logger.warning("%s", text)
        warnings.warn(text, ResourceWarning, stacklevel=2)

    def _give_back(self, record: _LeaseRecord) -> None:
        task = asyncio.get_running_loop().create_task(self._release_lost(record))
        self._giving_back.add(task)
        task.add_done_callback(self._giving_back.discard)

    async def _release_lost(self, record: _LeaseRecord) -> None:
        try:
            await self._capabilities.release(record.revision)
        except Exception:
            # Nobody awaits a lost lease's release: its failure can only be logged.
            logger.exception("releasing the snapshots of a garbage-collected lease failed")
        finally:
            self._unreleased.discard(record)
            self._leases.release()

    async def _close_sandbox(self) -> None:
        if self._owns_sandbox:
            await close_sandbox(self.sandbox)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


@dataclass(eq=False)
class _LeaseRecord:
    """What the runtime keeps of a held lease: its revision, where it was acquired, its loop."""

    revision: Revision
    acquired_at: tuple[tuple[str, int, str], ...]
    """The host's innermost frames that acquired it: (file, line, function)."""
    loop: asyncio.AbstractEventLoop

    def describe(self) -> str:
        where = " <- ".join(f"{file}:{line} in {function}" for file, line, function in self.acquired_at)
        return f"the lease of revision {self.revision.number} acquired at {where or 'an unknown place'}"


def _host_frames() -> tuple[tuple[str, int, str], ...]:
    """The caller's innermost frames outside the runtime. Cheap: it reads no source lines."""
    found: list[tuple[str, int, str]] = []
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and len(found) < _ACQUIRED_AT_FRAMES:
        code = frame.f_code
        if not code.co_filename.startswith(_OWN_FILES):
            found.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return tuple(found)


def _find(graph: OperationGraph, module_id: str, path: str) -> InstalledOperation:
    module = graph.module(module_id)
    if module is None:
        raise UnknownOperation(f"no module has id {module_id!r}")
    target = module.operations.get(path)
    if target is None:
        raise UnknownOperation(f"module {module_id!r} has no operation {path!r}")
    return target


class Lease:
    """One captured graph revision, held for a run. Get it from :meth:`Runtime.acquire`.

    Its ``revision``, ``catalog`` and ``execute_tool`` describe the same graph for the
    lease's whole life. After :meth:`release`, using it raises :class:`LeaseReleased`.
    """

    def __init__(
        self,
        runtime: Runtime,
        revision: Revision,
        view: RevisionView,
        record: _LeaseRecord,
        services: ExecuteServices,
    ) -> None:
        # Held only once built: a constructor that raised holds nothing for __del__ to give back.
        self._released = True
        self._record = record
        self._runtime = runtime
        self._revision = revision
        self.graph = revision.graph
        """The captured operation graph (host-side; models see the catalog)."""
        self.revision = revision.number
        self._catalog = view.catalog
        self._runs = _Holds()
        self._execute_tool = ExecuteTool(view=view, services=services, hold=self._hold)
        self._tools = tuple(
            GatedTool(
                tool,
                invoker=services.invoker,
                session_id=services.session_id,
                max_result_bytes=services.options.max_result_bytes,
                hold=self._hold,
            )
            for tool in runtime._tools
        )
        self._released = False

    @property
    def released(self) -> bool:
        """Whether :meth:`release` has been called."""
        return self._released

    @property
    def catalog(self) -> Catalog:
        """The discovery catalog of this lease's revision."""
        self._check()
        return self._catalog

    @property
    def tools(self) -> tuple[GatedTool, ...]:
        """The host's direct tools, behind the same access checks as every operation."""
        self._check()
        return self._tools

    @property
    def execute_tool(self) -> ExecuteTool:
        """The one ``execute`` tool, bound to this lease's revision."""
        self._check()
        return self._execute_tool

    async def release(self) -> None:
        """Release the lease. Idempotent; waits for executes already running on it to settle.

        Releasing the last lease of a stale revision releases the snapshots only it used;
        a failure there is raised here (:class:`MyceliumSourceError`, phase ``"release"``).
        """
        if self._released:
            return
        self._released = True
        try:
            await self._runs.wait_idle()
            await self._runtime._capabilities.release(self._revision)
        finally:
            self._runtime._unreleased.discard(self._record)
            self._runtime._leases.release()

    def __del__(self) -> None:
        if not self._released:
            self._runtime._lost(self._record)

    @contextmanager
    def _hold(self) -> Iterator[None]:
        self._check()
        with self._runs.held():
            yield

    def _check(self) -> None:
        if self._released:
            raise LeaseReleased(f"lease of revision {self.revision} was released; acquire a new one")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.release()

    def __repr__(self) -> str:
        return f"<Lease revision={self.revision}{' released' if self._released else ''}>"
