"""The runtime: the lifecycle around a captured graph revision.

A :class:`Runtime` installs modules (and the modules its sources acquire) into an
operation graph, and hands out leases, each capturing one revision (see
:mod:`mycelium._leases`). It runs inside ``async with Runtime(...) as runtime:``, which
gives it a task group of its own: the backing work of every sandbox run, the building of
a new revision's view, and the return of leases the garbage collector found unreleased
all run there, so no task it starts outlives it. Leaving the block closes it: no new
leases, then a wait until every held lease is released and every run has settled (saying
which, when that takes long), then the sources and the sandbox are closed.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from ._access import Access, AccessRefusal
from ._admission import BackingTasks, SandboxSlots
from ._bindings import Invoker, OperationErrorHandler
from ._context import CallContext, InvocationContext, Session
from ._direct_tools import DirectTool
from ._discovery import SemanticRanker, check_ranker
from ._exceptions import RuntimeClosed, UnknownOperation
from ._execute import ExecuteServices, RevisionView
from ._gate import AccessGate
from ._graph import InstalledOperation, OperationGraph
from ._hooks import Observer
from ._leases import Lease, LeaseTable, host_frames
from ._modules import Module
from ._options import AdmissionPolicy, ExecutionOptions, available_cores, check_int, check_optional
from ._shared_sandbox import SharedSandbox
from ._signals import AbortController, AbortSignal
from ._sources import Capabilities, CapabilitySource, Revision
from ._tool_calls import ToolResult
from ._values import JsonValue
from .failures import FailureEvidence
from .sandbox import UNENFORCED_LIMIT_NOTICES, Sandbox
from .sandbox._contract import check_backend, check_sandbox
from .suspensions import Suspension, Suspensions
from .suspensions._suspensions import required

__all__ = ["Runtime"]

logger = logging.getLogger("mycelium")


@dataclass
class _ViewBuild:
    """A new revision's view being built by one task of the runtime's, awaited by every acquire that wants it."""

    done: anyio.Event = field(default_factory=anyio.Event)
    view: RevisionView | None = None
    error: Exception | None = None


@dataclass(frozen=True)
class _Running:
    """What a runtime has only while it runs: its task group, its lease table, the parts its leases share."""

    tasks: TaskGroup
    leases: LeaseTable
    services: ExecuteServices


class Runtime:
    """Hosts modules, hands out leases and runs operations. Use it as ``async with Runtime(...) as runtime:``.

    ``sandbox`` evaluates guest programs; the runtime owns it and closes it when the
    runtime closes. A :class:`~mycelium.SharedSandbox` is not owned:
    runtimes given the same one share its worker pool and admission slots, and its owner
    closes it. ``execution`` sets host-only limits, validated here. ``session`` is the
    host's session (``None`` for session-free hosts). ``on_operation_error`` receives the
    evidence of every host failure of an operation; ``on_sandbox_failure`` receives the
    evidence of every failed execute. Both only observe: an exception inside them is
    logged and changes nothing. ``close_warning_ms``: once closing has waited this long
    (5 s) for held leases or for sandbox runs still settling, it logs a warning naming them.
    ``suspensions`` opts in to pausing runs at confirmations the host defers (see
    :mod:`mycelium.suspensions`); the sandbox must be able to resume runs (Monty can).
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
            raise ValueError(f"sandbox must be a mycelium.sandbox.Sandbox, got {type(sandbox).__name__}")
        check_sandbox(sandbox)
        check_optional("execution", execution, ExecutionOptions, "ExecutionOptions")
        check_optional("session", session, Session, "a Session")
        for name, hook in (("on_operation_error", on_operation_error), ("on_sandbox_failure", on_sandbox_failure)):
            if hook is not None and not callable(hook):
                raise ValueError(f"{name} must be callable")
        check_optional("access", access, Access, "an Access")
        check_ranker(semantic)
        check_optional("suspensions", suspensions, Suspensions, "Suspensions")
        if suspensions is not None and not sandbox.suspends:
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
        self.suspensions = suspensions
        self._on_operation_error = on_operation_error
        self._on_sandbox_failure = on_sandbox_failure
        self._owns_sandbox = not isinstance(sandbox, SharedSandbox)
        if isinstance(sandbox, SharedSandbox):
            self._policy, self._slots = sandbox.policy, sandbox.slots()
        else:
            # The core count is observed once per runtime.
            self._policy = AdmissionPolicy.resolve(self.options, available_cores())
            self._slots = SandboxSlots(self._policy.capacity)
        # Always gated: without an Access, a confirm=True operation is still refused, never run unasked.
        self._invoker = self._gated(access or Access())
        self._semantic = semantic
        self._capabilities = Capabilities(
            modules=list(modules), sources=sources, session=session, language=sandbox.language
        )
        # The current revision's view, shared by its leases (each lease holds its own view, so
        # an older one lives exactly as long as the leases that use it).
        self._view: RevisionView | None = None
        self._building: dict[OperationGraph, _ViewBuild] = {}
        self._running: _Running | None = None
        self._entered = False
        self._exit = AsyncExitStack()
        self._closed = False
        self._announced_limits: set[str] = set()
        self._announce_unenforced_limits(sandbox)

    @property
    def admission(self) -> AdmissionPolicy:
        """The resolved admission policy: sandbox capacity and the admission wait."""
        return self._policy

    @property
    def modules(self) -> tuple[Module, ...]:
        """The modules given as ``modules=``, in their order."""
        return self._capabilities.static

    @property
    def sources(self) -> tuple[CapabilitySource, ...]:
        """The capability sources given as ``sources=``, by id."""
        return self._capabilities.sources

    @property
    def semantic(self) -> SemanticRanker | None:
        """The ranker by meaning given as ``semantic=``, if any."""
        return self._semantic

    @property
    def closed(self) -> bool:
        """Whether closing has begun: no new leases are handed out."""
        return self._closed

    @property
    def leases_held(self) -> int:
        """How many leases are held now (acquired and not yet released): what closing waits for."""
        return self._running.leases.held if self._running is not None else 0

    def _announce_unenforced_limits(self, sandbox: Sandbox) -> None:
        # A fact about where the host runs the sandbox, said once per runtime; it enforces nothing.
        declared = sandbox.unenforced_limits
        if isinstance(declared, str) or not all(limit in UNENFORCED_LIMIT_NOTICES for limit in declared):
            known = sorted(UNENFORCED_LIMIT_NOTICES)
            raise ValueError(f"sandbox.unenforced_limits must be a collection of {known}, got {declared!r}")
        for limit in sorted(set(declared)):
            if limit not in self._announced_limits:
                self._announced_limits.add(limit)
                logger.warning(UNENFORCED_LIMIT_NOTICES[limit])

    def _gated(self, access: Access) -> Invoker:
        return Invoker(AccessGate(access), self._on_operation_error)

    async def __aenter__(self) -> Self:
        if self._entered:
            raise RuntimeError("a Runtime runs once: enter it with `async with` a single time")
        check_backend(self.sandbox)
        self._entered = True
        tasks = await self._exit.enter_async_context(anyio.create_task_group())
        backing = BackingTasks(tasks)
        self._exit.callback(backing.close)  # before the group ends: __aexit__ waited for every run
        services = ExecuteServices(
            sandbox=self.sandbox,
            invoker=self._invoker,
            options=self.options,
            policy=self._policy,
            slots=self._slots,
            session_id=self.session.id if self.session else None,
            requester=self.session.requester if self.session else None,
            on_sandbox_failure=self._on_sandbox_failure,
            suspensions=self.suspensions,
            tasks=backing,
        )
        self._running = _Running(tasks, LeaseTable(self._capabilities, tasks), services)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the runtime (see :meth:`close`), even when leaving because the scope was cancelled.

        A clean exit waits for every held lease. A block that raised waits for them only
        ``close_warning_ms``: a lease it left unreleased (its frame holds it) would keep it
        waiting forever; after that the runtime closes anyway, saying which leases it
        abandons, and they raise :class:`RuntimeClosed` from then on. The block's exception
        goes on as it is: a failure to close afterwards is logged, not raised over it.
        """
        try:
            await self._wait_for_holders(abandon=exc is not None)
        finally:
            # Shielded: a runtime left because its scope was cancelled still closes what it owns.
            # Its backing work is cancelled with that scope; the sandbox closes once it has settled.
            with anyio.CancelScope(shield=True):
                await self._wait_or_warn(self._slots.wait_settled, self._settling_runs)
                if self._running is not None:
                    self._running.leases.stop()
                try:
                    await self._close_owned(held_too=True)
                except Exception:
                    if exc is None:
                        raise
                    logger.exception("closing the runtime, left on an exception, failed")
            try:
                # What the task group still runs (a lost lease's give-back, a view build) ends now.
                await self._exit.aclose()
            finally:
                self._running = None

    def _run_state(self) -> _Running:
        if self._closed:
            raise RuntimeClosed("the runtime is closed; it hands out no more leases")
        if self._running is None:
            raise RuntimeError(
                "the runtime is not running: use it inside `async with Runtime(...) as runtime:`, "
                "which owns the work its runs leave behind"
            )
        return self._running

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
        running = self._run_state()
        check_optional("session", session, Session, "a Session")
        check_optional("access", access, Access, "an Access")
        services = running.services
        if session is not None or access is not None:
            services = dataclasses.replace(
                services,
                invoker=services.invoker if access is None else self._gated(access),
                session_id=services.session_id if session is None else session.id,
                requester=services.requester if session is None else session.requester,
            )
        acquired_at = host_frames()  # before any await: the caller's frames are still on the stack
        leases = running.leases
        leases.reserve()
        try:
            revision = await self._capabilities.capture(running.tasks)
        except BaseException:
            leases.unreserve()
            raise
        try:
            view = self._view
            if view is None or view.graph is not revision.graph:
                view = await self._view_of(revision, running.tasks)
        except BaseException:
            # Nothing holds the revision: give it and the hold back, or closing would wait forever.
            leases.unreserve()
            with anyio.CancelScope(shield=True):
                await self._capabilities.release(revision)
            raise
        return Lease._handed_out(leases, leases.record(revision, acquired_at), view, services, self._tools)

    async def _view_of(self, revision: Revision, tasks: TaskGroup) -> RevisionView:
        """The view of a new revision, built once by a task of the runtime's, whoever asks first.

        Indexing a large graph (and embedding it) takes a while: it runs in a worker thread,
        never on the event loop. An acquire cancelled while it waits leaves the build going
        (the next acquire gets its result); every acquire waiting when a build fails gets
        that failure, and a later acquire builds again.
        """
        build = self._building.get(revision.graph)
        if build is None:
            build = self._building[revision.graph] = _ViewBuild()
            tasks.start_soon(self._build, revision, build)
        await build.done.wait()
        if build.error is not None:
            raise build.error
        assert build.view is not None
        return build.view

    async def _build(self, revision: Revision, build: _ViewBuild) -> None:
        sources = {snapshot.source_id: snapshot.version for snapshot in revision.snapshots}
        try:
            view = await anyio.to_thread.run_sync(
                functools.partial(RevisionView.build, revision.graph, self.sandbox, sources, self._semantic)
            )
        except Exception as exc:  # every acquire waiting for it gets it; the task itself ends quietly
            build.error = exc
            logger.debug("building a revision's view failed", exc_info=exc)
        else:
            if self._view is None or self._view.graph.revision <= revision.graph.revision:
                self._view = view  # an older revision finishing late does not displace a newer one
            build.view = view
        finally:
            if self._building.get(revision.graph) is build:
                del self._building[revision.graph]
            build.done.set()

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
        :meth:`~mycelium.ExecuteTool.resume` for what is guaranteed.
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
        runtime's by default). Raises :class:`~mycelium.suspensions.StoreUnavailable` when the
        store fails or does not answer within ``Suspensions.store_timeout_ms``, as the methods
        below do.
        """
        suspensions = required(self.suspensions)
        if type(approved) is not bool:
            raise ValueError(f"approved must be True or False, got {approved!r}")
        return await suspensions.decide(suspension_id, approved, self._session_id(session))

    async def discard(self, suspension_id: str, *, session: Session | None = None) -> bool:
        """Drop a suspension of ``session`` (the runtime's by default) without resuming it.

        For a host whose person declined and whose framework ends the tool call there (so the
        program is not told of the refusal): nothing more of the run runs, the record stops counting
        against ``max_per_session``, and a later resume or replayed decision is refused as
        ``already-resumed`` (until the suspension would have expired and is purged). Returns
        ``False`` when there is no such unexpired suspension, or it was resumed or discarded first
        (claiming is atomic, as for a resume).
        """
        return await required(self.suspensions).discard(suspension_id, self._session_id(session))

    async def suspension(self, suspension_id: str, *, session: Session | None = None) -> Suspension | None:
        """The unexpired suspension ``suspension_id`` of ``session`` (the runtime's by default), for a
        host's approval screen; ``None`` when there is none, or its record fails its seal."""
        return await required(self.suspensions).pending(suspension_id, self._session_id(session))

    async def purge_expired_suspensions(self) -> int:
        """Remove expired suspensions from the store; how many were removed."""
        return await required(self.suspensions).purge_expired()

    def _session_id(self, session: Session | None) -> str | None:
        asking = session or self.session
        return asking.id if asking is not None else None

    async def close(self) -> None:
        """Stop handing out leases, wait until every held lease is released, then clean up.

        Clean-up waits for sandbox work that is still settling (a run whose stop was not
        acknowledged keeps its slot until then), then closes the sources and the sandbox.
        Leaving ``async with`` calls it; each step is idempotent, so calling it again (after
        a close that was cancelled half-way, say) finishes what is left. Awaiting ``close()``
        in a task that still holds a lease never returns: release the lease first
        (``async with`` does this for you). When two or more sources fail to release, the
        failures come together in an ``ExceptionGroup`` of :class:`MyceliumSourceError`.
        """
        await self._wait_for_holders(abandon=False)
        await self._close_owned()

    async def _wait_for_holders(self, *, abandon: bool) -> None:
        """Refuse new leases, then wait for the held ones (at most the warning interval if ``abandon``)."""
        self._closed = True
        running = self._running
        if running is None:
            return
        try:
            if abandon:
                with anyio.move_on_after(self._close_warning_s):
                    await running.leases.wait_idle()
                if running.leases.held:
                    logger.warning(
                        "leaving the runtime on an exception, it abandons %s", running.leases.describe_held()
                    )
            else:
                await self._wait_or_warn(running.leases.wait_idle, running.leases.describe_held)
        finally:
            # However the wait ended, nobody may start a run now but a lease left behind: a run
            # it queued never starts.
            running.services.tasks.refuse_new()
        for build in list(self._building.values()):  # builds whose acquires all gave up
            await build.done.wait()
        await self._wait_or_warn(self._slots.wait_settled, self._settling_runs)

    async def _close_owned(self, *, held_too: bool = False) -> None:
        # Idempotent, like the steps it takes: the sources' snapshots (with ``held_too``, those
        # of abandoned leases as well), then the sandbox.
        try:
            await self._capabilities.close(held_too=held_too)
        finally:
            if self._owns_sandbox:
                await self.sandbox.aclose()

    async def _wait_or_warn(self, wait: Callable[[], Awaitable[None]], waiting_for: Callable[[], str]) -> None:
        # A forgotten lease or a thread that never returns would make close() hang without a word.
        with anyio.move_on_after(self._close_warning_s):
            await wait()
            return
        logger.warning("runtime.close() has waited %g s for %s", self._close_warning_s, waiting_for())
        await wait()

    def _settling_runs(self) -> str:
        return (
            f"{self._slots.unsettled} sandbox run(s) still settling after a stop they did not "
            "acknowledge (a sync operation's thread runs to its end: poll ctx.signal.aborted to stop early)"
        )


def _find(graph: OperationGraph, module_id: str, path: str) -> InstalledOperation:
    module = graph.module(module_id)
    if module is None:
        raise UnknownOperation(f"no module has id {module_id!r}")
    target = module.operations.get(path)
    if target is None:
        raise UnknownOperation(f"module {module_id!r} has no operation {path!r}")
    return target
