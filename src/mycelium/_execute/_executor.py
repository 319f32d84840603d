"""A program's whole run: fresh, replayed after approval, or resumed from a pause; and how it is reported.

Every outcome is a :class:`~mycelium.ToolResult`. A failure's text is safe for the model
and carries a reference; its evidence goes to the operator (the run log and
``on_sandbox_failure``). Every call of the executor writes one line to the run log (see
:mod:`._runlog`) when it ends, whatever the outcome. A run that pauses at a deferred
decision is kept by the lease's :class:`~mycelium.suspensions._desk.SuspensionDesk`; one
that cannot be kept goes on at once with its deferred calls refused, round a loop, never
deeper.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager

import anyio

from .. import _tracing
from .._access import Decision, DecisionDeferred
from .._hooks import notify
from .._signals import AbortController, AbortSignal
from .._tool_calls import ToolResult, bounded_json
from ..failures import (
    Cancelled,
    DeadlineExceeded,
    Failure,
    FailureEvidence,
    InvalidArguments,
    SuspensionFailed,
    Unknown,
)
from ..sandbox import Suspended, Unrestorable
from ..sandbox._boundary import failure_from_exception
from ..suspensions import StoreUnavailable, _records
from ..suspensions._desk import ResumeRefused, SuspensionDesk
from ..suspensions._records import SuspensionRecord, paused_calls
from ..suspensions._suspensions import NO_SUSPENSIONS
from ._runlog import RunLine, logged, outcome_code
from ._services import ExecuteServices
from ._supervisor import CALLER, Attempt, ResumedCall, Resumption, Stopped, Supervisor
from ._view import RevisionView

__all__ = ["Executor"]

logger = logging.getLogger("mycelium")


class Executor:
    """Runs one lease's programs; each run is a fresh attempt (new ``execution_id``, ordinals from zero)."""

    def __init__(self, view: RevisionView, services: ExecuteServices, *, suspendable: bool) -> None:
        self._view = view
        self._services = services
        self._supervisor = Supervisor(view, services, suspendable=suspendable)
        suspensions = services.suspensions
        self._desk = (
            SuspensionDesk(suspensions, session_id=services.session_id, digests=view.digests)
            if suspensions is not None
            else None
        )

    async def execute(
        self,
        code: str,
        tool_call_id: str | None,
        caller_signal: AbortSignal | None,
        approved: bool | None,
        suspension_id: str | None,
        pause: AbortSignal | None = None,
    ) -> ToolResult:
        """Run ``code``, or resume the run this tool call paused before (see ``PreparedExecute.execute``)."""
        with self._line(tool_call_id) as line:
            return line.answered(
                await self._execute(line, code, tool_call_id, caller_signal, approved, suspension_id, pause)
            )

    async def _execute(
        self,
        line: RunLine,
        code: str,
        tool_call_id: str | None,
        caller_signal: AbortSignal | None,
        approved: bool | None,
        suspension_id: str | None,
        pause: AbortSignal | None,
    ) -> ToolResult:
        attempt = Attempt(f"exec-{uuid.uuid4().hex}", tool_call_id, code, line, pause=pause)
        desk = self._desk
        if desk is not None and tool_call_id is not None:
            # A framework that replays a tool call after approval resumes the paused run.
            try:
                replay = await desk.replayed(tool_call_id, code, approved, suspension_id)
            except StoreUnavailable as exc:
                # Unknown whether this call paused before: running it again could repeat its writes.
                return await self.fail(attempt, Unknown(), exc)
            if replay is not None:
                if replay.waiting is not None:  # still waiting: the same answer, nothing runs
                    return ToolResult(text=replay.waiting.model_text(), is_error=False, suspension=replay.waiting)
                return await self._resume(line, replay.suspension_id, replay.approved, caller_signal, pause)
        if approved is not None:
            # A decision is for a paused run. With none to resume (it finished, expired and was
            # purged, or never paused), starting the program again would repeat what it did.
            return await self.fail(attempt, SuspensionFailed(suspension_id="", reason="not-found"), None)
        return await self._run(attempt, None, caller_signal)

    async def resume(
        self,
        suspension_id: str,
        approved: bool | None,
        signal: AbortSignal | None,
        pause: AbortSignal | None = None,
    ) -> ToolResult:
        """Continue the run paused as ``suspension_id`` (see ``ExecuteTool.resume`` for what is guaranteed)."""
        if self._desk is None:
            raise ValueError(NO_SUSPENSIONS)
        with self._line(None) as line:
            return line.answered(await self._resume(line, suspension_id, approved, signal, pause))

    async def _resume(
        self,
        line: RunLine,
        suspension_id: str,
        approved: bool | None,
        signal: AbortSignal | None,
        pause: AbortSignal | None,
    ) -> ToolResult:
        desk = self._desk
        assert desk is not None  # only a lease with suspensions resumes
        line.resumed = True
        unstarted = Attempt(None, None, "", line)  # for the evidence of a resume refused before it ran
        try:
            resumable = await desk.resumable(suspension_id, approved)
        except StoreUnavailable as exc:
            return await self.fail(unstarted, Unknown(), exc)
        except ResumeRefused as refused:
            return await self.fail(
                unstarted, SuspensionFailed(suspension_id=suspension_id, reason=refused.reason), None
            )
        record = resumable.record
        # A handed-off run's calls were never decided: each goes through the gate afresh.
        decisions: dict[int, Decision | None] = {call.call: None for call in record.calls}
        if resumable.approved is not None:
            decisions[record.calls[0].call] = "approved" if resumable.approved else "declined"
        claim = functools.partial(desk.claim, resumable)
        return await self._run(*self._rest(line, record, decisions, record.logs, claim, pause=pause), signal)

    async def fail(self, attempt: Attempt, failure: Failure, cause: BaseException | None) -> ToolResult:
        """The failed result for ``failure``, its evidence handed to ``on_sandbox_failure`` and the run log."""
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
        attempt.line.failed(attempt.execution_id, result, cause)
        await notify(services.on_sandbox_failure, evidence, name="on_sandbox_failure")
        return result

    async def refuse(self, tool_call_id: str | None, failure: InvalidArguments) -> ToolResult:
        """The result for a call whose arguments were refused: nothing was started."""
        with self._line(tool_call_id) as line:
            return line.answered(await self.fail(Attempt(None, tool_call_id, "", line), failure, None))

    def _line(self, tool_call_id: str | None) -> AbstractContextManager[RunLine]:
        """The run log's line for one call of the executor, written when the call ends."""
        return logged(RunLine(self._services.requester, tool_call_id))

    def _rest(
        self,
        line: RunLine,
        record: SuspensionRecord,
        decisions: Mapping[int, Decision | None],
        logs: tuple[str, ...],
        claim: Callable[[AbortSignal], Awaitable[None]] | None,
        spent_ms: int | None = None,
        pause: AbortSignal | None = None,
    ) -> tuple[Attempt, Resumption]:
        """The rest of a paused run: its deferred calls end as ``decisions`` say.

        ``spent_ms`` is the run time used so far, when it is more than the record says.
        """
        graph = self._view.graph
        calls = {}
        for call in record.calls:
            module = graph.module(call.module_id)
            # The digests matched, so every call's operation is there; a missing one is refused in the run.
            target = module.operations.get(call.operation) if module is not None else None
            calls[call.call] = ResumedCall(target, call.arguments, call.ordinal, decisions[call.call])
        attempt = Attempt(
            record.execution_id,
            record.tool_call_id,
            record.code,
            line,
            logs=list(logs),
            spent_ms=record.spent_ms if spent_ms is None else spent_ms,
            first_ordinal=record.next_ordinal,
            resumed=True,
            pause=pause,
        )
        return attempt, Resumption(record.id, record.state, calls, claim)

    async def _run(
        self, attempt: Attempt, resumption: Resumption | None, caller_signal: AbortSignal | None
    ) -> ToolResult:
        """Run a program (or the rest of a paused one) to its result or its suspension.

        A pause the store cannot keep goes on at once with its deferred calls refused; a
        program that defers call after call goes round this loop, never deeper. With tracing
        on, it is one span, the parent of its operation calls' spans.
        """
        with _tracing.run_span(
            "execute" if resumption is None else "resume",
            execution_id=attempt.execution_id,
            tool_call_id=attempt.tool_call_id,
            revision=self._view.graph.revision,
            suspension_id=resumption.suspension_id if resumption is not None else None,
        ) as span:
            while True:
                attempt.traced = span is not None
                try:
                    outcome = await self._run_part(attempt, resumption, caller_signal)
                finally:
                    execution = attempt.execution
                    placed = execution.next_ordinal - attempt.first_ordinal if execution is not None else 0
                    attempt.line.ran(attempt.execution_id, attempt.tool_call_id, placed)
                if isinstance(outcome, ToolResult):
                    break
                # Nobody can be asked: the calls that wait for a person are refused. A handoff that
                # could not be kept is not tried again: its calls go on here, through the gate.
                unavailable: dict[int, Decision | None] = {
                    call.call: None if call.handed_off else "unavailable" for call in outcome.calls
                }
                # The time spent trying to store the pause is the run's too.
                attempt, resumption = self._rest(
                    attempt.line, outcome, unavailable, tuple(attempt.logs), None, attempt.elapsed_ms()
                )
            failure = outcome.failure
            acknowledged = failure.acknowledged if isinstance(failure, DeadlineExceeded | Cancelled) else None
            _tracing.outcome(span, outcome_code(outcome), failed=outcome.is_error, acknowledged=acknowledged)
            return outcome

    async def _run_part(
        self, attempt: Attempt, resumption: Resumption | None, caller_signal: AbortSignal | None
    ) -> ToolResult | SuspensionRecord:
        """One part of a run: its result, or the record of a pause the store did not keep."""
        controller = AbortController()
        stop_following = (
            caller_signal.add_listener(lambda _: controller.abort(CALLER)) if caller_signal is not None else None
        )
        deadline = attempt.started + (self._services.options.timeout_ms - attempt.spent_ms) / 1000
        paused: tuple[bytes, Mapping[int, DecisionDeferred]] | None = None
        try:
            value = await self._supervisor.supervise(
                attempt,
                controller,
                deadline,
                resumption,
                on_cancelled=lambda failure: self.fail(attempt, failure, None),
            )
        except Stopped as stopped:
            with anyio.CancelScope(shield=True):  # report what was decided even if cancelled now
                return await self.fail(attempt, stopped.failure, stopped.cause)
        except Suspended as suspended:
            # Kept outside this handler: an error while storing must not carry the paused
            # run (and its state) along as its context, into logs that outlive it.
            paused = (suspended.state, suspended.deferred)
        except (ResumeRefused, Unrestorable) as exc:
            suspension_id = resumption.suspension_id if resumption is not None else ""
            if isinstance(exc, ResumeRefused):
                # A refusal its reason says all of (another resume won the claim, say), as before the run:
                # no traceback for the operator to read into.
                return await self.fail(attempt, SuspensionFailed(suspension_id=suspension_id, reason=exc.reason), None)
            return await self.fail(attempt, SuspensionFailed(suspension_id=suspension_id, reason="unrestorable"), exc)
        except Exception as exc:
            return await self.fail(attempt, failure_from_exception(exc), exc)
        finally:
            if stop_following is not None:
                stop_following()
        if paused is not None:
            with anyio.CancelScope(shield=True):  # the run is captured: keep it even if cancelled now
                return await self._keep(attempt, *paused, deadline)
        return await self._admit(value, attempt)

    async def _keep(
        self, attempt: Attempt, state: bytes, deferred: Mapping[int, DecisionDeferred], deadline: float
    ) -> ToolResult | SuspensionRecord:
        """Store a paused run and answer with its suspension; or, when it cannot be kept, its record.

        Storing is bounded by the store's timeout and by the run's own deadline.
        """
        desk = self._desk
        assert desk is not None  # only a run that may pause is given a store
        assert attempt.execution is not None
        assert attempt.execution_id is not None
        created = _records.now()
        record = SuspensionRecord(
            id=desk.new_record_id(),
            session_id=self._services.session_id,
            tool_call_id=attempt.tool_call_id,
            execution_id=attempt.execution_id,
            code=attempt.code,
            created_at=created,
            expires_at=desk.expiry(created),
            spent_ms=attempt.elapsed_ms(),
            next_ordinal=attempt.execution.next_ordinal,
            sources=self._view.sources,
            modules=self._view.digests,
            calls=paused_calls(deferred),
            logs=tuple(attempt.logs),
            state=state,
            resumed=attempt.resumed,
            requester=self._services.requester,
        )
        try:
            kept = await desk.keep(record, until=deadline)
        except StoreUnavailable as exc:
            # Whether the store kept it is unknown (a write given up on may still land): going
            # on could run the rest twice, once here and once on a resume. The run ends here;
            # if the record did land, it resumes as any other.
            return await self.fail(attempt, Unknown(), exc)
        if not kept:
            return record  # nobody can be asked to wait for this one: its calls are refused, the program goes on
        suspension = record.suspension()
        logger.info(
            "execute %s (tool call %s) paused at %s %s: suspension %s",
            record.execution_id,
            record.tool_call_id,
            suspension.path,
            "as its host handed it off" if record.handed_off else "for a decision",
            suspension.id,
        )
        return ToolResult(text=suspension.model_text(), is_error=False, logs=tuple(attempt.logs), suspension=suspension)

    async def _admit(self, value: object, attempt: Attempt) -> ToolResult:
        text = bounded_json(value, self._services.options.max_result_bytes)
        if not isinstance(text, str):
            return await self.fail(attempt, text, None)
        return ToolResult(text=text, is_error=False, value=value, logs=tuple(attempt.logs))  # type: ignore[arg-type]
