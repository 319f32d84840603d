"""LangChain and LangGraph: the runtime's ``execute`` as a LangChain tool for LangGraph agents.

    async with mycelium_tool(runtime) as tool:
        agent = create_agent(model, tools=[tool], checkpointer=InMemorySaver())
        result = await agent.ainvoke({"messages": [("user", "tidy my notes")]}, config)

The block holds one lease (released when it ends, also on failure and cancellation); the
tool is named ``execute``, takes ``{"code": ...}`` and carries the lease's description.
LangChain's tool call id becomes the execute's, so a tool call LangGraph runs again while
its program is paused is a replay that runs nothing again. A program that paused and
then finished leaves a tombstone until its pause would have expired: a rerun of the node
from an earlier checkpoint (time travel) is refused as already resumed, not run twice.
After that, or for a program that never paused, the call runs anew, and its operations
see the same tool call id and ordinals as the first time, so one that must not repeat can
tell. The model reads :func:`~mycelium.integrations.model_output`.
A program the model can fix (:data:`~mycelium.integrations.MODEL_FIXABLE`) comes back as
an error ``ToolMessage`` (``status="error"``); every other outcome, a host or sandbox
failure included, is an ordinary tool result, so no guest failure ever ends the graph.

Approvals. A program that reaches a ``confirm`` operation the host defers
(``Access(confirm=defer)`` with ``Runtime(suspensions=...)``) pauses, and the tool calls
LangGraph's ``interrupt()`` with the pending call (:meth:`Suspension.to_json`): the graph
stops and ``result["__interrupt__"]`` shows it. The agent needs a checkpointer. Answer
with the suspension it names::

    pending = result["__interrupt__"][0].value
    await agent.ainvoke(Command(resume={"suspension_id": pending["suspension_id"], "approved": True}), config)

LangGraph runs the tool again from the start: the execute replays (the same tool call id
and code run nothing and answer with the same pause), and the person's answer decides the
pending call. Approved, the program resumes where it stopped and the call runs; nothing
that already ran runs again. A resumed program that reaches another such call pauses
again, with an interrupt of its own. Declined, the program is not resumed: it stops at
that call, nothing from it on runs, and the model reads an error ``ToolMessage`` saying
so (the suspension stays in the store until it expires). The answer names its
suspension because LangGraph hands a node's answers back by position while a replayed
program starts at its latest pause: an answer is applied only to the call it names, and
one naming any other leaves the call asked again (:class:`Approval`). A malformed answer
is refused by LangGraph with a ``pydantic.ValidationError``; the interrupt can be
answered again.

This approves the exact call (operation and arguments) in the middle of a program.
LangChain's ``HumanInTheLoopMiddleware(interrupt_on={"execute": True})`` approves the
whole program before it runs; the two compose (in either ``interrupt_mode``), each
stopping the graph at its own point.

``create_agent`` runs each tool call as a task of its own, so an interrupt reruns only
the paused call. A hand-built graph whose one ``ToolNode`` task runs several tool calls
reruns all of them, and a call that had finished without pausing runs again (only a call
that paused replays): give each tool call its own task (``Send``), as ``create_agent`` does.

Install with ``pip install 'mycelium-codemode[langchain]'``. Use the async API
(``ainvoke``, ``astream``): the execute is asynchronous.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from langchain_core.tools import BaseTool, InjectedToolCallId, ToolException
from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict, PrivateAttr, StrictBool, StrictStr

from .._access import Access
from .._context import Session
from .._execute import EXECUTE_INPUT_SCHEMA, ToolCall, ToolResult
from .._leases import Lease
from .._runtime import Runtime
from ..suspensions import Suspension
from . import MODEL_FIXABLE, model_output

__all__ = ["Approval", "MyceliumTool", "mycelium_tool"]


class Approval(BaseModel):
    """A person's answer to a paused program: the suspension it decides, and whether its pending call may run.

    Declined, the program stops at that call: nothing from it on runs.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    suspension_id: StrictStr
    approved: StrictBool


