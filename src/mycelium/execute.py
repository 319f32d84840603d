"""The execute tool: the one tool a model gets.

A model calls ``execute`` with ``{"code": "<python program>"}``. The tool validates the
arguments, builds a fresh :class:`~mycelium.bindings.Execution` (new ``execution_id``,
ordinals from zero), hands the program to the sandbox, and admits only a bounded JSON
value back. Every outcome is a :class:`ToolResult`; failures are typed and their text is
safe for the model, with a reference to the operator's evidence.
"""

from __future__ import annotations

import functools
import json
import logging
import textwrap
import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import anyio

from . import tracing
from .access import Decision, DecisionDeferred
from .admission import AdmissionPolicy, BackingWork, SandboxSlots, can_suspend
from .bindings import Execution, Invoker
from .discovery import (
    FORAGE_MODULE_ID,
    Catalog,
    NamespaceStubs,
    SemanticRanker,
    forage_bindings,
    namespace_outline,
    render_bounded,
)
from .errors import new_reference
from .failures import (
    Cancelled,
    CapabilityFailed,
    DeadlineExceeded,
    Failure,
    FailureEvidence,
    InvalidArguments,
    InvalidResult,
    ResultTooLarge,
    ResumeRefusal,
    SandboxBusy,
    SandboxError,
    SuspensionFailed,
    Unknown,
)
from .graph import InstalledOperation, OperationGraph
from .hooks import Observer, notify
from .modules import GUEST_IMPORTS
from .options import ExecutionOptions
from .sandbox import Sandbox, SandboxRequest, Suspended, SuspendingSandbox, Unrestorable
from .sandbox.boundary import failure_from_exception, sandbox_failure_message
from .signals import AbortController, AbortSignal
from .suspend import (
    SEAL_ON_LOOP_BYTES,
    StoreUnavailable,
    Suspension,
    SuspensionRecord,
    Suspensions,
    module_digests,
    now,
    paused_calls,
)
from .suspensions import StoredSuspension, SuspensionLimitReached
from .values import JsonTooLarge, JsonValue, NotJson, dumps_compact, json_size

__all__ = [
    "EXECUTE_INPUT_SCHEMA",
    "ExecuteServices",
    "ExecuteTool",
    "PreparedExecute",
    "RevisionView",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "bounded_json",
    "execute_definition",
]

logger = logging.getLogger("mycelium")

EXECUTE_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "The Python program to run."}},
    "required": ["code"],
    "additionalProperties": False,
}

_PROGRAM_FAULTS = frozenset({"syntax", "guest-exception", "invalid-result", "result-too-large", "invalid-arguments"})
_MAX_DESCRIPTION_CHARS = 8_192
_MAX_INLINE_STUB_CHARS = 4_096


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as a model is shown it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A model's call of a tool. ``arguments`` is a mapping or its JSON text."""

    id: str | None
    name: str
    arguments: Mapping[str, object] | str


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one execute.

    ``text`` is what the model reads: the compact JSON of ``value`` on success, the safe
    failure message otherwise. ``reference`` ties a failure to the operator's evidence.
    A run paused for a person's decision is neither: ``suspension`` says which call
    waits (``text`` tells the model not to retry), and ``Runtime.resume`` continues it.
    """

    text: str
    is_error: bool
    value: JsonValue = None
    failure: Failure | None = None
    logs: tuple[str, ...] = ()
    reference: str | None = None
    suspension: Suspension | None = None

    @property
    def suspended(self) -> bool:
        """Whether the run paused for a decision instead of finishing."""
        return self.suspension is not None

    @classmethod
    def failed(cls, failure: Failure, *, logs: tuple[str, ...] = ()) -> ToolResult:
        """A failed result whose text is the model-facing message for ``failure``."""
        # A capability failure already has the reference the host's evidence carries.
        reference = getattr(failure, "reference", None) or new_reference()
        return cls(
            text=sandbox_failure_message(failure, reference),
            is_error=True,
            failure=failure,
            logs=logs,
            reference=reference,
        )


class PreparedExecute:
    """A validated (or refused) execute call, ready to run once or more.

    Each :meth:`execute` is a fresh attempt: new ``execution_id``, ordinals from zero.
    """

    def __init__(self, tool: ExecuteTool, tool_call_id: str | None, code: str | None, failure: Failure | None):
        self._tool = tool
        self.tool_call_id = tool_call_id
        self.code = code
        self.failure = failure

    async def execute(
        self, signal: AbortSignal | None = None, *, approved: bool | None = None, suspension_id: str | None = None
    ) -> ToolResult:
        """Run the program, or return the argument failure without running anything.

        ``signal`` is the caller's: aborting it (or cancelling the awaiting task) stops the
        run, reported as ``cancelled``. ``approved`` is a person's decision for a framework
        that asks after a tool call paused and then replays the call: when this tool call's
        run is paused (see :mod:`mycelium.suspend`), it resumes with that decision. When it
        is not (it already resumed, or its pause is gone), nothing runs: the result is a
        ``suspension-failed`` failure (``not-found``), never the program started again.
        ``suspension_id`` names the pause the person was shown: a decision for any other
        pause decides nothing, and the result is the call's current pause, asked again.
        Without it, a decision applies only to the call's first pause; once the run has
        resumed and paused again, the new pause is asked again rather than decided by an
        answer given for the first (an approval delivered twice never approves more).
        """
        if self.code is None:
            failure = self.failure or InvalidArguments("no code")
            return await self._tool._fail(_Attempt(None, self.tool_call_id, ""), failure, None)
        return await self._tool._execute(self.code, self.tool_call_id, signal, approved, suspension_id)


@dataclass(frozen=True)
class ExecuteServices:
    """What every lease's execute tool shares with its runtime."""

    sandbox: Sandbox
    invoker: Invoker
    options: ExecutionOptions
    policy: AdmissionPolicy
    slots: SandboxSlots
    session_id: str | None
    on_sandbox_failure: Observer[FailureEvidence] | None
    suspensions: Suspensions | None = None


