"""The catalog for installed apps: what an MCP server serves when the host installs modules and sources.

:func:`create_mcp_catalog` is the provider (see :mod:`._provider` for the protocol) for hosts
that install apps as ordinary modules and capability sources: ``load(principal)`` says what
that principal may use, read afresh for every execution and after every approval.
"""

from __future__ import annotations

import inspect
import logging
from collections import OrderedDict
from collections.abc import Collection, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self, TypeVar

import anyio
from anyio.abc import TaskGroup, TaskStatus

from .._access import Access
from .._bindings import OperationErrorHandler
from .._context import Session
from .._discovery import SemanticRanker, check_ranker
from .._hooks import Observer, notify
from .._modules import Module
from .._options import ExecutionOptions, check_int, check_optional
from .._runtime import Runtime
from .._shared_sandbox import SharedSandbox
from .._sources import CapabilitySource
from .._tool_calls import ToolCall, ToolDefinition, ToolResult
from ..failures import FailureEvidence
from ..sandbox import Sandbox
from ..sandbox._contract import check_backend
from ..suspensions import MemorySuspensions, Suspensions
from ._connections import ConnectionStore, MemoryConnections
from ._principals import Principal, principal_key, principal_label, principal_session
from ._provider import Load, McpAuthority, McpCatalogProvider, McpExecutionContext

__all__ = ["DEFAULT_MAX_CONNECTIONS", "McpCatalog", "create_mcp_catalog"]

logger = logging.getLogger("mycelium.mcp")

DEFAULT_MAX_CONNECTIONS = 256
"""Connections held in memory by default. An idle one costs about 40 KiB, and a connection whose
run waits for a person's approval stays held (its client waits on it), so the table must hold many
more of them than a server has sandbox slots."""
_MAX_CACHED_PRINCIPALS = 256
_PURGE_EVERY_S = 300.0
_E = TypeVar("_E")


@dataclass(eq=False)
class _Loaded:
    """A principal's runtime, valid while ``load`` returns the same source objects.

    It runs in a task of the catalog's own (``async with`` must enter and leave it in one
    task, and requests come in many); setting ``retire`` ends that task, which closes the
    runtime once the requests still holding its leases are done.
    """

    runtime: Runtime
    sources: tuple[CapabilitySource | Module, ...]
    retire: anyio.Event = field(default_factory=anyio.Event)
    closed: anyio.Event = field(default_factory=anyio.Event)

    def serves(self, sources: Sequence[CapabilitySource | Module]) -> bool:
        return len(sources) == len(self.sources) and all(a is b for a, b in zip(sources, self.sources, strict=True))


