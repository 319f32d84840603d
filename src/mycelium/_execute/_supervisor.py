"""Supervision of one run: admit it to a sandbox slot, dispatch it, watch its deadline and its caller.

The deadline counts from the start of the attempt, so queueing for a slot does not restart
it; a resumed run has what its earlier part left of the budget. An abort (deadline or
caller) is followed by up to ``abort_grace_ms`` of waiting for the sandbox to settle; if
it does not, the stop is unacknowledged and the backing work keeps its slot until it
settles. Whoever aborted first decides how the run is reported.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import anyio

from .._access import Decision
from .._admission import BackingWork
from .._bindings import Execution
from .._discovery import forage_bindings
from .._graph import InstalledOperation
from .._signals import AbortController, AbortSignal
from .._values import JsonValue
from ..failures import Cancelled, DeadlineExceeded, Failure, SandboxBusy, Unknown
from ..sandbox import SandboxRequest
from ..suspensions._desk import ResumeRefused
from ._runlog import RunLine
from ._services import ExecuteServices
from ._view import RevisionView

__all__ = ["CALLER", "Attempt", "ResumedCall", "Resumption", "Stopped", "Supervisor"]

CALLER = "caller"
"""The abort reason when the caller stopped the run (as opposed to its deadline)."""
_DEADLINE = "deadline"


@dataclass
class Attempt:
    """One execute attempt (or the resumed part of one) as the operator sees it."""

    execution_id: str | None
    """``None`` when nothing was started (invalid arguments)."""
    tool_call_id: str | None
    code: str
    line: RunLine
    """The run log's line of the executor call this attempt belongs to."""
    started: float = field(default_factory=anyio.current_time)
    logs: list[str] = field(default_factory=list)
    spent_ms: int = 0
    """Run time used before this part began (a resumed run's earlier part)."""
    first_ordinal: int = 0
    resumed: bool = False
    """Whether this is the rest of a paused run."""
    execution: Execution | None = None
    """Set once the program is dispatched."""
    pause: AbortSignal | None = None
    """The host's request that the run pause at its next operation call (see ``PreparedExecute.execute``)."""
    traced: bool = False
    """Whether the run has a span, so its operation calls get theirs."""

    def elapsed_ms(self) -> int:
        """The run time used so far, earlier parts included."""
        return self.spent_ms + round((anyio.current_time() - self.started) * 1000)


@dataclass(frozen=True)
class ResumedCall:
    """A call a paused run deferred, as the rest of the run starts it."""

    target: InstalledOperation | None
    """The operation, or ``None`` when the revision no longer has it (the resume is then refused)."""
    arguments: JsonValue
    ordinal: int
    decision: Decision | None
    """How it ends: decided, or ``None`` to ask again (a call deferred beside the one decided)."""


@dataclass(frozen=True)
class Resumption:
    """What a resumed part of a run starts from: the paused state and how each deferred call ends."""

    suspension_id: str
    state: bytes
    calls: Mapping[int, ResumedCall]
    """By the sandbox's id for each call."""
    claim: Callable[[AbortSignal], Awaitable[None]] | None
    """Takes the suspension from the store once the run holds a slot; ``None`` for a pause that
    was never stored."""


class Stopped(Exception):
    """The run ended with a failure decided by the runtime, not raised by the sandbox."""

    def __init__(self, failure: Failure, cause: BaseException | None = None) -> None:
        self.failure = failure
        self.cause = cause