class _Arguments(BaseModel):
    """What the tool is invoked with; the model sees ``EXECUTE_INPUT_SCHEMA`` instead."""

    model_config = ConfigDict(extra="forbid")

    code: str
    tool_call_id: Annotated[str, InjectedToolCallId]


class MyceliumTool(BaseTool):
    """A lease's ``execute`` tool as a LangChain tool; see the module's documentation.

    Made by :func:`mycelium_tool`, or from a lease the host holds itself
    (``MyceliumTool(lease)``); it works while that lease is held. It must be invoked with
    a model's tool call (``{"type": "tool_call", "id": ...}``), as LangGraph's ``ToolNode``
    does: the id is what makes a replayed call resume instead of running again.
    """

    _lease: Lease = PrivateAttr()

    def __init__(self, lease: Lease) -> None:
        if not isinstance(lease, Lease):
            raise ValueError(f"MyceliumTool needs a Lease, got {type(lease).__name__}")
        definition = lease.execute_tool.definition
        super().__init__(
            name=definition.name,
            description=definition.description,
            args_schema=_Arguments,
            handle_tool_error=True,  # a ToolException becomes an error ToolMessage, never ends the graph
        )
        self._lease = lease

    @property
    def tool_call_schema(self) -> dict[str, Any]:
        """The schema a model is shown: the execute input, with the tool's description."""
        return {**EXECUTE_INPUT_SCHEMA, "description": self.description}

    def _run(self, code: str, tool_call_id: str) -> str:
        raise NotImplementedError("the execute tool is asynchronous: run the agent with ainvoke or astream")

    async def _arun(self, code: str, tool_call_id: str) -> str:
        if self._lease.released:
            raise RuntimeError("this execute tool's lease was released: use the tool inside its mycelium_tool block")
        prepared = self._lease.execute_tool.prepare(ToolCall(id=tool_call_id, name="execute", arguments={"code": code}))
        result = await prepared.execute()
        while result.suspension is not None:
            if not _decision(result.suspension):
                # Never resumed: a refusal reaches the program as a value it may ignore and carry on.
                raise ToolException(
                    f"The person declined {result.suspension.path}, so the program stopped at that call: "
                    "it and everything after it did not run; everything before it did. "
                    "Do not retry it unless they ask you to."
                )
            result = await prepared.execute(approved=True, suspension_id=result.suspension.id)
        return _answer(result)


def _decision(suspension: Suspension) -> bool:
    """The person's answer for ``suspension``: the interrupt stops the graph until there is one.

    On a rerun LangGraph returns the node's earlier answers first, in order; those name
    pauses this program has already passed (or another suspension), so they are skipped,
    never applied here.
    """
    while True:
        try:
            answer = interrupt(suspension.to_json(), response_schema=Approval)
        except KeyError as missing:  # LangGraph's task state is absent: the tool runs outside a graph
            raise RuntimeError(
                f"the program paused for approval of {suspension.path} (suspension {suspension.id}), and only a "
                "LangGraph graph with a checkpointer can ask for it: run the tool in one, or resume the "
                "suspension with Runtime.resume"
            ) from missing
        if answer.suspension_id == suspension.id:
            return answer.approved


def _answer(result: ToolResult) -> str:
    output = model_output(result)
    if result.failure is not None and result.failure.code in MODEL_FIXABLE:
        raise ToolException(output)
    return output


@asynccontextmanager
async def mycelium_tool(
    runtime: Runtime, *, session: Session | None = None, access: Access | None = None
) -> AsyncIterator[MyceliumTool]:
    """``async with mycelium_tool(runtime) as tool:`` a LangChain ``execute`` tool holding one lease for the block.

    ``session`` and ``access`` are the lease's (see :meth:`Runtime.acquire`). Resume a
    paused graph under the same session: a suspension belongs to the session it paused in.
    The lease is released when the block ends, however it ends.
    """
    if not isinstance(runtime, Runtime):
        raise ValueError(f"mycelium_tool needs a Runtime, got {type(runtime).__name__}")
    async with runtime.lease(session=session, access=access) as lease:
        yield MyceliumTool(lease)
