"""pydantic-ai: a toolset that gives an agent the runtime's ``execute`` tool.

``Agent(model, toolsets=[MyceliumToolset(runtime)], output_type=[str, DeferredToolRequests])``
is all it takes. Each agent run holds one lease, acquired when the run enters the toolset
and released when it leaves it. A ``confirm`` operation that the host defers
(``Access(confirm=defer)`` with ``Runtime(suspensions=...)``) pauses the program and ends
the tool call with pydantic-ai's ``ApprovalRequired``; its metadata names the pending
operation and its arguments. Continue the agent with
``DeferredToolResults(approvals={tool_call_id: True})``: the program resumes where it
stopped, with the approved call. A denied call is never resumed (pydantic-ai tells the
model itself); the paused run expires unresumed and nothing more of it runs.

Install with ``pip install 'mycelium-runtime[pydantic-ai]'``.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, ModelRetry
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from ..access import Access
from ..context import Session
from ..execute import ToolCall
from ..runtime import Lease, Runtime
from . import MODEL_FIXABLE, model_output

__all__ = ["MyceliumToolset"]

# The arguments are checked by execute itself, with messages a model can act on.
_ARGUMENTS = SchemaValidator(core_schema.dict_schema(keys_schema=core_schema.str_schema()))


class MyceliumToolset(AbstractToolset[Any]):
    """The runtime's ``execute`` tool (and its direct tools) as a pydantic-ai toolset, one lease per agent run.

    ``session`` and ``access`` are the lease's (see :meth:`Runtime.acquire`); ``max_retries``
    is how often the model may retry a program it can fix (a syntax error, an exception it
    did not handle, a result that is not JSON or too large). After that the failure is its
    tool result, never an error that ends the agent run.
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        id: str = "mycelium",
        session: Session | None = None,
        access: Access | None = None,
        max_retries: int = 2,
    ) -> None:
        if not isinstance(runtime, Runtime):
            raise ValueError(f"MyceliumToolset needs a Runtime, got {type(runtime).__name__}")
        if type(max_retries) is not int or max_retries < 0:
            raise ValueError(f"max_retries must be an int of at least 0, got {max_retries!r}")
        self._runtime = runtime
        self._id = id
        self._session = session
        self._access = access
        self._max_retries = max_retries
        self._lease: Lease | None = None
        self._entered = 0

    @property
    def id(self) -> str | None:
        """The toolset's id, for pydantic-ai's durable execution and error messages."""
        return self._id

    async def for_run(self, ctx: RunContext[Any]) -> MyceliumToolset:
        """A toolset of its own for each agent run, so each run holds its own lease."""
        return MyceliumToolset(
            self._runtime,
            id=self._id,
            session=self._session,
            access=self._access,
            max_retries=self._max_retries,
        )

    async def __aenter__(self) -> MyceliumToolset:
        if self._entered == 0:
            self._lease = await self._runtime.acquire(session=self._session, access=self._access)
        self._entered += 1
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        self._entered -= 1
        if self._entered == 0 and self._lease is not None:
            lease, self._lease = self._lease, None
            await lease.release()
        return None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """``execute`` and the host's direct tools, described for the revision this run's lease holds."""
        lease = self._held()
        definitions = [lease.execute_tool.definition, *(tool.definition for tool in lease.tools)]
        return {
            definition.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=definition.name,
                    description=definition.description,
                    parameters_json_schema=definition.input_schema,
                ),
                max_retries=self._max_retries,
                args_validator=_ARGUMENTS,
            )
            for definition in definitions
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Run the program (or the direct tool); pause for approval, ask for a retry, or answer with its output."""
        lease = self._held()
        direct = next((candidate for candidate in lease.tools if candidate.definition.name == name), None)
        if direct is not None:
            result = await direct.call(tool_args, tool_call_id=ctx.tool_call_id)
        else:
            prepared = lease.execute_tool.prepare(ToolCall(id=ctx.tool_call_id, name=name, arguments=tool_args))
            result = await prepared.execute(approved=True if ctx.tool_call_approved else None)
        if result.suspension is not None:
            pending = result.suspension
            raise ApprovalRequired(
                metadata={
                    "suspension_id": pending.id,
                    "module_id": pending.module_id,
                    "path": pending.path,
                    "access": pending.access,
                    "arguments": pending.arguments,
                    "expires_at": pending.expires_at.isoformat(),
                }
            )
        fixable = result.failure is not None and result.failure.code in MODEL_FIXABLE
        if fixable and ctx.retry < tool.max_retries:
            raise ModelRetry(model_output(result))
        return model_output(result)

    def _held(self) -> Lease:
        if self._lease is None:
            raise RuntimeError("MyceliumToolset is used outside an agent run: enter it first")
        return self._lease