@dataclass
class _Attempt:
    """One execute attempt (or the resumed part of one) as the operator sees it."""

    execution_id: str | None
    """``None`` when nothing was started (invalid arguments)."""
    tool_call_id: str | None
    code: str
    started: float = field(default_factory=anyio.current_time)
    logs: list[str] = field(default_factory=list)
    spent_ms: int = 0
    """Run time used before this part began (a resumed run's earlier part)."""
    first_ordinal: int = 0
    resumed: bool = False
    """Whether this is the rest of a paused run."""
    execution: Execution | None = None
    """Set once the program is dispatched."""


@dataclass(frozen=True)
class _Resumption:
    """What a resumed part of a run starts from: the paused state and how each deferred call ends."""

    suspension_id: str
    state: bytes
    calls: Mapping[int, tuple[InstalledOperation | None, JsonValue, int, Decision | None]]
    """Sandbox call id -> (operation, or ``None`` when it is gone; input, ordinal, decision;
    ``None`` asks again)."""
    claim: Callable[[AbortSignal], Awaitable[None]] | None
    """Takes the suspension from the store once the run holds a slot; ``None`` for a pause
    that was never stored."""


class _Refused(Exception):
    """A suspension cannot resume, for ``reason``; nothing of it ran."""

    def __init__(self, reason: ResumeRefusal) -> None:
        self.reason = reason
        super().__init__(reason)


class _Stopped(Exception):
    """The run ended with a failure decided by the runtime, not raised by the sandbox."""

    def __init__(self, failure: Failure, cause: BaseException | None = None) -> None:
        self.failure = failure
        self.cause = cause


_DEADLINE = "deadline"
_CALLER = "caller"


@dataclass(frozen=True)
class RevisionView:
    """What every lease of one revision shares: its catalog, tool definition and request tables."""

    graph: OperationGraph
    catalog: Catalog
    definition: ToolDefinition
    namespace_paths: Mapping[str, tuple[str, ...]]
    module_ids: Mapping[str, str]
    stubs: Mapping[str, str]
    sources: Mapping[str, str] = field(default_factory=dict)
    """Source id -> version of the snapshots the graph was built from."""

    @functools.cached_property
    def has_confirm(self) -> bool:
        """Whether any operation asks a person first: only then can a run pause."""
        return any(target.operation.confirm for target in self.catalog.targets)

    @functools.cached_property
    def digests(self) -> dict[str, str]:
        """What a paused run relies on, module by module (see :func:`~mycelium.suspend.module_digests`)."""
        return module_digests(self.graph)

    @classmethod
    def build(
        cls,
        graph: OperationGraph,
        sandbox_notes: str | None = None,
        sources: Mapping[str, str] | None = None,
        semantic: SemanticRanker | None = None,
    ) -> RevisionView:
        """Build the view of ``graph`` once; leases of the revision reuse it."""
        catalog = Catalog(graph, semantic)
        return cls(
            graph=graph,
            catalog=catalog,
            definition=execute_definition(catalog, sandbox_notes),
            namespace_paths={"forage": ("forage",), **{m.transport: m.path for m in graph.modules}},
            module_ids={"forage": FORAGE_MODULE_ID, **{m.transport: m.id for m in graph.modules}},
            stubs=NamespaceStubs(catalog),
            sources=dict(sources or {}),
        )


