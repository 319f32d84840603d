"""``MontySandbox``: its configuration, the run of one request from start to end, and the workspace mount."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Self

import pydantic_monty
from pydantic_monty import MontyError, MountDir

from ..._signals import AbortSignal
from ..._values import MAX_JSON_DEPTH, JsonValue
from ...failures import SandboxError, TransportLost
from .._contract import UNENFORCED_LIMIT_NOTICES, PendingCalls, Sandbox, SandboxRequest, UnenforcedLimit, Unrestorable
from ._calls import _GuestRun
from ._errors import _failure_for
from ._fed_pause import _FedPause, pausable_fed
from ._language import MONTY_LANGUAGE
from ._namespaces import _RUN, _GuestModules, _RunSlot
from ._output import _PrintBuffer
from ._paused import _Paused
from ._pool import _WorkerPool
from ._stepping import _Restore, _Stepper
from ._type_check import _check_types
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
_KEPT_REVISIONS = 32


class MontySandbox(Sandbox):
    """Runs guest Python programs in Monty worker processes.

    Use ``async with MontySandbox() as sandbox`` or hand it to a ``Runtime``, which closes
    it when the runtime closes; it starts its pool on first use and can be started again
    after :meth:`aclose`.

    - ``memory_limit_bytes``: heap per run (256 MiB).
    - ``max_recursion_depth``: guest call depth (200). Monty also stops converting a value
      this deep, so it must be more than :data:`~mycelium._values.MAX_JSON_DEPTH`.
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
    language = MONTY_LANGUAGE
    suspends = True
    asyncio_only = True  # its worker pool and call tasks are asyncio's

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
        self.unenforced_limits = limits
        self.build_sha = f"pydantic-monty {pydantic_monty.__version__}"
        self._memory_limit = memory_limit_bytes
        self._recursion = max_recursion_depth
        self._max_calls = max_operation_calls
        self._max_in_flight = max_calls_in_flight
        self._max_print = max_print_bytes
        self._sleep_max = max_sleep_ms / 1000
        self._total_sleep = max_total_sleep_ms / 1000
        self._workspace = workspace
        self._workspace_limit = workspace_write_limit_bytes
        self._type_check = type_check
        self.guest_notes = (
            f"Files: {WORKSPACE_PATH} is this session's folder; files written there are still there in later "
            "runs of the same session, so keep state you need again in a file there and read it back."
            if workspace is not None
            else None
        )
        self._pool = _WorkerPool(max_processes=pool_size, max_checkouts_per_worker=max_checkouts_per_worker)
        self._revisions: OrderedDict[tuple[int, int, int, bool], _GuestModules] = OrderedDict()

    async def __aenter__(self) -> Self:
        await self._pool.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the worker pool. Idempotent; a later execute starts a new pool."""
        await self._pool.aclose()

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> JsonValue:
        """Run ``request.code`` in a fresh Monty session; see :mod:`mycelium.sandbox.monty` for limits.

        A ``suspendable`` request can pause: when a call's binding raises
        :class:`~mycelium.sandbox.DecisionDeferred`, the calls still in flight settle, the run is
        captured, and :class:`~mycelium.sandbox.Suspended` is raised. A program whose calls are
        each awaited where they are made, with nothing beside them, is fed whole and captured
        from inside the deferred call; any other is driven step by step.
        """
        return await self._run(request, signal, None)

    async def resume(
        self, request: SandboxRequest, state: bytes, pending: PendingCalls, signal: AbortSignal
    ) -> JsonValue:
        """Continue a run :meth:`execute` paused, in a fresh session (any process of this version).

        ``pending`` starts each call the run paused at (see
        :meth:`~mycelium.sandbox.Sandbox.resume`). Raises
        :class:`~mycelium.sandbox.Unrestorable` when ``state`` is not one this adapter can
        restore, or ``pending`` names other calls; nothing runs then.
        """
        paused = _Paused.unpack(state)
        if set(pending) != set(paused.deferred):
            raise Unrestorable("the calls to resume are not the calls the run paused at")
        return await self._run(request, signal, _Restore(paused, pending))

    async def _run(self, request: SandboxRequest, signal: AbortSignal, restore: _Restore | None) -> JsonValue:
        signal.throw_if_aborted()
        pool = await self._pool.start()
        # Without stubs nothing can be checked (every operation would look unknown); a resumed
        # program was checked before it first ran.
        type_check = self._type_check and bool(request.stubs) and restore is None
        guest = self._guest_modules(request, type_check)
        run = _GuestRun(request, self._max_calls, self._max_in_flight)
        # A run that may pause is fed whole when it can be captured from inside its deferred
        # call (see _fed_pause); else it is driven step by step, as a resumed one always is.
        fed_pause = None
        if request.suspendable and restore is None and pausable_fed(request.code, guest.modules):
            fed_pause = _FedPause(run)
            run.pausing = fed_pause.capture
        stepped = (request.suspendable and fed_pause is None) or restore is not None
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
        program, modules = guest.prepare(request.code, whole=type_check)
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
                external_modules=modules,
                os_policy={"sleep_system_max": self._sleep_max},
                type_check=type_check,
                type_check_format="json",
            ) as session:
                run.worker = _Worker(session, self._pool.exits)
                if fed_pause is not None:
                    fed_pause.session = session
                try:
                    if type_check:
                        await _check_types(session, guest, request.code, signal)
                    if stepper is not None:
                        feed = stepper.drive(session, program, printed, mount, restore)
                    else:
                        feed = session.feed_run(
                            program, print_callback=printed.write, mount=mount, skip_type_check=True
                        )
                        if fed_pause is not None:
                            feed = fed_pause.feed(feed)
                    value = await _until_stopped(feed, signal, worker=run.worker)
                    result = run.result(value, request.max_result_bytes)
                    if not run.all_settled():  # the common case waits for nothing: no stop to watch for
                        await _until_stopped(run.finish_started(printed), signal)
                    if stepper is not None:
                        stepper.note_undecided(printed)
                    completed = True
                except MontyError as exc:
                    failure = _failure_for(exc, run, guest, request.timeout_ms)
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
