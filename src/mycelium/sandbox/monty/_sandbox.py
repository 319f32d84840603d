"""``MontySandbox``: its configuration, the run of one request from start to end, and the workspace mount."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, Self, TypeAlias

import anyio
import pydantic_monty
from pydantic_monty import (
    AsyncFunctionSnapshot,
    AsyncFutureSnapshot,
    AsyncMonty,
    ExternalModule,
    Frame,
    MontyComplete,
    MontyConversionError,
    MontyCrashedError,
    MontyError,
    MontyRuntimeError,
    MontySyntaxError,
    MontyTypingError,
    MountDir,
)

from ...access import DecisionDeferred
from ...bindings import BindingCallback
from ...errors import InvalidInput, OperationFailed, ToolError
from ...failures import (
    BadResponse,
    DeadlineExceeded,
    GuestException,
    InvalidResult,
    ResultTooLarge,
    SandboxError,
    SyntaxFailure,
    TransportLost,
)
from ...signals import AbortSignal
from ...text import clip
from ...values import MAX_JSON_DEPTH, JsonTooLarge, JsonValue, NotJson, json_size
from .. import UNENFORCED_LIMIT_NOTICES, PendingCalls, SandboxRequest, Suspended, UnenforcedLimit, Unrestorable
from ..guest import Leaf, NamespaceTree, guest_input, namespace_tree, positional_name
from ._conversions import _UNAWAITED_REASON, _conversion
from ._output import _PrintBuffer
from ._watch import _until_stopped, _Worker, _WorkerLost

KIB = 1024
MIB = 1024 * KIB

WorkspaceResolver = Callable[[str | None], "str | os.PathLike[str] | None"]
"""Session id (``None`` when session-free) -> the host directory to mount, or ``None`` for none."""

WORKSPACE_PATH = "/workspace"
# Imports, sleeps and lookups count against Monty's suspension budget too.
_SUSPENSION_SLACK = 1_000
# Monty's own feed clock is a backstop: the runtime's wall deadline should fire first.
_FEED_LIMIT_SLACK_SECS = 0.5
_IDENTIFIERS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_TEXT = 2_000
# Closing the pool and letting the loop end at once can abort the interpreter (exit code
# 134, a library thread calling into Python during shutdown); a short pause avoids it.
_CLOSE_PAUSE_SECS = 0.05


class MontySandbox:
    """Runs guest Python programs in Monty worker processes.

    Use ``async with MontySandbox() as sandbox`` or hand it to a ``Runtime``, which closes
    it when the runtime closes; it starts its pool on first use and can be started again
    after :meth:`aclose`.

    - ``memory_limit_bytes``: heap per run (256 MiB).
    - ``max_recursion_depth``: guest call depth (200). Monty also stops converting a value
      this deep, so it must be more than :data:`~mycelium.values.MAX_JSON_DEPTH`.
    - ``max_operation_calls``: operation calls per run (10,000); one more raises in the guest.
    - ``max_calls_in_flight``: calls of one run not yet settled (1,000); one more raises in the
      guest until some settle. Each pending call holds host objects, and thousands of them
      make the host's garbage collections long enough to stall its event loop.
    - ``max_print_bytes``: captured ``print`` output per run (64 KiB); the rest is dropped
      and the logs say so.
    - ``max_sleep_ms`` / ``max_total_sleep_ms``: each sleep is cut to the first; their sum is
      capped by the second.
    - ``pool_size``: worker processes (``None``: Monty's default).
    - ``max_checkouts_per_worker``: recycle a worker after this many runs (workers keep the
      memory a big run used).
    - ``type_check``: off by default. Before a program runs, Monty's type checker checks it
      against the operations' stubs (``SandboxRequest.stubs``): a wrong argument type, an
      unknown operation or a result used without ``await`` fails as ``syntax`` (with
      ``type_check=True``, the line and column) and nothing runs. It costs a second feed per
      run and one import per namespace: meant for catalogs of tens of modules, not thousands.
    - ``workspace``: off by default. A callable from session id to a host directory, mounted
      read-write at ``/workspace`` with ``workspace_write_limit_bytes`` per run. Give it a
      directory that holds no code or configuration: files there were written by a guest.
    - ``unenforced_limits``: limits the host declares are not enforced where it runs this
      sandbox; the runtime logs each once. Declaring one changes nothing here.
    """

    adapter = "monty"

    def __init__(
        self,
        *,
        memory_limit_bytes: int = 256 * MIB,
        max_recursion_depth: int = 200,
        max_operation_calls: int = 10_000,
        max_calls_in_flight: int = 1_000,
        max_print_bytes: int = 64 * KIB,
        max_sleep_ms: int = 10_000,
        max_total_sleep_ms: int = 30_000,
        pool_size: int | None = None,
        max_checkouts_per_worker: int | None = 100,
        workspace: WorkspaceResolver | None = None,
        workspace_write_limit_bytes: int = 16 * MIB,
        type_check: bool = False,
        unenforced_limits: Iterable[UnenforcedLimit] = (),
    ) -> None:
        for name, value in (
            ("memory_limit_bytes", memory_limit_bytes),
            ("max_recursion_depth", max_recursion_depth),
            ("max_operation_calls", max_operation_calls),
            ("max_calls_in_flight", max_calls_in_flight),
            ("max_print_bytes", max_print_bytes),
            ("max_sleep_ms", max_sleep_ms),
            ("max_total_sleep_ms", max_total_sleep_ms),
            ("workspace_write_limit_bytes", workspace_write_limit_bytes),
        ):
            if type(value) is not int or value <= 0:
                raise ValueError(f"MontySandbox {name} must be a positive int, got {value!r}")
        for name, optional in (("pool_size", pool_size), ("max_checkouts_per_worker", max_checkouts_per_worker)):
            if optional is not None and (type(optional) is not int or optional <= 0):
                raise ValueError(f"MontySandbox {name} must be a positive int or None, got {optional!r}")
        if max_recursion_depth <= MAX_JSON_DEPTH:
            raise ValueError(
                f"MontySandbox max_recursion_depth must be more than {MAX_JSON_DEPTH} (the JSON depth limit): "
                f"Monty stops converting values at that depth; got {max_recursion_depth}"
            )
        if type(type_check) is not bool:
            raise ValueError(f"MontySandbox type_check must be True or False, got {type_check!r}")
        if workspace is not None and not callable(workspace):
            raise ValueError("MontySandbox workspace must be a callable from session id to a directory")
        limits = tuple(unenforced_limits)
        unknown = [limit for limit in limits if limit not in UNENFORCED_LIMIT_NOTICES]
        if unknown:
            raise ValueError(f"MontySandbox unenforced_limits has unknown {unknown!r}; use cpu, memory, output, cancel")
        self.unenforced_limits: tuple[UnenforcedLimit, ...] = limits
        self.build_sha: str | None = f"pydantic-monty {pydantic_monty.__version__}"
        self._memory_limit = memory_limit_bytes
        self._recursion = max_recursion_depth
        self._max_calls = max_operation_calls
        self._max_in_flight = max_calls_in_flight
        self._max_print = max_print_bytes
        self._sleep_max = max_sleep_ms / 1000
        self._total_sleep = max_total_sleep_ms / 1000
        self._pool_size = pool_size
        self._recycle = max_checkouts_per_worker
        self._workspace = workspace
        self._workspace_limit = workspace_write_limit_bytes
        self._type_check = type_check
        self.guest_notes: str | None = (
            f"Files: {WORKSPACE_PATH} is this session's folder; files written there are still there in later "
            "runs of the same session, so keep state you need again in a file there and read it back."
            if workspace is not None
            else None
        )
        self._pool: AsyncMonty | None = None
        self._lock = anyio.Lock()
        self._revisions: OrderedDict[tuple[int, int, int, bool], _GuestModules] = OrderedDict()

    async def __aenter__(self) -> Self:
        await self._ensure_pool()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the worker pool. Idempotent; a later execute starts a new pool."""
        async with self._lock:
            pool, self._pool = self._pool, None
            if pool is not None:
                await pool.__aexit__(None, None, None)
                await anyio.sleep(_CLOSE_PAUSE_SECS)

    async def _ensure_pool(self) -> AsyncMonty:
        if self._pool is not None:  # the common case: no lock, no trip round the event loop
            return self._pool
        async with self._lock:
            if self._pool is None:
                pool = AsyncMonty(
                    min_processes=1, max_processes=self._pool_size, max_checkouts_per_worker=self._recycle
                )
                await pool.__aenter__()
                self._pool = pool
            return self._pool

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> JsonValue:
        """Run ``request.code`` in a fresh Monty session; see the module docstring for limits.

        A ``suspendable`` request is driven step by step, so that it can pause: when a call's
        binding raises :class:`~mycelium.access.DecisionDeferred`, the calls still in flight
        settle, the run is captured, and :class:`~mycelium.sandbox.Suspended` is raised.
        """
        return await self._run(request, signal, None)

    async def resume(
        self, request: SandboxRequest, state: bytes, pending: PendingCalls, signal: AbortSignal
    ) -> JsonValue:
        """Continue a run :meth:`execute` paused, in a fresh session (any process of this version).

        ``pending`` starts each call the run paused at (see
        :meth:`~mycelium.sandbox.SuspendingSandbox.resume`). Raises
        :class:`~mycelium.sandbox.Unrestorable` when ``state`` is not one this adapter can
        restore, or ``pending`` names other calls; nothing runs then.
        """
        paused = _Paused.unpack(state)
        if set(pending) != set(paused.deferred):
            raise Unrestorable("the calls to resume are not the calls the run paused at")
        return await self._run(request, signal, _Resumption(paused, pending))

    async def _run(self, request: SandboxRequest, signal: AbortSignal, resumption: _Resumption | None) -> JsonValue:
        signal.throw_if_aborted()
        pool = await self._ensure_pool()
        # Without stubs nothing can be checked (every operation would look unknown); a resumed
        # program was checked before it first ran.
        type_check = self._type_check and bool(request.stubs) and resumption is None
        stepped = request.suspendable or resumption is not None
        guest = self._guest_modules(request, type_check)
        run = _GuestRun(request, self._max_calls, self._max_in_flight)
        stepper = _Stepper(run, guest, self._sleep_max, self._total_sleep) if stepped else None
        printed = _PrintBuffer(self._max_print)
        # Driven step by step, each call also costs Monty a step to deliver its outcome.
        steps = self._max_calls * (2 if stepped else 1)
        limits: pydantic_monty.ResourceLimits = {
            "max_feed_duration_secs": request.timeout_ms / 1000 + _FEED_LIMIT_SLACK_SECS,
            "max_memory": self._memory_limit,
            "max_recursion_depth": self._recursion,
            "max_suspensions": steps + _SUSPENSION_SLACK + len(guest.namespaces),
            "max_total_sleep_secs": self._total_sleep,
        }
        mount = self._mount(request.session_id)
        failure: Exception | None = None
        value: object = None
        result: JsonValue = None
        completed = False
        # The guest's namespaces are shared by every run of the revision; their callbacks find
        # this run here (Monty runs each callback in a copy of the context that fed the program).
        slot = _RunSlot(run)
        current = _RUN.set(slot)
        try:
            async with pool.checkout(
                limits=limits,
                external_modules=guest.modules,
                os_policy={"sleep_system_max": self._sleep_max},
                type_check=type_check,
                type_check_format="json",
            ) as session:
                run.worker = _Worker(session)
                try:
                    if type_check:
                        await self._check_types(session, guest, request.code, signal)
                    if stepper is not None:
                        feed = stepper.drive(session, guest.program(request.code), printed, mount, resumption)
                    else:
                        feed = session.feed_run(
                            guest.program(request.code), print_callback=printed.write, mount=mount, skip_type_check=True
                        )
                    value = await _until_stopped(feed, signal, worker=run.worker)
                    result = run.result(value, request.max_result_bytes)
                    await _until_stopped(run.finish_started(printed), signal)
                    if stepper is not None:
                        stepper.note_undecided(printed)
                    completed = True
                except MontyError as exc:
                    failure = run.failure_for(exc)
                except _WorkerLost:
                    failure = SandboxError(TransportLost())
                except SandboxError as exc:  # the value is not one to return: calls left running stop
                    failure = exc
                finally:
                    await run.stop_unsettled(printed)
        finally:
            _RUN.reset(current)
            slot.run = None  # Monty may keep copies of the context a while: they must not keep the run
            if mount is not None:
                mount.close()
            if request.on_log is not None:
                if completed and value is None:
                    printed.hint_if_no_result(request.code)
                for line in printed.lines():
                    request.on_log(line)
        if failure is not None:
            raise failure
        return result

    def _guest_modules(self, request: SandboxRequest, type_check: bool) -> _GuestModules:
        """The guest's namespaces for the request's revision: built once, kept for the next runs."""
        key = (id(request.namespace_paths), id(request.modules), id(request.stubs), type_check)
        cached = self._revisions.get(key)
        if cached is not None and cached.serves(request):
            self._revisions.move_to_end(key)
            return cached
        built = _GuestModules(request, with_stubs=type_check)
        self._revisions[key] = built
        if len(self._revisions) > _KEPT_REVISIONS:
            self._revisions.popitem(last=False)
        return built

    async def _check_types(self, session: Any, guest: _GuestModules, code: str, signal: AbortSignal) -> None:
        """Type-check the program against the operations' stubs; raise ``SandboxError`` if it fails.

        The program is checked exactly as it will run, after one line importing every
        namespace, and nothing of it runs. A top-level ``return`` (which the checker calls
        a syntax error outside a function) is the one diagnostic let through. A program
        that opts out of the check fails as ``syntax`` and does not run: ``# type: ignore``,
        code run through ``eval``/``exec``/``compile``, or branches the checker decides
        cannot run (``TYPE_CHECKING``, ``sys.platform``, which it assumes differently).
        """
        unchecked = _UNCHECKABLE.search(code)
        if unchecked is not None:
            line = code.count("\n", 0, unchecked.start()) + 1
            what = next(text for group, text in _UNCHECKABLE_WHAT.items() if unchecked.group(group))
            message = f"{what} cannot be used in a type-checked program: the checker could not see what it hides"
            raise SandboxError(SyntaxFailure(message=message, line=line, type_check=True))
        try:
            await _until_stopped(session.feed_run(guest.checked_program(code)), signal)
        except MontySyntaxError as exc:
            frames = exc.traceback()
            at = _guest_line(frames[0].line) if frames else None
            raise SandboxError(SyntaxFailure(message=_clip(str(exc.exception())), line=at)) from None
        except MontyTypingError as exc:
            failure = _type_failure(exc.display())
            if failure is not None:
                raise SandboxError(failure) from None

    def _mount(self, session_id: str | None) -> MountDir | None:
        if self._workspace is None:
            return None
        directory = self._workspace(session_id)
        if directory is None:
            return None
        return MountDir(
            host_path=Path(directory),
            virtual_path=WORKSPACE_PATH,
            mode="read-write",
            write_bytes_limit=self._workspace_limit,
        )


class _Call:
    """One operation call a guest placed, owned until it settles.

    ``pending`` is the host's awaitable for the call. The coroutine handed to Monty wraps it;
    whoever ends up driving the call (Monty, or :meth:`finish` for a call nobody awaited)
    awaits it exactly once, and a call never started is closed, never left unawaited.
    """

    __slots__ = ("_unsettled", "_waiter", "coroutine", "failure", "path", "pending", "settled", "task")

    def __init__(self, path: str, pending: Awaitable[JsonValue], unsettled: _Unsettled) -> None:
        self.path = path
        self.pending = pending
        self._unsettled = unsettled
        self.task: asyncio.Task[Any] | None = None
        self.settled = False
        self._waiter: anyio.Event | None = None  # made only for a call the run left behind
        self.failure: OperationFailed | None = None
        self.coroutine = self._run()

    async def _run(self) -> JsonValue:
        self.task = asyncio.current_task()
        try:
            return await self.pending
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None
        except ToolError as exc:
            raise RuntimeError(str(exc)) from None
        except OperationFailed as exc:
            self.failure = exc
            raise RuntimeError(str(exc)) from None
        finally:
            self._settle()

    def _settle(self) -> None:
        if not self.settled:
            self._unsettled.leave()
        self.settled = True
        if self._waiter is not None:
            self._waiter.set()

    def start(self) -> asyncio.Task[Any]:
        """Drive the call in a task of its own (a stepped run does; Monty drives a fed run's calls)."""
        task = self.task = asyncio.get_running_loop().create_task(self.coroutine)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task[Any]) -> None:
        # The run reads the outcome when the program waits for it, or never (a run stopped
        # meanwhile): it is read here too, so it is never reported as unretrieved.
        if not task.cancelled():
            task.exception()
        # A task cancelled before its first step never ran the call: close what it wraps, and settle.
        if not self.settled:
            _close(self.pending)
            self._settle()

    async def finish(self) -> None:
        """Let a call the program never awaited run to its end (its outcome is not shown)."""
        if self.settled:
            return
        if self.task is None:
            # Nobody started it: drive it here, so a placed write is never silently dropped.
            with contextlib.suppress(Exception):
                await self.coroutine
            return
        await self._settled()

    def cancel(self) -> None:
        """Cancel the call if it is still running (see :meth:`wait`)."""
        if self.settled:
            return
        if self.task is None:
            self.coroutine.close()  # never started: close what it wraps too, so nothing is left unawaited
            _close(self.pending)
            self._settle()
            return
        self.task.cancel()

    async def wait(self) -> None:
        """Return once a cancelled call has settled."""
        await self._settled()

    async def _settled(self) -> None:
        if not self.settled:
            if self._waiter is None:
                self._waiter = anyio.Event()
            await self._waiter.wait()