class ExecuteTool:
    """The ``execute`` tool of one lease. Its graph, and so its bindings, never change."""

    def __init__(
        self, *, view: RevisionView, services: ExecuteServices, hold: Callable[[], AbstractContextManager[None]]
    ) -> None:
        self._view = view
        self._services = services
        self._options = services.options
        self._hold = hold
        self.definition = view.definition
        # Stepping a run costs more than feeding it whole: only a run that could pause is stepped.
        self._suspendable = services.suspensions is not None and can_suspend(services.sandbox) and view.has_confirm

    def prepare(self, call: ToolCall) -> PreparedExecute:
        """Validate a tool call's arguments. Bad arguments give a call whose result is ``invalid-arguments``."""
        with self._hold():
            try:
                code = self._parse(call)
            except _BadArguments as exc:
                return PreparedExecute(self, call.id, None, InvalidArguments(str(exc)))
            return PreparedExecute(self, call.id, code, None)

    async def run(self, code: str, tool_call_id: str | None = None, signal: AbortSignal | None = None) -> ToolResult:
        """Prepare and execute ``{"code": code}`` in one step."""
        call = ToolCall(id=tool_call_id, name="execute", arguments={"code": code})
        return await self.prepare(call).execute(signal)

    def _parse(self, call: ToolCall) -> str:
        if call.name != "execute":
            raise _BadArguments(f"this tool is 'execute', not {call.name!r}")
        arguments: object = call.arguments
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                raise _BadArguments("the arguments are not valid JSON") from None
        if not isinstance(arguments, Mapping):
            raise _BadArguments(f"the arguments must be an object, got {type(arguments).__name__}")
        extra = sorted(str(key) for key in arguments if key != "code")
        if extra:
            raise _BadArguments(f"unexpected argument(s) {', '.join(map(repr, extra))[:200]}")
        if "code" not in arguments:
            raise _BadArguments("the required argument 'code' is missing")
        code = arguments["code"]
        if not isinstance(code, str):
            raise _BadArguments(f"'code' must be a string, got {type(code).__name__}")
        size = len(code.encode("utf-8", "surrogatepass"))
        if size > self._options.max_code_bytes:
            raise _BadArguments(f"'code' is {size} bytes; the limit is {self._options.max_code_bytes}")
        return code

    async def _execute(
        self,
        code: str,
        tool_call_id: str | None,
        caller_signal: AbortSignal | None,
        approved: bool | None = None,
        suspension_id: str | None = None,
    ) -> ToolResult:
        with self._hold():
            suspensions = self._services.suspensions
            attempt = _Attempt(f"exec-{uuid.uuid4().hex}", tool_call_id, code)
            if suspensions is not None and tool_call_id is not None:
                # A framework that replays a tool call after approval resumes the paused run.
                try:
                    replayed = await self._replayed(
                        suspensions, code, tool_call_id, caller_signal, approved, suspension_id
                    )
                except StoreUnavailable as exc:
                    # Unknown whether this call paused before: running it again could repeat its writes.
                    return await self._fail(attempt, Unknown(), exc)
                if replayed is not None:
                    return replayed
            if approved is not None:
                # A decision is for a paused run. With none to resume (it finished, expired and was
                # purged, or never paused), starting the program again would repeat what it did.
                return await self._fail(attempt, SuspensionFailed(suspension_id="", reason="not-found"), None)
            return await self._run(attempt, None, caller_signal)

    async def resume(
        self, suspension_id: str, *, approved: bool | None = None, signal: AbortSignal | None = None
    ) -> ToolResult:
        """Continue the run paused as ``suspension_id`` with a person's decision on its pending call.

        ``approved`` is the decision (``None``: the one recorded with ``Runtime.decide``). The
        run's authority is read afresh: an approved call runs only if still granted; a
        declined one is refused, and the program handles the refusal as any other. The
        result is the run's own (or a new suspension at its next deferred decision). A
        suspension resumes at most once: it is claimed from the store once the run holds a
        sandbox slot, so a resume that could not start (no slot in time, cancelled before)
        leaves it there to try again. When it cannot resume, the result is a
        ``suspension-failed`` failure saying why, and nothing more of the run ran.
        """
        with self._hold():
            suspensions = self._services.suspensions
            if suspensions is None:
                raise ValueError("this runtime keeps no suspensions: give it Runtime(suspensions=Suspensions(...))")
            unstarted = _Attempt(None, None, "")  # for the evidence of a resume refused before it ran
            try:
                checked = await self._check(suspensions, suspension_id, approved)
            except StoreUnavailable as exc:
                return await self._fail(unstarted, Unknown(), exc)
            if not isinstance(checked, tuple):
                return await self._fail(unstarted, SuspensionFailed(suspension_id=suspension_id, reason=checked), None)
            stored, record, decision = checked
            first, *others = record.calls
            decisions: dict[int, Decision | None] = {first.call: "approved" if decision else "declined"}
            decisions.update((call.call, None) for call in others)
            claim = functools.partial(self._take, stored)
            return await self._run(*self._rest(record, decisions, record.logs, claim), signal)

    async def _replayed(
        self,
        suspensions: Suspensions,
        code: str,
        tool_call_id: str,
        signal: AbortSignal | None,
        approved: bool | None = None,
        suspension_id: str | None = None,
    ) -> ToolResult | None:
        """The outcome for a tool call that paused before, or ``None`` when this one is new.

        A paused call of this code that has expired, or whose record fails its seal, is not
        new either: it is refused, never run from the start again.
        """
        paused = await suspensions.of_call(self._services.session_id, tool_call_id, code)
        if paused is not None:
            stored, record = paused
            if record is None or record.expires_at <= now():
                return await self.resume(stored.id, signal=signal)  # refused as tampered or expired
            # A decision given for another pause (the one before this, delivered twice) must not
            # decide this one: it is asked again. A decision naming no pause is for the first.
            meant_for_another = stored.id != suspension_id if suspension_id is not None else record.resumed
            if meant_for_another:
                approved = None
            if approved is None and stored.decision is None:
                suspension = record.suspension()  # still waiting: the same answer, nothing runs
                return ToolResult(text=suspension.model_text(), is_error=False, suspension=suspension)
            return await self.resume(stored.id, approved=approved, signal=signal)
        return None

    async def _check(
        self, suspensions: Suspensions, suspension_id: str, approved: bool | None
    ) -> tuple[StoredSuspension, SuspensionRecord, bool] | ResumeRefusal:
        """Whether a suspension can resume here, with which decision; or why not.

        Nothing changes in the store: a suspension that cannot resume now (undecided, or
        its operations changed) is still there afterwards.
        """
        if not isinstance(suspension_id, str):
            return "not-found"
        stored = await suspensions.stored(lambda: suspensions.store.get(suspension_id))
        if stored is None:
            return "not-found"
        record = await suspensions.unsealed(stored)
        if record is None:
            return "tampered"
        if record.session_id != self._services.session_id:
            return "not-found"  # another session's suspension is not this one's to see
        if record.expires_at <= now():
            return "expired"
        recorded = suspensions.open_decision(suspension_id, stored.decision)
        if recorded is None and stored.decision is not None:
            return "tampered"
        if approved is None:
            if recorded is None:
                return "undecided"
            approved = recorded
        elif recorded is not None and recorded != approved:
            return "decided-otherwise"  # one person declined, another may not approve over it
        digests = self._view.digests
        if any(digests.get(module_id) != digest for module_id, digest in record.modules.items()):
            return "revision-changed"
        return stored, record, approved

    async def _take(self, stored: StoredSuspension, signal: AbortSignal) -> None:
        """Claim a checked suspension from the store, or raise why it cannot be had.

        A run stopped while the claim was under way gives the suspension back: nothing of it ran.
        """
        suspensions = self._services.suspensions
        assert suspensions is not None
        claimed = await suspensions.stored(lambda: suspensions.store.claim(stored.id, now=now()))
        if claimed is None:
            raise _Refused("already-resumed")
        if claimed.record != stored.record:
            raise _Refused("tampered")
        if signal.aborted:
            # Its own place, so the session's bound cannot refuse it.
            back = functools.partial(suspensions.store.put, claimed, max_per_session=suspensions.max_per_session + 1)
            with anyio.CancelScope(shield=True):
                await suspensions.stored(back)
            signal.throw_if_aborted()

    def _rest(
        self,
        record: SuspensionRecord,
        decisions: Mapping[int, Decision | None],
        logs: tuple[str, ...],
        claim: Callable[[AbortSignal], Awaitable[None]] | None,
        spent_ms: int | None = None,
    ) -> tuple[_Attempt, _Resumption]:
        """The rest of a paused run: its deferred calls end as ``decisions`` say.

        ``spent_ms`` is the run time used so far, when it is more than the record says.
        """
        graph = self._view.graph
        calls = {}
        for call in record.calls:
            module = graph.module(call.module_id)
            # The digests matched, so every call's operation is there; a missing one is refused in the run.
            target = module.operations.get(call.operation) if module is not None else None
            calls[call.call] = (target, call.arguments, call.ordinal, decisions[call.call])
        attempt = _Attempt(
            record.execution_id,
            record.tool_call_id,
            record.code,
            logs=list(logs),
            spent_ms=record.spent_ms if spent_ms is None else spent_ms,
            first_ordinal=record.next_ordinal,
            resumed=True,
        )
        return attempt, _Resumption(record.id, record.state, calls, claim)

    async def _run(
        self, attempt: _Attempt, resumption: _Resumption | None, caller_signal: AbortSignal | None
    ) -> ToolResult:
        """Run a program (or the rest of a paused one) to its result or its suspension.

        A pause the store cannot keep goes on at once with its deferred calls refused; a
        program that defers call after call goes round this loop, never deeper. With tracing
        on, it is one span, the parent of its operation calls' spans.
        """
        with tracing.run_span(
            "execute" if resumption is None else "resume",
            execution_id=attempt.execution_id,
            tool_call_id=attempt.tool_call_id,
            revision=self._view.graph.revision,
            suspension_id=resumption.suspension_id if resumption is not None else None,
        ) as span:
            result = await self._run_parts(attempt, resumption, caller_signal)
            failure = result.failure
            code = failure.code if failure is not None else "suspended" if result.suspended else "ok"
            tracing.outcome(span, code, failed=result.is_error, acknowledged=getattr(failure, "acknowledged", None))
            return result

    async def _run_parts(
        self, attempt: _Attempt, resumption: _Resumption | None, caller_signal: AbortSignal | None
    ) -> ToolResult:
        while True:
            outcome = await self._run_part(attempt, resumption, caller_signal)
            if isinstance(outcome, ToolResult):
                return outcome
            unavailable: dict[int, Decision | None] = {call.call: "unavailable" for call in outcome.calls}
            # The time spent trying to store the pause is the run's too.
            spent = attempt.spent_ms + round((anyio.current_time() - attempt.started) * 1000)
            attempt, resumption = self._rest(outcome, unavailable, tuple(attempt.logs), None, spent)

    async def _run_part(
        self, attempt: _Attempt, resumption: _Resumption | None, caller_signal: AbortSignal | None
    ) -> ToolResult | SuspensionRecord:
        """One part of a run: its result, or the record of a pause the store did not keep."""
        controller = AbortController()
        stop_following = (
            caller_signal.add_listener(lambda _: controller.abort(_CALLER)) if caller_signal is not None else None
        )
        deadline = attempt.started + (self._options.timeout_ms - attempt.spent_ms) / 1000
        paused: tuple[bytes, Mapping[int, DecisionDeferred]] | None = None
        try:
            value = await self._supervise(attempt, controller, deadline, resumption)
        except _Stopped as stopped:
            with anyio.CancelScope(shield=True):  # report what was decided even if cancelled now
                return await self._fail(attempt, stopped.failure, stopped.cause)
        except Suspended as suspended:
            # Kept outside this handler: an error while storing must not carry the paused
            # run (and its state) along as its context, into logs that outlive it.
            paused = (suspended.state, suspended.deferred)
        except (_Refused, Unrestorable) as exc:
            reason: ResumeRefusal = exc.reason if isinstance(exc, _Refused) else "unrestorable"
            suspension_id = resumption.suspension_id if resumption is not None else ""
            return await self._fail(attempt, SuspensionFailed(suspension_id=suspension_id, reason=reason), exc)
        except Exception as exc:
            return await self._fail(attempt, failure_from_exception(exc), exc)
        finally:
            if stop_following is not None:
                stop_following()
        if paused is not None:
            with anyio.CancelScope(shield=True):  # the run is captured: keep it even if cancelled now
                return await self._keep(attempt, *paused, deadline)
        return await self._admit(value, attempt)

    async def _keep(
        self, attempt: _Attempt, state: bytes, deferred: Mapping[int, DecisionDeferred], deadline: float
    ) -> ToolResult | SuspensionRecord:
        """Store a paused run and answer with its suspension; or, when it cannot be kept, its record.

        Storing is bounded by the store's timeout and by the run's own deadline.
        """
        suspensions = self._services.suspensions
        assert suspensions is not None
        assert attempt.execution is not None
        assert attempt.execution_id is not None
        created = now()
        record = SuspensionRecord(
            id=suspensions.new_id(),
            session_id=self._services.session_id,
            tool_call_id=attempt.tool_call_id,
            execution_id=attempt.execution_id,
            code=attempt.code,
            created_at=created,
            expires_at=created + suspensions.expires_after_ms / 1000,
            spent_ms=attempt.spent_ms + round((anyio.current_time() - attempt.started) * 1000),
            next_ordinal=attempt.execution.next_ordinal,
            sources=self._view.sources,
            modules=self._view.digests,
            calls=paused_calls(deferred),
            logs=tuple(attempt.logs),
            state=state,
            resumed=attempt.resumed,
        )
        limit = suspensions.max_state_bytes
        try:
            if len(record.state) > limit:  # refused before anything is hashed
                raise SuspensionLimitReached(
                    f"the paused run's state is {len(record.state)} bytes; the limit is {limit}"
                )
            # Sealing hashes the whole state: a large one is hashed off the event loop.
            if len(record.state) > SEAL_ON_LOOP_BYTES:
                stored = await anyio.to_thread.run_sync(suspensions.seal, record)
            else:
                stored = suspensions.seal(record)
            if len(stored.record) > limit:
                raise SuspensionLimitReached(
                    f"the paused run's record is {len(stored.record)} bytes; the limit is {limit}"
                )
            put = functools.partial(suspensions.store.put, stored, max_per_session=suspensions.max_per_session)
            await suspensions.stored(put, until=deadline)
        except SuspensionLimitReached as exc:
            # Nothing was stored, and nobody can be asked to wait for this one: it is refused
            # and the program goes on.
            logger.warning(
                "execute %s could not pause (%s); its deferred calls are refused", record.execution_id, str(exc)
            )
            return record
        except StoreUnavailable as exc:
            # Whether the store kept it is unknown (a write given up on may still land): going
            # on could run the rest twice, once here and once on a resume. The run ends here;
            # if the record did land, it resumes as any other.
            return await self._fail(attempt, Unknown(), exc)
        suspension = record.suspension()
        logger.info(
            "execute %s (tool call %s) paused at %s for a decision: suspension %s",
            record.execution_id,
            record.tool_call_id,
            suspension.path,
            suspension.id,
        )
        return ToolResult(text=suspension.model_text(), is_error=False, logs=tuple(attempt.logs), suspension=suspension)

    async def _supervise(
        self, attempt: _Attempt, controller: AbortController, deadline: float, resumption: _Resumption | None
    ) -> object:
        """Admit, dispatch and watch one run; return its value or raise what ended it.

        The deadline counts from the start of the attempt, so queueing for a slot does not
        restart it; a resumed run has what its earlier part left of the budget. An abort
        (deadline or caller) is followed by up to ``abort_grace_ms`` of waiting for the
        sandbox to settle; if it does not, the stop is unacknowledged and the backing work
        keeps its slot until it settles.
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
            controller.abort(_CALLER)
            with anyio.CancelScope(shield=True):
                acknowledged = work is None or await self._grace(work)
                await self._fail(attempt, Cancelled(acknowledged=acknowledged), None)
            raise
        if controller.signal.aborted or not work.settled.is_set():
            # Whoever aborted first decides: a late success after a caller's abort is still cancelled.
            by_caller = not controller.abort(_DEADLINE) and controller.signal.reason == _CALLER
            with anyio.CancelScope(shield=True):  # the outcome is decided; finish deciding it
                acknowledged = await self._grace(work)
            if by_caller:
                raise _Stopped(Cancelled(acknowledged=acknowledged))
            raise _Stopped(DeadlineExceeded(timeout_ms=self._options.timeout_ms, acknowledged=acknowledged))
        # Taken out of the work: the error's traceback holds the frame that holds the work, a
        # cycle that would keep a paused state alive until a full garbage collection.
        error, work.error = work.error, None
        try:
            if isinstance(error, Exception):
                raise error
            if error is not None:
                # An adapter's own cancellation or exit is not the caller's: it is foreign.
                raise _Stopped(Unknown(), cause=error)
        finally:
            error = None  # nor may this frame, which the traceback keeps, hold the error
        return work.value

    async def _wait_for_slot(self, attempt: _Attempt, controller: AbortController, deadline: float) -> None:
        """Queue for a sandbox slot; raise the failure when none opens in time. Nothing has run yet."""
        services = self._services
        if controller.signal.aborted:
            raise _Stopped(Cancelled(acknowledged=True))  # before dispatch: nothing starts
        wait_until = min(attempt.started + services.policy.admission_wait_ms / 1000, deadline)
        admission = await services.slots.admit(until=wait_until, signal=controller.signal)
        if admission == "aborted":
            raise _Stopped(Cancelled(acknowledged=True))
        if admission == "expired":
            if wait_until < deadline:
                waited_ms = round((anyio.current_time() - attempt.started) * 1000)
                raise _Stopped(SandboxBusy(capacity=services.slots.capacity, waited_ms=waited_ms))
            raise _Stopped(DeadlineExceeded(timeout_ms=self._options.timeout_ms, acknowledged=True))

    def _dispatch(
        self, attempt: _Attempt, controller: AbortController, deadline: float, resumption: _Resumption | None
    ) -> BackingWork:
        """Start the program in the slot just admitted; the work owns the slot until it settles.

        Everything that could fail happens inside the work, so the slot is always given back.
        """
        return self._services.slots.start(lambda: self._in_slot(attempt, controller.signal, deadline, resumption))

    async def _in_slot(
        self, attempt: _Attempt, signal: AbortSignal, deadline: float, resumption: _Resumption | None
    ) -> JsonValue:
        services = self._services
        assert attempt.execution_id is not None
        execution = attempt.execution = Execution(
            self._view.graph,
            services.invoker,
            execution_id=attempt.execution_id,
            tool_call_id=attempt.tool_call_id,
            session_id=services.session_id,
            signal=signal,
            # Made for each run: each run's discovery gets its own threads, so no run's
            # gathered searches queue another's.
            helpers={"forage": forage_bindings(self._view.catalog)},
            max_input_bytes=self._options.max_operation_input_bytes,
            max_inflight_input_bytes=self._options.max_inflight_input_bytes,
            suspendable=self._suspendable,
            first_ordinal=attempt.first_ordinal,
        )
        request = SandboxRequest(
            execution_id=attempt.execution_id,
            code=attempt.code,
            timeout_ms=max(1, round((deadline - anyio.current_time()) * 1000)),
            bindings=execution.bindings,
            namespace_paths=self._view.namespace_paths,
            modules=self._view.module_ids,
            session_id=services.session_id,
            on_log=attempt.logs.append,
            stubs=self._view.stubs,
            max_input_bytes=self._options.max_operation_input_bytes,
            max_result_bytes=self._options.max_result_bytes,
            suspendable=self._suspendable,
        )
        sandbox = services.sandbox
        if resumption is None:
            return await sandbox.execute(request, signal)
        if any(target is None for target, *_ in resumption.calls.values()):
            raise _Refused("revision-changed")
        assert isinstance(sandbox, SuspendingSandbox)  # only such a sandbox ever paused a run
        if resumption.claim is not None:
            signal.throw_if_aborted()  # stopped before it started: the suspension stays
            await resumption.claim(signal)
        pending = {
            call_id: functools.partial(execution.resume_call, target, arguments, ordinal, decision)
            for call_id, (target, arguments, ordinal, decision) in resumption.calls.items()
            if target is not None
        }
        return await sandbox.resume(request, resumption.state, pending, signal)

    async def _grace(self, work: BackingWork) -> bool:
        """Wait up to ``abort_grace_ms`` for aborted work to settle; whether it did."""
        with anyio.move_on_after(self._options.abort_grace_ms / 1000):
            await work.settled.wait()
        return work.settled.is_set()

    async def _admit(self, value: object, attempt: _Attempt) -> ToolResult:
        text = bounded_json(value, self._options.max_result_bytes)
        if not isinstance(text, str):
            return await self._fail(attempt, text, None)
        return ToolResult(text=text, is_error=False, value=value, logs=tuple(attempt.logs))  # type: ignore[arg-type]

    async def _fail(self, attempt: _Attempt, failure: Failure, cause: BaseException | None) -> ToolResult:
        result = ToolResult.failed(failure, logs=tuple(attempt.logs))
        services = self._services
        evidence = FailureEvidence(
            reference=result.reference or "",
            failure=failure,
            execution_id=attempt.execution_id,
            session_id=services.session_id,
            tool_call_id=attempt.tool_call_id,
            adapter=services.sandbox.adapter,
            build_sha=services.sandbox.build_sha,
            duration_ms=(anyio.current_time() - attempt.started) * 1000,
            cause=cause,
        )
        # The program's own mistakes are routine; the rest is the operator's concern.
        level = logging.INFO if failure.code in _PROGRAM_FAULTS else logging.WARNING
        logger.log(
            level,
            "execute %s (tool call %s) failed: %s, reference %s",
            evidence.execution_id,
            evidence.tool_call_id,
            failure.code,
            evidence.reference,
            # A host failure's traceback is already in the operation's own log, under the same reference.
            exc_info=None if isinstance(cause, SandboxError) or isinstance(failure, CapabilityFailed) else cause,
        )
        await notify(services.on_sandbox_failure, evidence, name="on_sandbox_failure")
        return result


def bounded_json(value: object, limit: int) -> str | InvalidResult | ResultTooLarge:
    """The compact JSON text of ``value``, or the failure that keeps it out. Nothing is truncated.

    The value is measured before it is written, and measuring stops at ``limit``: a value
    that shares one sub-value a million times costs no more than the limit to refuse.
    """
    try:
        json_size(value, limit=limit)
    except JsonTooLarge as exc:
        return ResultTooLarge(size=exc.size, limit=limit)
    except NotJson as exc:
        return InvalidResult(reason=str(exc))
    return dumps_compact(value)  # type: ignore[arg-type]  # json_size proved it is JSON


class _BadArguments(Exception):
    pass


def execute_definition(catalog: Catalog, sandbox_notes: str | None = None) -> ToolDefinition:
    """The ``execute`` tool as a model sees it, for the revision ``catalog`` describes."""
    description = execute_description(catalog, sandbox_notes=sandbox_notes)
    return ToolDefinition(name="execute", description=description, input_schema=EXECUTE_INPUT_SCHEMA)


def execute_description(
    catalog: Catalog,
    max_chars: int = _MAX_DESCRIPTION_CHARS,
    inline_chars: int = _MAX_INLINE_STUB_CHARS,
    sandbox_notes: str | None = None,
) -> str:
    """The execute tool's description: the guest language, how to call, how to discover, bounded.

    A small catalog (its stubs within ``inline_chars``) is declared in full; a larger one is
    shown as its namespace tree with operation counts, and the model discovers the rest.
    ``sandbox_notes`` is what the sandbox adds about itself (a workspace, for instance).
    """
    rules = _RULES + (f"{sandbox_notes.strip()}\n\n" if sandbox_notes else "")
    stubs = inline_stubs(catalog, inline_chars)
    body = (
        "These operations are available, as Python stubs. Call each by the path in the comment above it: "
        "`# <ns>.<op>` means `await <ns>.<op>(...)`.\n\n" + stubs
        if stubs is not None
        else "Namespaces (operation counts). Find operations with `await forage.search([...])` "
        "(two or three phrasings of what you need), then `await forage.describe(\"path\")` for the exact "
        "signature:\n\n"
        + namespace_outline(catalog, max_chars - len(rules) - 200)
    )
    text = rules + body
    if len(text) > max_chars:
        marker = "\n... (cut: use forage.list() and forage.describe(...) for the rest)"
        text = text[: max_chars - len(marker)] + marker
    return text


def inline_stubs(catalog: Catalog, inline_chars: int = _MAX_INLINE_STUB_CHARS) -> str | None:
    """The catalog's stubs if they fit in ``inline_chars`` and so are declared in the description in full.

    ``None`` when they do not: the model is then shown the namespace tree and discovers the rest.
    """
    stubs = render_bounded(list(catalog.targets), inline_chars + 1)
    return stubs if len(stubs) <= inline_chars and "more operations" not in stubs else None


_RULES_TEXT = """\
Run a short Python program in a fresh sandbox and get back its JSON result.