class McpCatalog(McpCatalogProvider):
    """The catalog for installed apps. Build it with :func:`create_mcp_catalog`; run it with ``async with``.

    One runtime per principal (kept while ``load`` returns the same sources), all of them
    on one shared sandbox and admission tracker, each running in a task of the catalog's.
    Each execution's lease lives exactly as long as the request that runs it.
    """

    def __init__(
        self,
        *,
        load: Load,
        sandbox: Sandbox,
        execution: ExecutionOptions | None,
        connections: ConnectionStore,
        max_connections: int,
        semantic: SemanticRanker | None = None,
        suspensions: Suspensions | None = None,
        on_operation_error: OperationErrorHandler | None = None,
        on_sandbox_failure: Observer[FailureEvidence] | None = None,
    ) -> None:
        if not callable(load):
            raise ValueError("load must be a callable taking a principal and returning an McpAuthority")
        if not isinstance(sandbox, Sandbox):
            raise ValueError(f"sandbox must be a mycelium.sandbox.Sandbox, got {type(sandbox).__name__}")
        check_optional("execution", execution, ExecutionOptions, "ExecutionOptions")
        check_ranker(semantic)
        if not isinstance(connections, ConnectionStore):
            raise ValueError(f"connections must be a ConnectionStore, got {type(connections).__name__}")
        self._max_connections = check_int("max_connections", max_connections)
        self._load = load
        self._execution = execution or ExecutionOptions()
        # A SharedSandbox given here is shared further: its owner closes it, not this catalog.
        self._owns_sandbox = not isinstance(sandbox, SharedSandbox)
        self._shared = (
            sandbox
            if isinstance(sandbox, SharedSandbox)
            else SharedSandbox(
                sandbox,
                capacity=self._execution.sandbox_capacity,
                admission_wait_ms=self._execution.admission_wait_ms,
            )
        )
        self._connections = connections
        self._semantic = semantic
        self._operation_errors: list[OperationErrorHandler] = []
        self._sandbox_failures: list[Observer[FailureEvidence]] = []
        check_optional("suspensions", suspensions, Suspensions, "Suspensions")
        if suspensions is not None and not sandbox.suspends:
            raise ValueError(f"suspensions need a sandbox that can resume runs; {sandbox.adapter!r} cannot")
        # A sandbox that can resume pauses at approvals by default, in this process's memory.
        self._suspensions = suspensions if suspensions is not None or not sandbox.suspends else Suspensions()
        self._loaded: OrderedDict[str, _Loaded] = OrderedDict()
        self._retired: set[_Loaded] = set()  # retired, still closing: their requests finish on them
        self._starting = anyio.Lock()
        self._purging: anyio.CancelScope | None = None  # made once entered: a scope needs an event loop
        self._tasks: TaskGroup | None = None
        self._exit = AsyncExitStack()
        self._closed = False
        self.observe(on_operation_error=on_operation_error, on_sandbox_failure=on_sandbox_failure)

    @property
    def max_connections(self) -> int:
        """How many connections the server keeps open in memory."""
        return self._max_connections

    @property
    def suspensions(self) -> Suspensions | None:
        """Where runs paused for approval wait: the store given, or this process's memory."""
        return self._suspensions

    @property
    def sandbox(self) -> SharedSandbox:
        """The sandbox and admission slots every principal's runtime shares."""
        return self._shared

    def observe(
        self,
        *,
        on_operation_error: OperationErrorHandler | None = None,
        on_sandbox_failure: Observer[FailureEvidence] | None = None,
    ) -> None:
        """Hand the operator's evidence of every principal's runs to these observers too.

        For a host that decides where evidence goes after the app built its catalog, as
        ``mycelium serve --evidence-dir`` does: call it before ``async with catalog:``. The
        observers given to :func:`create_mcp_catalog` keep theirs; each observer is called in
        turn, and one that raises is logged and changes nothing for the others.
        """
        if self._tasks is not None or self._closed:
            raise RuntimeError("observe() must be called before the catalog is entered with `async with`")
        for name, hook in (("on_operation_error", on_operation_error), ("on_sandbox_failure", on_sandbox_failure)):
            if hook is not None and not callable(hook):
                raise ValueError(f"{name} must be callable")
        if on_operation_error is not None:
            self._operation_errors.append(on_operation_error)
        if on_sandbox_failure is not None:
            self._sandbox_failures.append(on_sandbox_failure)

    def use_stores(self, *, connections: ConnectionStore, suspensions: Suspensions | None) -> None:
        """Keep this catalog's connection records and paused runs where the deployment says, not in memory.

        For a host that decides where records live after the app built its catalog, as
        ``mycelium serve --store`` does: call it before ``async with catalog:``. The catalog
        then closes these stores when it closes. ``suspensions`` is required exactly when the
        catalog pauses runs (:attr:`suspensions` is not ``None``), so paused runs never stay
        behind in one process while the connections are shared; to keep the app's other
        settings, pass ``dataclasses.replace(catalog.suspensions, store=..., key=..., previous_keys=...)``.

        Raises ``RuntimeError`` once the catalog has been entered or closed, and ``ValueError``
        when the app already keeps its connections or its paused runs outside this process's
        memory (its own choice is never replaced), or when ``suspensions`` is given or left out
        against the rule above.
        """
        if self._tasks is not None or self._closed:
            raise RuntimeError("use_stores() must be called before the catalog is entered with `async with`")
        if not isinstance(connections, ConnectionStore):
            raise ValueError(f"connections must be a ConnectionStore, got {type(connections).__name__}")
        check_optional("suspensions", suspensions, Suspensions, "Suspensions")
        if not isinstance(self._connections, MemoryConnections):
            raise ValueError(
                f"this catalog already keeps its connections in a {type(self._connections).__name__} of its own"
            )
        if self._suspensions is not None and not isinstance(self._suspensions.store, MemorySuspensions):
            raise ValueError(
                f"this catalog already keeps its paused runs in a {type(self._suspensions.store).__name__} of its own"
            )
        if self._suspensions is None and suspensions is not None:
            raise ValueError(
                f"this catalog's sandbox ({self._shared.adapter!r}) cannot pause runs: give no suspensions"
            )
        if self._suspensions is not None and suspensions is None:
            raise ValueError(
                "this catalog pauses runs at approvals: give its suspensions too, or they stay in this process"
            )
        self._connections = connections
        self._suspensions = suspensions

    async def __aenter__(self) -> Self:
        if self._tasks is not None or self._closed:
            raise RuntimeError("an McpCatalog runs once: enter it with `async with` a single time")
        check_backend(self._shared)
        self._tasks = await self._exit.enter_async_context(anyio.create_task_group())
        if self._suspensions is not None:
            self._purging = anyio.CancelScope()
            self._tasks.start_soon(self._purge, self._suspensions, self._purging)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the catalog (see :meth:`aclose`). Shielded: a catalog left because its task was
        cancelled (a server stopped by a signal) still closes everything it opened."""
        try:
            # A scope of its own: the cancellation may already have reached the task group's.
            # Each principal's runtime is cancelled with it, and closes what it owns on the way out.
            with anyio.CancelScope(shield=True):
                await self.aclose()
        finally:
            # Every runtime's task has ended by now. The block's own exception goes on as it is,
            # never wrapped in the task group's exception group.
            await self._exit.aclose()

    async def aclose(self) -> None:
        """Close every principal's runtime (waiting for their leases), then the shared sandbox and the store.

        Idempotent; leaving ``async with catalog:`` does it. A catalog that never ran has only
        its sandbox and its store to close.
        """
        self._closed = True
        if self._purging is not None:
            self._purging.cancel()
        loaded = list(self._loaded.values())
        self._loaded.clear()
        for each in loaded:
            self._retire(each)
        for each in list(self._retired):
            await each.closed.wait()
        try:
            if self._owns_sandbox:
                await self._shared.aclose()
        finally:
            try:
                await self._connections.aclose()
            finally:
                if self._suspensions is not None:
                    await self._suspensions.store.aclose()

    async def open(
        self, connection_id: str, principal: Principal, *, bound: int, keep: Collection[str]
    ) -> list[str] | None:
        """Record a new connection, evicting least recently used idle ones beyond ``bound``."""
        return await self._connections.open(connection_id, principal_key(principal), bound=bound, keep=keep)

    async def resume(self, connection_id: str, principal: Principal) -> bool:
        """Whether the connection is open and bound to ``principal``."""
        return await self._connections.resume(connection_id, principal_key(principal))

    async def touch(self, connection_id: str) -> None:
        """Mark the connection as just used."""
        await self._connections.touch(connection_id)

    async def close(self, connection_id: str) -> None:
        """Forget a connection."""
        await self._connections.close(connection_id)

    async def refresh(self, principal: Principal) -> McpAuthority:
        """Call ``load(principal)``: a fresh read every time, never a cached answer."""
        authority = self._load(principal)
        if inspect.isawaitable(authority):
            authority = await authority
        if not isinstance(authority, McpAuthority):
            raise TypeError(f"load() must return an McpAuthority, got {type(authority).__name__}")
        return authority

    async def definition(self, principal: Principal, authority: McpAuthority) -> ToolDefinition:
        """The execute tool of the revision ``principal``'s sources give now."""
        runtime = await self._runtime(principal, authority)
        async with runtime.lease() as lease:
            return lease.execute_tool.definition

    async def execute(self, call: ToolCall, context: McpExecutionContext) -> ToolResult:
        """Run ``call`` on a lease held for exactly this request, with the request's access."""
        runtime = await self._runtime(context.principal, context.authority)
        async with runtime.lease(session=_session(context), access=context.access) as lease:
            return await lease.execute_tool.prepare(call).execute(signal=context.signal, pause=context.pause)

    async def resume_run(self, suspension_id: str, approved: bool | None, context: McpExecutionContext) -> ToolResult:
        """Resume a paused run on a lease held for exactly this request, with the request's access."""
        runtime = await self._runtime(context.principal, context.authority)
        async with runtime.lease(session=_session(context), access=context.access) as lease:
            return await lease.execute_tool.resume(
                suspension_id, approved=approved, signal=context.signal, pause=context.pause
            )

    async def _runtime(self, principal: Principal, authority: McpAuthority) -> Runtime:
        key = principal_key(principal)
        loaded = self._loaded.get(key)
        if loaded is not None and loaded.serves(authority.sources):
            self._loaded.move_to_end(key)
            return loaded.runtime
        async with self._starting:  # one start at a time, so two first requests share one runtime
            loaded = self._loaded.get(key)
            if loaded is not None and loaded.serves(authority.sources):
                return loaded.runtime
            tasks = self._tasks
            if self._closed or tasks is None:
                raise RuntimeError("the MCP catalog is not running: use it inside `async with catalog:`")
            runtime = Runtime(
                modules=[item for item in authority.sources if isinstance(item, Module)],
                sources=[item for item in authority.sources if not isinstance(item, Module)],
                sandbox=self._shared,
                execution=self._execution,
                # Every lease brings the request's access; this one only stands behind an unexpected path.
                access=Access(explicit=True),
                semantic=self._semantic,
                suspensions=self._suspensions,
                on_operation_error=_each(self._operation_errors, "on_operation_error"),
                on_sandbox_failure=_each(self._sandbox_failures, "on_sandbox_failure"),
            )
            fresh = _Loaded(runtime, tuple(authority.sources))
            await tasks.start(self._run, fresh)
            if loaded is not None:
                self._retire(loaded)  # requests still holding its leases finish on it
            self._loaded[key] = fresh
            self._loaded.move_to_end(key)
            while len(self._loaded) > _MAX_CACHED_PRINCIPALS:
                self._retire(self._loaded.popitem(last=False)[1])
            return runtime

    async def _purge(self, suspensions: Suspensions, scope: anyio.CancelScope) -> None:
        """Remove expired suspensions and tombstones now and then, until the catalog closes.

        Nothing else would: a paused run nobody answers, and the tombstone of one resumed,
        stay in the store past their expiry until someone purges. Several replicas purging
        one store is harmless; each removes what has expired.
        """
        every = min(_PURGE_EVERY_S, max(1.0, suspensions.expires_after_ms / 1000 / 10))
        with scope:
            while True:
                await anyio.sleep(every)
                try:
                    removed = await suspensions.purge_expired()
                except Exception:
                    logger.exception("purging expired suspensions failed; trying again in %.0f s", every)
                    continue
                if removed:
                    logger.info("purged %d expired suspensions", removed)

    def _retire(self, loaded: _Loaded) -> None:
        self._retired.add(loaded)
        loaded.retire.set()

    async def _run(self, loaded: _Loaded, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run one principal's runtime until it is retired; it closes once its leases are released."""
        try:
            async with loaded.runtime:
                task_status.started()
                await loaded.retire.wait()
        except Exception:
            logger.exception("closing a retired runtime failed")
        finally:
            self._retired.discard(loaded)
            loaded.closed.set()


def _each(observers: list[Observer[_E]], name: str) -> Observer[_E] | None:
    """One observer that hands each event to every one of ``observers`` in turn (``None`` for none)."""
    if not observers:
        return None
    if len(observers) == 1:
        return observers[0]
    chosen = tuple(observers)

    async def each(event: _E) -> None:
        for observer in chosen:
            await notify(observer, event, name=name)

    return each


def _session(context: McpExecutionContext) -> Session:
    """The session a run belongs to: its connection's, or (without one) its principal's own.

    Requests of 2026-07-28 have no connection, and a paused run must be found again by
    whichever replica the retry reaches: the principal's session is the same everywhere.
    """
    session = context.connection_id or principal_session(context.principal)
    return Session(session, requester=principal_label(context.principal))


def create_mcp_catalog(
    *,
    load: Load,
    sandbox: Sandbox,
    execution: ExecutionOptions | None = None,
    connections: ConnectionStore | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    semantic: SemanticRanker | None = None,
    suspensions: Suspensions | None = None,
    on_operation_error: OperationErrorHandler | None = None,
    on_sandbox_failure: Observer[FailureEvidence] | None = None,
) -> McpCatalog:
    """The MCP catalog for installed apps.

    ``load(principal)`` (sync or async) returns the principal's current
    :class:`McpAuthority`; it runs before every execution and after every approval.
    ``sandbox`` is the host's isolated executor, shared by every principal (pass a
    :class:`~mycelium.SharedSandbox` to share it further). ``connections``
    records connections: in memory by default, or ``SqliteConnections(path)`` so a
    restarted server resumes them. At most ``max_connections`` stay open in memory.
    ``semantic`` adds ranking by meaning to every principal's search (see :mod:`mycelium.semantic`).
    ``suspensions`` is where a run paused for a person's approval waits, its sandbox slot
    free (see :mod:`mycelium.suspensions`): by default this process's memory, when the
    sandbox can resume runs; several replicas share a ``PostgresSuspensions`` and one key ring.
    ``on_operation_error`` and ``on_sandbox_failure`` receive the operator's evidence of every
    principal's runs, as the :class:`~mycelium.Runtime` hooks of the same names do: an operation's
    host failure, and every failed execute.
    Run it with ``async with catalog:``; leaving the block closes every principal's
    runtime (once their requests are done), the store, and the sandbox too, unless it was a
    ``SharedSandbox`` (whose owner closes it).
    """
    return McpCatalog(
        load=load,
        sandbox=sandbox,
        execution=execution,
        connections=connections if connections is not None else MemoryConnections(),
        max_connections=max_connections,
        semantic=semantic,
        suspensions=suspensions,
        on_operation_error=on_operation_error,
        on_sandbox_failure=on_sandbox_failure,
    )