class _Unsettled:
    """How many of a run's calls have not settled. Calls are placed on Monty's thread and settle
    on the event loop, so the count is kept under a lock."""

    __slots__ = ("_count", "_limit", "_lock")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._count = 0
        self._lock = threading.Lock()

    def enter(self) -> bool:
        """Count one more, unless the limit is reached."""
        with self._lock:
            if self._count >= self._limit:
                return False
            self._count += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self._count -= 1


class _RunSlot:
    """Where a run's callbacks find it; emptied when the run ends."""

    __slots__ = ("run",)

    def __init__(self, run: _GuestRun) -> None:
        self.run: _GuestRun | None = run


def _close(pending: Awaitable[JsonValue]) -> None:
    """Close a call's awaitable that will never be awaited (no "never awaited" warning)."""
    if inspect.iscoroutine(pending):
        pending.close()


_RUN: ContextVar[_RunSlot] = ContextVar("mycelium_monty_run")
_KEPT_REVISIONS = 32
_CANCEL_BATCH = 100


class _GuestModules:
    """The guest's namespaces for one revision, as Monty modules. Built once per revision.

    Their leaves are plain functions of the operation's place in the request's bindings,
    so nothing here refers to a run: a run's calls reach their run through ``_RUN``. (A
    module that referred to its run would form a reference cycle the collector cannot
    see, because Monty's modules are not tracked by it, and leak every run.)
    """

    def __init__(self, request: SandboxRequest, *, with_stubs: bool) -> None:
        self._keys = (request.namespace_paths, request.modules, request.stubs)
        self._stubs = request.stubs if with_stubs else None
        self.namespaces: list[str] = []  # every namespace's dotted path, for the type checker's imports
        self.leaves: dict[str, Leaf] = {}  # every name a call may be announced under, when driven step by step
        top = {name: self._module(node, name) for name, node in namespace_tree(request).items()}
        self.modules: dict[str, ExternalModule] = {**top, "env": ExternalModule(dict(top), stubs=self._stub(""))}

    def serves(self, request: SandboxRequest) -> bool:
        """Whether these modules were built for ``request``'s revision (the same objects, not equal ones)."""
        mine = self._keys
        return mine[0] is request.namespace_paths and mine[1] is request.modules and mine[2] is request.stubs

    def program(self, code: str) -> str:
        """The code as fed to Monty: one line binding the namespaces, then the guest's own lines.

        Only the namespaces the code names are bound (each import costs a trip to the host);
        the line is there either way, so guest line N is always line N + 1.
        """
        named = sorted(self.modules.keys() & set(_IDENTIFIERS.findall(code)))
        return (f"import {', '.join(named)}" if named else "") + "\n" + code

    def checked_program(self, code: str) -> str:
        """The code as the type checker sees it: one line importing every namespace, then the
        program unchanged, so guest line N is line N + 1, as when it runs. (Re-indenting it
        into a function would change multi-line strings and what a form feed means.)"""
        imports = ", ".join(["forage", *(path for name in self.namespaces for path in (name, f"env.{name}"))])
        return f"import {imports}\n{code}"

    def _module(self, node: NamespaceTree | Leaf, path: str) -> ExternalModule:
        if not isinstance(node, dict):
            raise ValueError(f"{path} is an operation where a namespace was expected")
        attrs: dict[str, Any] = {}
        for segment, child in node.items():
            if isinstance(child, Leaf):
                # A plain function returning an awaitable: the call (and its ordinal) is placed
                # the moment the guest makes it, before anything is awaited.
                attrs[segment] = functools.partial(_place, child)
                self.leaves[child.path] = self.leaves[f"env.{child.path}"] = child
            else:
                attrs[segment] = self._module(child, f"{path}.{segment}")
        if path != "forage":
            self.namespaces.append(path)
        return ExternalModule(attrs, stubs=self._stub(path))

    def _stub(self, path: str) -> str | None:
        if self._stubs is None:
            return None
        return self._stubs.get(path, "")