class Supervisor:
    """Admits, dispatches and watches the runs of one lease's execute tool."""

    def __init__(self, view: RevisionView, services: ExecuteServices, *, suspendable: bool) -> None:
        self._view = view
        self._services = services
        self._options = services.options
        self._suspendable = suspendable

    async def supervise(
        self,
        attempt: Attempt,
        controller: AbortController,
        deadline: float,
        resumption: Resumption | None,
        *,
        on_cancelled: Callable[[Cancelled], Awaitable[object]],
    ) -> object:
        """Admit, dispatch and watch one run; return its value or raise what ended it.

        Raises :class:`Stopped` for a stop the runtime decided (no slot in time, the
        deadline, the caller's signal), and whatever the sandbox raised otherwise
        (:class:`~mycelium.sandbox.Suspended` for a pause). When the task awaiting this is
        cancelled, the run is stopped, ``on_cancelled`` reports it (shielded), and the
        cancellation goes on.
        """
        work: BackingWork | None = None
        try:
            await self._wait_for_slot(attempt, controller, deadline)
            work = self._dispatch(attempt, controller, deadline, resumption)
            with anyio.CancelScope(deadline=deadline) as scope:
                stop_watching = controller.signal.add_listener(lambda _: scope.cancel())
                try:
                    await work.settled.wait()
                finally:
                    stop_watching()
        except anyio.get_cancelled_exc_class():
            # The task awaiting us was cancelled: that is the caller's cancellation too.
            controller.abort(CALLER)
            with anyio.CancelScope(shield=True):
                acknowledged = work is None or await self._grace(work)
                await on_cancelled(Cancelled(acknowledged=acknowledged))
            raise
        if controller.signal.aborted or not work.settled.is_set():
            # Whoever aborted first decides: a late success after a caller's abort is still cancelled.
            by_caller = not controller.abort(_DEADLINE) and controller.signal.reason == CALLER
            with anyio.CancelScope(shield=True):  # the outcome is decided; finish deciding it
                acknowledged = await self._grace(work)
            if by_caller:
                raise Stopped(Cancelled(acknowledged=acknowledged))
            raise Stopped(DeadlineExceeded(timeout_ms=self._options.timeout_ms, acknowledged=acknowledged))
        # Taken out of the work: the error's traceback holds the frame that holds the work, a
        # cycle that would keep a paused state alive until a full garbage collection.
        error, work.error = work.error, None
        try:
            if isinstance(error, Exception):
                raise error
            if error is not None:
                # An adapter's own cancellation or exit is not the caller's: it is foreign.
                raise Stopped(Unknown(), cause=error)
        finally:
            error = None  # nor may this frame, which the traceback keeps, hold the error
        return work.value

    async def _wait_for_slot(self, attempt: Attempt, controller: AbortController, deadline: float) -> None:
        """Queue for a sandbox slot; raise the failure when none opens in time. Nothing has run yet."""
        services = self._services
        if controller.signal.aborted:
            raise Stopped(Cancelled(acknowledged=True))  # before dispatch: nothing starts
        wait_until = min(attempt.started + services.policy.admission_wait_ms / 1000, deadline)
        admission = await services.slots.admit(until=wait_until, signal=controller.signal)
        if admission == "aborted":
            raise Stopped(Cancelled(acknowledged=True))
        if admission == "expired":
            if wait_until < deadline:
                waited_ms = round((anyio.current_time() - attempt.started) * 1000)
                raise Stopped(SandboxBusy(capacity=services.slots.capacity, waited_ms=waited_ms))
            raise Stopped(DeadlineExceeded(timeout_ms=self._options.timeout_ms, acknowledged=True))

    def _dispatch(
        self, attempt: Attempt, controller: AbortController, deadline: float, resumption: Resumption | None
    ) -> BackingWork:
        """Start the program in the slot just admitted; the work owns the slot until it settles.

        Everything that could fail happens inside the work, so the slot is always given back.
        """
        run = functools.partial(self._in_slot, attempt, controller.signal, deadline, resumption)
        return self._services.slots.start(run, self._services.tasks)

    async def _in_slot(
        self, attempt: Attempt, signal: AbortSignal, deadline: float, resumption: Resumption | None
    ) -> JsonValue:
        services = self._services
        view = self._view
        assert attempt.execution_id is not None
        execution = attempt.execution = Execution(
            view.graph,
            services.invoker,
            execution_id=attempt.execution_id,
            tool_call_id=attempt.tool_call_id,
            session_id=services.session_id,
            signal=signal,
            # Made for each run: each run's discovery gets its own threads, so no run's
            # gathered searches queue another's.
            helpers={"forage": forage_bindings(view.catalog)},
            max_input_bytes=self._options.max_operation_input_bytes,
            max_inflight_input_bytes=self._options.max_inflight_input_bytes,
            suspendable=self._suspendable,
            first_ordinal=attempt.first_ordinal,
            pause=attempt.pause,
            traced=attempt.traced,
        )
        request = SandboxRequest(
            execution_id=attempt.execution_id,
            code=attempt.code,
            timeout_ms=max(1, round((deadline - anyio.current_time()) * 1000)),
            bindings=execution.bindings,
            namespace_paths=view.namespace_paths,
            modules=view.module_ids,
            session_id=services.session_id,
            on_log=attempt.logs.append,
            stubs=view.stubs,
            max_input_bytes=self._options.max_operation_input_bytes,
            max_result_bytes=self._options.max_result_bytes,
            suspendable=self._suspendable,
        )
        sandbox = services.sandbox
        if resumption is None:
            return await sandbox.execute(request, signal)
        if any(call.target is None for call in resumption.calls.values()):
            raise ResumeRefused("revision-changed")
        if resumption.claim is not None:
            signal.throw_if_aborted()  # stopped before it started: the suspension stays
            await resumption.claim(signal)
        pending = {
            call_id: functools.partial(execution.resume_call, call.target, call.arguments, call.ordinal, call.decision)
            for call_id, call in resumption.calls.items()
            if call.target is not None
        }
        return await sandbox.resume(request, resumption.state, pending, signal)

    async def _grace(self, work: BackingWork) -> bool:
        """Wait up to ``abort_grace_ms`` for aborted work to settle; whether it did."""
        with anyio.move_on_after(self._options.abort_grace_ms / 1000):
            await work.settled.wait()
        return work.settled.is_set()
