"""The execute tool: the one tool a model gets, as one lease offers it.

A model calls ``execute`` with ``{"code": "<python program>"}``. The tool validates the
arguments, runs the program in a fresh sandbox (new ``execution_id``, ordinals from
zero), and admits only a bounded JSON value back. Every outcome is a
:class:`~mycelium.ToolResult`; failures are typed and their text is safe for the model,
with a reference to the operator's evidence.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager

from .._handed_out import HandedOut
from .._signals import AbortSignal
from .._tool_calls import ToolCall, ToolDefinition, ToolResult
from ..failures import InvalidArguments
from ._executor import Executor
from ._services import ExecuteServices
from ._view import RevisionView

__all__ = ["ExecuteTool", "PreparedExecute"]

Hold = Callable[[], AbstractContextManager[None]]
"""Holds the lease for the length of a call (refusing one on a released lease)."""


class PreparedExecute(HandedOut):
    """A validated (or refused) execute call, ready to run once or more. Get one from :meth:`ExecuteTool.prepare`.

    Each :meth:`execute` is a fresh attempt: new ``execution_id``, ordinals from zero.
    """

    _handed_out_by = "ExecuteTool.prepare()"
    tool_call_id: str | None
    code: str | None
    """The program, or ``None`` when the arguments were refused."""
    failure: InvalidArguments | None
    """Why the arguments were refused, if they were."""
    _executor: Executor
    _hold: Hold

    @classmethod
    def _prepared(
        cls,
        executor: Executor,
        hold: Hold,
        tool_call_id: str | None,
        code: str | None,
        failure: InvalidArguments | None,
    ) -> PreparedExecute:
        return cls._made(_executor=executor, _hold=hold, tool_call_id=tool_call_id, code=code, failure=failure)

    async def execute(
        self,
        signal: AbortSignal | None = None,
        *,
        approved: bool | None = None,
        suspension_id: str | None = None,
        pause: AbortSignal | None = None,
    ) -> ToolResult:
        """Run the program, or return the argument failure without running anything.

        ``signal`` is the caller's: aborting it (or cancelling the awaiting task) stops the
        run, reported as ``cancelled``. ``approved`` is a person's decision for a framework
        that asks after a tool call paused and then replays the call: when this tool call's
        run is paused (see :mod:`mycelium.suspensions`), it resumes with that decision. When
        it is not, nothing runs: the result is a ``suspension-failed`` failure
        (``already-resumed`` while the resumed pause's tombstone lasts, until it would have
        expired; ``not-found`` once it is purged), never the program started again.
        ``suspension_id`` names the pause the person was shown: a decision for any other
        pause decides nothing, and the result is the call's current pause, asked again.
        Without it, a decision applies only to the call's first pause; once the run has
        resumed and paused again, the new pause is asked again rather than decided by an
        answer given for the first (an approval delivered twice never approves more).

        ``pause`` hands the run off: once it is aborted, a run that can pause (one stepped
        because it may meet a deferred decision) pauses at its next new operation call, the
        calls already placed settling first, and the result is its suspension with
        ``handed_off`` set. Resuming it, in this process or any other sharing the store, needs
        no decision; the call it paused at goes through the gate afresh. A server that stops
        hands its runs off so that another replica finishes them. A run fed whole cannot pause:
        it goes on.
        """
        if self.code is None:
            return await self._executor.refuse(self.tool_call_id, self.failure or InvalidArguments("no code"))
        with self._hold():
            return await self._executor.execute(self.code, self.tool_call_id, signal, approved, suspension_id, pause)


class ExecuteTool(HandedOut):
    """The ``execute`` tool of one lease; get it from ``Lease.execute_tool``.

    Its graph, and so its bindings, never change.
    """

    _handed_out_by = "Lease.execute_tool"
    definition: ToolDefinition
    """The tool as a model is shown it."""
    _executor: Executor
    _hold: Hold
    _max_code_bytes: int

    @classmethod
    def _for_lease(cls, view: RevisionView, services: ExecuteServices, hold: Hold) -> ExecuteTool:
        # Stepping a run costs more than feeding it whole: only a run that could pause is stepped.
        suspendable = services.suspensions is not None and services.sandbox.suspends and view.has_confirm
        return cls._made(
            definition=view.definition,
            _executor=Executor(view, services, suspendable=suspendable),
            _hold=hold,
            _max_code_bytes=services.options.max_code_bytes,
        )

    def prepare(self, call: ToolCall) -> PreparedExecute:
        """Validate a tool call's arguments. Bad arguments give a call whose result is ``invalid-arguments``."""
        with self._hold():
            code, failure = self._checked(call)
            return PreparedExecute._prepared(self._executor, self._hold, call.id, code, failure)

    async def run(self, code: str, tool_call_id: str | None = None, signal: AbortSignal | None = None) -> ToolResult:
        """Prepare and execute ``{"code": code}`` in one step."""
        # What prepare() then execute() do, under one hold of the lease and with no prepared call made.
        with self._hold():
            checked, failure = self._checked(ToolCall(id=tool_call_id, name="execute", arguments={"code": code}))
            if checked is None:
                return await self._executor.refuse(tool_call_id, failure or InvalidArguments("no code"))
            return await self._executor.execute(checked, tool_call_id, signal, None, None)

    async def resume(
        self,
        suspension_id: str,
        *,
        approved: bool | None = None,
        signal: AbortSignal | None = None,
        pause: AbortSignal | None = None,
    ) -> ToolResult:
        """Continue the run paused as ``suspension_id`` with a person's decision on its pending call.

        ``approved`` is the decision (``None``: the one recorded with ``Runtime.decide``). The
        run's authority is read afresh: an approved call runs only if still granted; a
        declined one is refused, and the program handles the refusal as any other. The
        result is the run's own (or a new suspension at its next deferred decision). A
        suspension resumes at most once: it is claimed from the store once the run holds a
        sandbox slot, so a resume that could not start (no slot in time, cancelled before)
        leaves it there to try again; a claimed one leaves a tombstone until it would have
        expired, and resuming it again is refused as ``already-resumed``. When it cannot
        resume, the result is a ``suspension-failed`` failure saying why, and nothing more
        of the run ran. A handed-off run (``Suspension.handed_off``) needs no decision and
        ignores one given. ``pause`` hands the resumed run off again (see ``PreparedExecute.execute``).
        """
        with self._hold():
            return await self._executor.resume(suspension_id, approved, signal, pause)

    def _checked(self, call: ToolCall) -> tuple[str | None, InvalidArguments | None]:
        """The call's program, or why its arguments are refused."""
        try:
            return self._parse(call), None
        except _BadArguments as exc:
            return None, InvalidArguments(str(exc), advice=exc.advice)

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
        try:
            size = len(code.encode("utf-8"))
        except UnicodeEncodeError:
            raise _BadArguments("'code' is not Unicode text: it holds a lone surrogate") from None
        if size > self._max_code_bytes:
            raise _BadArguments(f"'code' is {size} bytes; the limit is {self._max_code_bytes}", advice=_SPLIT_THE_WORK)
        return code


_SPLIT_THE_WORK = (
    "Split the work into several smaller executes, and keep data out of the code: "
    "let the program read it with an operation instead of writing it into the program."
)


class _BadArguments(Exception):
    def __init__(self, message: str, *, advice: str | None = None) -> None:
        super().__init__(message)
        self.advice = advice