def _place(leaf: Leaf, *args: object, **kwargs: object) -> Awaitable[JsonValue]:
    run = _RUN.get().run
    if run is None:
        raise RuntimeError("the run is over")
    return run.call(leaf, args, kwargs)


class _GuestRun:
    """The host side of one run: every call it places, and what it may send and return."""

    def __init__(self, request: SandboxRequest, max_calls: int, max_in_flight: int) -> None:
        self._bindings = request.bindings
        self._callbacks: dict[Leaf, BindingCallback] = {}
        self._max_calls = max_calls
        self._unsettled = _Unsettled(max_in_flight)
        self._max_in_flight = max_in_flight
        self._max_input = request.max_input_bytes
        self._timeout_ms = request.timeout_ms
        self.calls: list[_Call] = []
        # What a paused run's earlier parts did: their calls count towards the limit, and a
        # host failure they settled is still reported as one.
        self.earlier_calls = 0
        self.earlier_failures: list[OperationFailed] = []
        self.worker: _Worker | None = None
        # Monty places calls from a thread of its own, so placing and closing take turns.
        self._placing = threading.Lock()
        self._closed = False

    def call(self, leaf: Leaf, args: tuple[object, ...], kwargs: Mapping[str, object]) -> Awaitable[JsonValue]:
        """Place one call of ``leaf``; refusals before placing raise in the guest at the call."""
        return self.place(leaf, args, kwargs).coroutine

    def place(self, leaf: Leaf, args: tuple[object, ...], kwargs: Mapping[str, object]) -> _Call:
        """Place one call of ``leaf`` and own it; raise what the guest gets for a call refused before placing."""
        if len(self.calls) + self.earlier_calls >= self._max_calls:
            raise RuntimeError(f"this run made more than {self._max_calls} operation calls")
        if self.worker is not None:
            self.worker.seen()
        callback = self._callbacks.get(leaf)
        if callback is None:
            callback = self._callbacks[leaf] = self._bindings[leaf.transport][leaf.relative]
        if not self._unsettled.enter():
            raise RuntimeError(
                f"this run has {self._max_in_flight} operation calls still running; await some before starting more"
            )
        try:
            value = guest_input(
                leaf.path, args, kwargs, positional_name(callback), max_bytes=self._max_input, strings=_conversion
            )
            pending = callback(value)
        except BaseException as exc:
            self._unsettled.leave()  # refused before it was placed (not JSON, too large, ...)
            if isinstance(exc, InvalidInput):
                raise ValueError(str(exc)) from None
            raise
        return self.track(leaf.path, pending, entered=True)

    def track(self, path: str, pending: Awaitable[JsonValue], *, entered: bool = False) -> _Call:
        """Own ``pending``, a call of ``path`` already placed with its binding."""
        if not entered:
            self._unsettled.enter()  # a resumed run's paused call: over the limit for a moment at most
        tracked = _Call(path, pending, self._unsettled)
        with self._placing:
            if self._closed:  # the run ended while this call was on its way: it never starts
                tracked.cancel()
                raise RuntimeError("the run is over")
            self.calls.append(tracked)
        return tracked

    async def finish_started(self, printed: _PrintBuffer) -> None:
        """Let the calls the program placed but never awaited finish, and say so in the output.

        A call is placed when it is made: a write the program forgot to await still happens,
        and the run settles only after it has.
        """
        left = [call for call in self.calls if not call.settled]
        for call in left:
            await call.finish()
        if left:
            printed.note(
                f"{_paths(left)}: called without `await`; the run waited for "
                f"{'it' if len(left) == 1 else 'them'} to finish, but the result was not used"
            )

    async def stop_unsettled(self, printed: _PrintBuffer) -> None:
        """Stop every call still running once the run is over (it failed or was stopped), and say
        which in the output; a call placed after this is refused."""
        with self._placing:
            self._closed = True
        running = [call for call in self.calls if not call.settled and call.task is not None]
        if running:
            printed.note(
                f"{_paths(running)}: still running when the run ended, and stopped; it may or may not have taken effect"
            )
        # In batches, with a trip round the loop between them: thousands of calls cancelled at
        # once would all unwind in one loop turn and stall the host.
        for start in range(0, len(self.calls), _CANCEL_BATCH):
            batch = self.calls[start : start + _CANCEL_BATCH]
            for call in batch:
                call.cancel()
            for call in batch:
                await call.wait()
            await asyncio.sleep(0)

    def result(self, value: object, limit: int | None) -> JsonValue:
        """The program's value, if it is JSON within ``limit``; else the failure that keeps it out."""
        try:
            json_size(value, limit=limit, strings=_conversion)
        except JsonTooLarge as exc:
            raise SandboxError(ResultTooLarge(size=exc.size, limit=exc.limit)) from None
        except NotJson as exc:
            if _UNAWAITED_REASON in str(exc):
                raise SandboxError(
                    GuestException(
                        type_name="TypeError",
                        message=f"the result holds an operation call that was never awaited ({self._called()}); "
                        "write `await` before every operation call",
                    )
                ) from None
            raise SandboxError(InvalidResult(reason=str(exc))) from None
        return value  # type: ignore[return-value]  # json_size proved it is JSON

    def host_failures(self) -> list[OperationFailed]:
        """Every host failure a call of this run settled with, its earlier parts' included."""
        return [call.failure for call in self.calls if call.failure is not None] + self.earlier_failures

    def _called(self) -> str:
        # Monty numbers its futures among all suspensions (imports, sleeps), so the
        # placeholder cannot say which call it was: name the operations this run called.
        return f"called: {_paths(self.calls)}" if self.calls else "no operation was called"

    def failure_for(self, exc: MontyError) -> Exception:
        """The exception that reports a Monty error: a typed failure, or the host's own failure."""
        if isinstance(exc, MontySyntaxError):
            frames = exc.traceback()
            if frames and frames[-1].function_name is not None:
                # Raised by exec() or eval() while the program ran: not "nothing ran".
                return SandboxError(
                    GuestException(
                        type_name="SyntaxError", message=_clip(str(exc.exception())), traceback=_guest_traceback(frames)
                    )
                )
            line = _guest_line(frames[0].line) if frames else None
            column = frames[0].column if frames else None
            return SandboxError(SyntaxFailure(message=_clip(str(exc.exception())), line=line, column=column))
        if isinstance(exc, MontyCrashedError):
            if exc.timed_out:
                return SandboxError(DeadlineExceeded(timeout_ms=self._timeout_ms, acknowledged=True))
            return SandboxError(TransportLost())
        if isinstance(exc, MontyConversionError):
            return SandboxError(InvalidResult(reason=f"the value cannot leave the sandbox: {_clip(str(exc))}"))
        if isinstance(exc, MontyRuntimeError):
            inner = exc.exception()
            # Clipped before anything reads it: a guest's message may be megabytes long.
            message = _clip(str(inner))
            type_name = type(inner).__name__
            for failure in self.host_failures():
                # Our own message, unique by its reference, came back out: nobody handled it.
                if type(inner) is RuntimeError and message == str(failure):
                    return failure
            if type(inner) is RuntimeError and message.startswith(_MONTY_LIMITATION):
                # Not a fault of the host: something the sandbox's Python does not support.
                type_name = "NotImplementedError"
                message = f"the sandbox does not support this: {message.removeprefix(_MONTY_LIMITATION)}"
            elif "'coroutine'" in message:
                # The guest used a call's coroutine as if it were its result.
                message = f"{message} (an operation call was not awaited; {self._called()})"
            return SandboxError(
                GuestException(type_name=type_name, message=_clip(message), traceback=_guest_traceback(exc.traceback()))
            )
        return SandboxError(TransportLost())


