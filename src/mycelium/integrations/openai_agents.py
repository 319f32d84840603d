"""OpenAI Agents SDK: the runtime's ``execute`` tool as the SDK's function tools.

::

    async with MyceliumTools(runtime) as mycelium:
        agent = Agent(name="notes", model=model, tools=mycelium.tools)
        result = await Runner.run(agent, "tidy my notes")

The block holds one lease and releases it when it ends, also on failure and cancellation.
A ``RunState`` resumes with the agent that made it, so to continue that agent later (after
an approval), enter the same ``MyceliumTools`` again: ``async with mycelium: await
Runner.run(agent, state)``; its tools then run on the new block's lease. One
``MyceliumTools`` serves one block at a time. The SDK's tool call id is each execute's
``tool_call_id``, and the model reads :func:`~mycelium.integrations.model_output`.

**Failures are tool output.** The SDK has no retry request and no per-tool retry budget: it
reports a failing tool to the model as the tool's output text (its ``failure_error_function``
turns an exception into a string), and the only budget is the run's ``max_turns``. So
every failure, one the model can fix (:data:`~mycelium.integrations.MODEL_FIXABLE`) or not,
is the tool's output, whose text already says what to change and whether to run again.
Raising instead would add nothing the model reads and could end the run.

**Approval.** The SDK asks a person only *before* a tool runs (``needs_approval``), once per
tool call: a call it interrupted for is never checked again, also when a ``RunState`` is
resumed from ``to_json`` in another process. A program pauses *inside* its run. So the
``execute`` tool runs the program in its ``needs_approval`` check:

- a program that finishes answers "no approval needed", and the SDK hands its result to
  the model (the tool returns it; nothing runs twice);
- a program that reaches a ``confirm`` operation the host defers (``Access(confirm=defer)``
  with ``Runtime(suspensions=...)``) pauses there, and the SDK interrupts the run with a
  ``ToolApprovalItem``. ``await mycelium.pending(item)`` is the
  :class:`~mycelium.Suspension` the person decides on: the exact operation path and
  arguments. After ``state.approve(item)`` and ``Runner.run(agent, state)``, the SDK calls
  the tool, which executes the same call id and code approved: the paused program resumes
  at that call and nothing it already did runs again;
- after ``await mycelium.reject(state, item, rejection_message=...)`` the SDK answers the
  model with the message and never calls the tool: nothing more of the program runs, and
  the decline is recorded, so the pending call cannot be approved later. With a bare
  ``state.reject(item)`` the pause is left to expire.

A resumed program may pause again at a later ``confirm``. The SDK interrupts only before a
call runs and only for a call it has not decided; a running function tool has no public way
to interrupt. So a call whose resumed program pauses again ends with output telling the
model the program paused and to call ``resume`` with the suspension id. That new call goes
through the SDK's approval like the first (``pending(item)`` names its operation), and
approved, the same program continues where it stopped. Each further confirmation costs the
model one ``resume`` call; if it makes none, the pause expires and nothing after it runs.
``resume`` is offered only when a program can pause.

What is guaranteed: the person approves exactly the call ``pending(item)`` shows; a
rejected call never runs, nor anything after it. An approved call continues the paused
program and runs nothing it already did while the runtime's suspension store holds the
pause: until the program is resumed, and until it expires (an approval after that is
refused, and nothing runs). A pause kept in ``MemorySuspensions`` ends with its process:
to approve in another process, give the runtime a store every process shares
(``SqliteSuspensions``, ``PostgresSuspensions``), open a block there and load the state with
``RunState.from_json`` and an agent using that block's tools. A call approved after its
pause is gone (purged, lost with the process, or already resumed because the same saved
state was approved and run twice) runs nothing. An approval applies only to the pause it
was asked for: when the program has since paused again, the new pause is asked about
through ``resume``, never approved by the old answer.

The program runs in the approval check, so before the SDK's tool start hooks and tool
input guardrails (a guardrail cannot stop it). Each pause is its own decision: a standing
approval (``always_approve=True``) approves no confirm call. The SDK then skips the check,
so an ``execute`` runs its program in the tool, and a pause there goes the ``resume`` way;
an always-approved ``resume`` decides nothing, and the pause waits for a decision the host
records (``Runtime.decide``). To let confirm operations run without asking, say so in the
host's ``Access(confirm=...)``.

Install with ``pip install 'mycelium-codemode[openai-agents]'``.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from agents import FunctionTool, RunContextWrapper, RunState, ToolApprovalItem
from agents.tool_context import ToolContext

from .._access import Access
from .._context import Session
from .._execute import EXECUTE_INPUT_SCHEMA, PreparedExecute, ToolCall, ToolResult
from .._leases import Lease
from .._options import check_optional
from .._runtime import Runtime
from ..suspensions import StoreUnavailable, Suspension
from . import model_output

__all__ = ["EXECUTE", "RESUME", "MyceliumTools"]

EXECUTE = "execute"
"""The name of the tool that runs a program (the runtime's own name for it)."""

RESUME = "resume"
"""The name of the tool that continues a program paused again after an approval."""

_RESUME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "suspension_id": {"type": "string", "description": "The suspension id the paused program's result named."}
    },
    "required": ["suspension_id"],
    "additionalProperties": False,
}