Language: a Python subset (Monty): functions, closures, classes, dataclasses, comprehensions,
f-strings, match, try/except, async/await and asyncio.gather. Not supported: class inheritance,
generators (yield), `del`, method decorators (@property, @staticmethod, @classmethod).
{imports}
The host's files, network and environment are out of reach: os and pathlib see no host file (unless a
workspace is described below) and os.environ is not available.

Calling operations (`<ns>.<op>` stands for a real operation path: see below, or find one with forage):
- Operations are async. Await each call and keep its result in a new name, never a namespace's:
  `found = await <ns>.<op>(name="value")`. Run several at once with
  `a, b = await asyncio.gather(<ns>.<op>(...), <ns>.<op2>(...))`.
- Pass keyword arguments, or one dict (`await <ns>.<op>({"name": "value"})`), not both. Values are
  JSON: dates and times are ISO 8601 strings; the stubs say each field's format and limits.
- Each namespace is a top-level name and is also under `env` (`await env.<ns>.<op>(...)`).
- Any call may be refused by the host: it then returns {"refused": True, "reason": ..., "message": ...}
  (`Refusal` in the stubs) and nothing ran. Check with `match found:` and
  `case {"refused": True, "message": message}:`, then act on the message.
- Bad arguments raise ValueError; a host failure raises RuntimeError with a reference.
- Discover with `await forage.search(["refund a payment", "give the customer their money back",
  "refunds.create"])`: search two or three ways at once (the user's words, your own, and the API
  verb and noun you expect); each phrasing a few words. Then `await forage.describe("path")` for
  the signature, or browse with `await forage.list("prefix")`.

Result: end with `return <value>` (or a final expression). It must be JSON (dicts with string keys,
lists, strings, finite numbers, booleans, None) and small; print() output comes back as logs. Each run
starts fresh: no variable, function or import survives to the next run.

"""
# The list of modules is the one installation checks names against: one list, probed by tests.
_RULES = _RULES_TEXT.replace(
    "{imports}",
    textwrap.fill(f"Modules you can import (no other imports work): {', '.join(sorted(GUEST_IMPORTS))}.", width=104),
)