class _Paused(NamedTuple):
    """A paused run as :class:`~mycelium.sandbox.Suspended` carries it, and its byte form.

    ``ready`` holds the outcomes of calls that settled while the run was pausing, not yet
    handed to the program; ``deferred`` names the calls awaiting a decision (call id ->
    path), the first of them the one the run paused at.
    """

    snapshot: bytes
    ready: dict[int, _Outcome]
    deferred: dict[int, str]
    slept: float
    """Seconds the program has slept so far: its sleep budget is the whole run's."""
    calls_made: int
    """Operation calls placed so far, the deferred ones included: the limit is the whole run's."""
    failures: list[OperationFailed]
    """The host failures calls settled with so far, to report one the program leaves unhandled."""

    def pack(self) -> bytes:
        header = json.dumps(
            {
                "v": _STATE_VERSION,
                "ready": list(self.ready.items()),
                "deferred": list(self.deferred.items()),
                "slept": self.slept,
                "calls_made": self.calls_made,
                "failures": [[f.module, f.operation, f.path, f.reference] for f in self.failures],
            },
            separators=(",", ":"),
            allow_nan=False,
        ).encode()
        return _STATE_MAGIC + len(header).to_bytes(4, "big") + header + self.snapshot

    @classmethod
    def unpack(cls, state: bytes) -> _Paused:
        """Read the byte form back; raise :class:`Unrestorable` for anything else."""
        try:
            if not state.startswith(_STATE_MAGIC):
                raise ValueError("not a paused Monty run")
            start = len(_STATE_MAGIC) + 4
            end = start + int.from_bytes(state[len(_STATE_MAGIC) : start], "big")
            header = json.loads(state[start:end])
            if header["v"] != _STATE_VERSION:
                raise ValueError(f"state version {header['v']!r}")
            ready = {int(call_id): _settled_form(outcome) for call_id, outcome in header["ready"]}
            deferred = {int(call_id): str(path) for call_id, path in header["deferred"]}
            slept = float(header["slept"])
            calls_made = int(header["calls_made"])
            failures = [
                OperationFailed(module=module, operation=operation, path=path, reference=reference)
                for module, operation, path, reference in header["failures"]
            ]
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise Unrestorable(f"the paused run's state cannot be read: {exc}") from None
        if not deferred or len(state) <= end:
            raise Unrestorable("the paused run's state is incomplete")
        return cls(state[end:], ready, deferred, slept, calls_made, failures)