_RESUME_DESCRIPTION = (
    "Continue a program that `execute` paused at an operation a person must approve. Pass the "
    "suspension id the paused result named. The person is shown the pending operation and approves "
    "or declines it; once approved, the program continues where it stopped (nothing it already did "
    "runs again) and this returns its result."
)


class MyceliumTools:
    """The runtime's ``execute`` tool (and ``resume``, when a program can pause) for the OpenAI Agents SDK.

    ``async with MyceliumTools(runtime) as mycelium:`` holds one lease for the block;
    ``mycelium.tools`` are the SDK function tools for an ``Agent``, made at the first entry
    and kept (entering again refreshes ``execute``'s description for the new lease).
    ``session`` and ``access`` are the lease's (see :meth:`Runtime.acquire`). See the module
    for how a ``confirm`` operation meets the SDK's approvals.
    """

    def __init__(self, runtime: Runtime, *, session: Session | None = None, access: Access | None = None) -> None:
        if not isinstance(runtime, Runtime):
            raise ValueError(f"MyceliumTools needs a Runtime, got {type(runtime).__name__}")
        check_optional("session", session, Session, "a Session")
        check_optional("access", access, Access, "an Access")
        self._runtime = runtime
        self._session = session
        self._access = access
        self._lease: Lease | None = None
        self._tools: tuple[FunctionTool, ...] = ()
        # Results of programs that finished in the approval check, until the SDK asks the tool for
        # them: keyed by call id and arguments, since runs sharing a block may reuse call ids.
        self._finished: dict[tuple[str, str], ToolResult] = {}
        self._entering = False

    async def __aenter__(self) -> Self:
        if self._lease is not None or self._entering:
            raise RuntimeError("MyceliumTools is already entered: one block at a time")
        self._entering = True  # before the await, so a concurrent entry is refused, not a lease lost
        try:
            lease = await self._runtime.acquire(session=self._session, access=self._access)
        finally:
            self._entering = False
        self._lease = lease
        if self._tools:
            # An agent made in an earlier block keeps these tools: its next request describes this lease.
            self._tools[0].description = lease.execute_tool.definition.description
            return self
        tools = [
            FunctionTool(
                name=EXECUTE,
                description=lease.execute_tool.definition.description,
                params_json_schema=EXECUTE_INPUT_SCHEMA,
                on_invoke_tool=self._invoke_execute,
                needs_approval=self._execute_needs_approval,
            )
        ]
        if self._runtime.suspensions is not None and any(t.operation.confirm for t in lease.catalog.targets):
            tools.append(
                FunctionTool(
                    name=RESUME,
                    description=_RESUME_DESCRIPTION,
                    params_json_schema=_RESUME_SCHEMA,
                    on_invoke_tool=self._invoke_resume,
                    needs_approval=self._resume_needs_approval,
                )
            )
        self._tools = tuple(tools)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        lease, self._lease = self._lease, None
        self._finished.clear()
        if lease is not None:
            await lease.release()

    @property
    def tools(self) -> list[FunctionTool]:
        """The function tools for an ``Agent``, described for the revision this block's lease holds."""
        self._held()
        return list(self._tools)

    async def pending(self, item: ToolApprovalItem) -> Suspension | None:
        """The paused call a person decides on, for an interruption of these tools.

        ``None`` when ``item`` is not a call of ``execute`` or ``resume``, its arguments are
        malformed, or its pause is gone (expired, resumed, or another session's). Needs no
        lease: a host may show it from a ``RunState`` loaded in another process.
        """
        arguments = _arguments(_raw(item.raw_item, "arguments"))
        call_id = _raw(item.raw_item, "call_id")
        suspensions = self._runtime.suspensions
        if suspensions is None or arguments is None or not isinstance(call_id, str):
            return None
        if item.name == RESUME:
            suspension_id = arguments.get("suspension_id")
            if not isinstance(suspension_id, str):
                return None
            return await self._runtime.suspension(suspension_id, session=self._session)
        if item.name != EXECUTE or not isinstance(code := arguments.get("code"), str):
            return None
        session = self._session or self._runtime.session
        return await suspensions.waiting(session.id if session is not None else None, call_id, code)

    async def reject(
        self, state: RunState[Any, Any], item: ToolApprovalItem, *, rejection_message: str | None = None
    ) -> None:
        """Reject ``item`` in ``state`` (the model reads ``rejection_message``) and record the decline.

        The paused program never continues, and its pending call cannot be approved later.
        """
        suspension = await self.pending(item)
        if suspension is not None:
            await self._runtime.decide(suspension.id, approved=False, session=self._session)
        state.reject(item, rejection_message=rejection_message)

    async def _execute_needs_approval(
        self, context: RunContextWrapper[Any], arguments: dict[str, Any], call_id: str
    ) -> bool:
        """Run the program: a person is asked only when it pauses; a finished result waits for the tool."""
        result = await self._prepared(call_id, arguments).execute()
        if result.suspension is not None:
            return True
        self._finished[call_id, _canonical(arguments)] = result
        return False

    async def _invoke_execute(self, context: ToolContext[Any], arguments: str) -> str:
        """The program's output: checked already, or resumed with the person's approval."""
        parsed = _arguments(arguments)
        result = self._finished.pop((context.tool_call_id, _canonical(parsed)), None) if parsed is not None else None
        if result is None:
            prepared = self._prepared(context.tool_call_id, arguments)
            if _approved_here(context, EXECUTE):
                # The same call id and code resume the pause it was asked for: nothing that ran runs again.
                result = await prepared.execute(approved=True)
            elif _standing(context, EXECUTE):
                result = await prepared.execute()  # the SDK skipped the check: the program runs here
            else:
                # The check ran this program and its result is gone: running it again could repeat its writes.
                return (
                    "The program's result was lost before it reached you; whether its operations ran is unknown. "
                    "Check their effects before running it again."
                )
        return _output(result)

    async def _resume_needs_approval(
        self, context: RunContextWrapper[Any], arguments: dict[str, Any], call_id: str
    ) -> bool:
        """A person is asked when the suspension is there to decide on; otherwise the tool says why not."""
        suspension_id = arguments.get("suspension_id")
        if not isinstance(suspension_id, str):
            return False
        try:
            return await self._runtime.suspension(suspension_id, session=self._session) is not None
        except StoreUnavailable:
            return False  # the tool then goes on only with a decision the host recorded, or says why not

    async def _invoke_resume(self, context: ToolContext[Any], arguments: str) -> str:
        """Continue the paused program with the person's approval; without one, nothing of it runs."""
        suspension_id = (_arguments(arguments) or {}).get("suspension_id")
        if not isinstance(suspension_id, str):
            return f'The {RESUME} call was malformed: call it with {{"suspension_id": "<the id the pause named>"}}.'
        approved = True if _approved_here(context, RESUME) else None
        # Without the SDK's approval only a decision the host recorded (Runtime.decide) lets it go on.
        result = await self._held().execute_tool.resume(suspension_id, approved=approved)
        return _output(result)

    def _prepared(self, call_id: str, arguments: Mapping[str, object] | str) -> PreparedExecute:
        return self._held().execute_tool.prepare(ToolCall(id=call_id, name=EXECUTE, arguments=arguments))

    def _held(self) -> Lease:
        if self._lease is None:
            raise RuntimeError("MyceliumTools is used outside its block: `async with MyceliumTools(runtime) as ...`")
        return self._lease