class _Resumption(NamedTuple):
    paused: _Paused
    pending: PendingCalls


class _Stepper:
    """Drives a run one Monty step at a time, so it can pause at a call awaiting a decision.

    Each call the program makes is placed like any other (:meth:`_GuestRun.place`) and
    handed to Monty as a future; its outcome is delivered when the program waits for it.
    Sleeps, which Monty leaves to whoever drives it, are capped and counted as a fed run's
    are. Once a call's decision is deferred, the run goes on only as far as the calls
    already placed take it: at the program's next new call, or when nothing is left to
    wait for but deferred calls, everything still running settles and the run is captured.
    """

    def __init__(self, run: _GuestRun, guest: _GuestModules, sleep_max: float, total_sleep: float) -> None:
        self._run = run
        self._guest = guest
        self._running: dict[int, asyncio.Task[Any]] = {}  # calls and sleeps, by Monty's call id
        self._paths: dict[int, str] = {}  # the operation path of each call
        self._ready: dict[int, _Outcome] = {}
        self._deferred: dict[int, DecisionDeferred] = {}
        self._sleep_max = sleep_max
        self._sleep_total = total_sleep
        self._slept = 0.0  # the whole run's, its earlier parts included

    async def drive(
        self,
        session: Any,
        program: str,
        printed: _PrintBuffer,
        mount: MountDir | None,
        resumption: _Resumption | None,
    ) -> object:
        """Run to the program's value; raise :class:`Suspended` if it pauses."""
        try:
            if resumption is None:
                snap = await session.feed_start(
                    program, print_callback=printed.write, mount=mount, skip_type_check=True
                )
            else:
                snap = await self._restore(session, printed, mount, resumption)
            while not isinstance(snap, MontyComplete):
                if isinstance(snap, AsyncFutureSnapshot):
                    snap = await self._deliver(snap)
                elif not isinstance(snap, AsyncFunctionSnapshot):  # a name: Monty answers it itself
                    snap = await snap.resume_auto()
                elif snap.function_name == "system.sleep":
                    snap = await snap.resume(await self._sleep(snap.args))
                elif snap.function_name == "system.async_sleep":
                    snap = await snap.resume(self._start_sleep(snap.call_id, snap.args))
                elif snap.is_os_function:  # imports and mounted files
                    snap = await snap.resume_auto()
                elif self._deferred:
                    raise await self._pause(snap)
                else:
                    snap = await snap.resume(self._place(snap))
            return snap.output
        finally:
            # Calls are the run's to stop (they may have taken effect); sleeps are only ours.
            sleeps = [task for call_id, task in self._running.items() if call_id not in self._paths]
            for task in sleeps:
                task.cancel()
            if sleeps:
                await asyncio.wait(sleeps)

    async def _restore(
        self, session: Any, printed: _PrintBuffer, mount: MountDir | None, resumption: _Resumption
    ) -> Any:
        paused = resumption.paused
        try:
            snap = await session.load_snapshot(paused.snapshot, mount=mount, print_callback=printed.write)
        except (MontyError, ValueError, RuntimeError, TypeError) as exc:
            raise Unrestorable(f"Monty could not restore the paused run: {type(exc).__name__}") from None
        self._ready.update(paused.ready)
        self._slept = paused.slept
        self._run.earlier_calls = paused.calls_made - len(paused.deferred)  # those are placed again now
        self._run.earlier_failures = paused.failures
        for call_id, path in paused.deferred.items():
            self._start(call_id, self._run.track(path, resumption.pending[call_id]()))
        return snap

    def _place(self, snap: Any) -> pydantic_monty.ExternalResult:
        leaf = self._guest.leaves.get(snap.function_name)
        if leaf is None:
            return {"exc_type": "NameError", "message": f"{_clip(str(snap.function_name))} is not an operation"}
        try:
            call = self._run.place(leaf, tuple(snap.args), dict(snap.kwargs))
        except Exception as exc:  # refused before it was placed: the guest gets it at the call
            return _raised(exc)
        self._start(snap.call_id, call)
        return {"future": ...}

    def _start(self, call_id: int, call: _Call) -> None:
        self._running[call_id] = call.start()
        self._paths[call_id] = call.path

    def _sleep_for(self, args: tuple[object, ...]) -> float | _Outcome:
        """How long a sleep lasts (capped), or what the guest gets instead."""
        wanted = args[0] if len(args) == 1 else None
        if not isinstance(wanted, int | float) or isinstance(wanted, bool) or wanted != wanted:
            return {"exc_type": "TypeError", "message": "sleep() takes one number of seconds"}
        if wanted < 0:
            return {"exc_type": "ValueError", "message": "sleep length must be non-negative"}
        length = min(float(wanted), self._sleep_max)
        self._slept += length
        if self._slept > self._sleep_total:
            limit = f"{round(self._slept * 1000)}ms > {round(self._sleep_total * 1000)}ms"
            return {"exc_type": "TimeoutError", "message": f"sleep limit exceeded: {limit}"}
        return length

    async def _sleep(self, args: tuple[object, ...]) -> _Outcome:
        length = self._sleep_for(args)
        if not isinstance(length, float):
            return length
        await asyncio.sleep(length)
        return {"return_value": None}

    def _start_sleep(self, call_id: int, args: tuple[object, ...]) -> pydantic_monty.ExternalResult:
        length = self._sleep_for(args)
        if not isinstance(length, float):
            return length
        self._running[call_id] = asyncio.get_running_loop().create_task(asyncio.sleep(length))
        return {"future": ...}

    async def _deliver(self, snap: Any) -> Any:
        """Hand the program the outcomes it waits for, waiting for at least one if none is ready."""
        waited = snap.pending_call_ids
        if not any(call_id in self._ready for call_id in waited):
            running = [self._running[call_id] for call_id in waited if call_id in self._running]
            if not running:
                if self._deferred:
                    raise await self._pause(snap)
                raise SandboxError(BadResponse())  # Monty waits for a call it never announced
            await asyncio.wait(running, return_when=_FIRST)
            self._collect()
        outcomes = {call_id: self._ready.pop(call_id) for call_id in waited if call_id in self._ready}
        return await snap.resume(outcomes) if outcomes else snap

    def _collect(self) -> None:
        """Move every settled call's outcome to where the program will find it."""
        for call_id, task in list(self._running.items()):
            if not task.done():
                continue
            del self._running[call_id]
            exc = None if task.cancelled() else task.exception()
            if isinstance(exc, DecisionDeferred):
                self._deferred[call_id] = exc
            elif task.cancelled():
                self._ready[call_id] = {"exc_type": "RuntimeError", "message": "the call was stopped"}
            elif exc is not None:
                self._ready[call_id] = _raised(exc)
            else:
                self._ready[call_id] = {"return_value": task.result()}

    def note_undecided(self, printed: _PrintBuffer) -> None:
        """Say which deferred calls a finished program never awaited: they did not run."""
        self._collect()
        if self._deferred:
            paths = ", ".join(sorted({self._paths[call_id] for call_id in self._deferred}))
            printed.note(
                f"{paths}: needed a person's decision, but the program ended without awaiting it, "
                "and a run that has ended cannot wait for one: it did not run"
            )

    async def _pause(self, snap: Any) -> Suspended:
        """Let every call still running settle, then capture the run."""
        if self._running:
            await asyncio.wait(self._running.values())
        self._collect()
        # In the order the program placed them: the first placed is the first to decide.
        order = sorted(self._deferred.items(), key=lambda item: item[1].request.operation_ordinal or 0)
        deferred = {call_id: self._paths[call_id] for call_id, _ in order}
        # A big heap takes a while to serialise: not on the event loop.
        snapshot = await anyio.to_thread.run_sync(snap.dump)
        run = self._run
        made = len(run.calls) + run.earlier_calls
        paused = _Paused(snapshot, self._ready, deferred, self._slept, made, run.host_failures())
        return Suspended(paused.pack(), dict(order))


_Outcome: TypeAlias = "pydantic_monty.ExternalSettledResult"
_STATE_MAGIC = b"MYCMONTY"
_STATE_VERSION = 1
_FIRST = asyncio.FIRST_COMPLETED
# The exception types a call's outcome keeps when it crosses into the guest; any other is an Exception.
_GUEST_EXCEPTIONS = frozenset(
    {"ValueError", "RuntimeError", "TypeError", "KeyError", "PermissionError", "TimeoutError", "LookupError"}
)


def _raised(exc: BaseException) -> pydantic_monty.ExternalSettledResult:
    name = type(exc).__name__
    return {"exc_type": name if name in _GUEST_EXCEPTIONS else "Exception", "message": _clip(str(exc))}  # type: ignore[typeddict-item]


def _settled_form(outcome: object) -> _Outcome:
    """A stored outcome, checked to be one Monty accepts."""
    if isinstance(outcome, dict) and outcome.keys() == {"return_value"}:
        return {"return_value": outcome["return_value"]}
    if (
        isinstance(outcome, dict)
        and outcome.keys() == {"exc_type", "message"}
        and outcome["exc_type"] in _GUEST_EXCEPTIONS | {"Exception", "NameError"}
        and isinstance(outcome["message"], str)
    ):
        return {"exc_type": outcome["exc_type"], "message": outcome["message"]}
    raise ValueError("an outcome is malformed")