def _output(result: ToolResult) -> str:
    """What the model reads; a program that paused again is told how to ask the person."""
    pending = result.suspension
    if pending is None:
        return model_output(result)
    text = (
        f"Paused for approval: {pending.path} needs a person to approve it before it runs (suspension "
        f"{pending.id}). Everything the program did before that call has happened; the rest has not run. "
        f'Do not run the program again: call {RESUME} with {{"suspension_id": "{pending.id}"}} so the person '
        "can decide; once they approve, the program continues where it stopped."
    )
    return model_output(dataclasses.replace(result, text=text))


def _approved_here(context: ToolContext[Any], tool: str) -> bool:
    """Whether a person approved this very call: a standing approval answers for calls nobody saw."""
    return bool(context.is_tool_approved(tool, context.tool_call_id)) and not _standing(context, tool)


def _standing(context: ToolContext[Any], tool: str) -> bool:
    """Whether every call of ``tool`` is approved in advance (``always_approve``): asked of a call id nobody made."""
    return bool(context.is_tool_approved(tool, f"unseen-{secrets.token_hex(8)}"))


def _canonical(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"))


def _raw(raw_item: object, name: str) -> object:
    """A field of an interruption's raw tool call, which the SDK keeps as a model or a dict."""
    return raw_item.get(name) if isinstance(raw_item, Mapping) else getattr(raw_item, name, None)


def _arguments(text: object) -> dict[str, Any] | None:
    """A tool call's JSON arguments as an object, or ``None`` when they are not one."""
    if not isinstance(text, str):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None