# Monty reports some things its Python does not support (`raise ValueError(42)`) under this prefix.
_MONTY_LIMITATION = "Internal error in monty: "


def _paths(calls: list[_Call]) -> str:
    paths = sorted({call.path for call in calls})
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


# What would let code past the type checker unseen. Matched in the whole text, strings too:
# refusing a string that happens to read "type: ignore" is the price of a check that cannot be fooled.
_UNCHECKABLE = re.compile(
    r"(?P<ignore>\b(?:type|ty)\s*:\s*ignore\b)"
    r"|(?P<dynamic>\b(?:eval|exec|compile)\b)"
    r"|(?P<assumed>\bTYPE_CHECKING\b|\bsys\s*\.\s*platform\b|\bfrom\s+sys\s+import\b)"
)
_UNCHECKABLE_WHAT = {
    "ignore": "A `# type: ignore` comment",
    "dynamic": "eval(), exec() or compile()",
    "assumed": "TYPE_CHECKING or sys.platform",
}
# The checker's word for a top-level `return`, which the runtime allows.
_TOP_LEVEL_RETURN = "`return` statement outside of a function"


def _type_failure(diagnostics: str) -> SyntaxFailure | None:
    """The first type-check diagnostic in the guest's own code, at its own line and column;
    ``None`` when the only ones are top-level returns. A syntax error is reported as one."""
    try:
        found = [
            (str(item["code"]), str(item["message"]), int(item["location"]["row"]), int(item["location"]["column"]))
            for item in json.loads(diagnostics)
        ]
    except (ValueError, TypeError, KeyError):
        return SyntaxFailure(message="the program failed its type check", type_check=True)
    found = [item for item in found if not (item[0] == "invalid-syntax" and item[1] == _TOP_LEVEL_RETURN)]
    if not found:
        return None
    syntax = [item for item in found if item[0] == "invalid-syntax"]
    if syntax:
        _, message, row, column = syntax[0]
        return SyntaxFailure(message=_clip(message), line=_guest_line(row), column=column)
    code, message, row, column = found[0]
    text = f"{message} [{code}]" + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
    if row <= 1:  # in the import line: nothing the guest wrote
        return SyntaxFailure(message=_clip(text), type_check=True)
    return SyntaxFailure(message=_clip(text), line=_guest_line(row), column=column, type_check=True)


def _guest_line(line: int) -> int:
    return max(1, line - 1)  # the prelude is line 1


def _guest_traceback(frames: list[Frame]) -> str:
    """The guest's frames as a traceback, in the guest's own line numbers."""
    lines = []
    for frame in frames[-20:]:
        where = f"line {_guest_line(frame.line)}" + (f", in {frame.function_name}" if frame.function_name else "")
        lines.append(f"  {where}: {(frame.source_line or '').strip()}")
    if len(frames) > 20:
        lines.insert(0, f"  ... {len(frames) - 20} earlier frames")
    return _clip("\n".join(lines))


def _clip(text: str) -> str:
    return clip(text, _MAX_TEXT)
