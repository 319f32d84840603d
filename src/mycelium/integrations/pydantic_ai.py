"""pydantic-ai: a toolset that gives an agent the runtime's ``execute`` tool.

``Agent(model, toolsets=[MyceliumToolset(runtime)], output_type=[str, DeferredToolRequests])``
is all it takes. Each agent run holds one lease, acquired when the run enters the toolset
and released when it leaves it. A ``confirm`` operation that the host defers
(``Access(confirm=defer)`` with ``Runtime(suspensions=...)``) pauses the program and ends
the tool call with pydantic-ai's ``ApprovalRequired``; its metadata names the pending
operation and its arguments, and the ``suspension_id`` of the pause. Continue the agent
with ``DeferredToolResults(approvals={tool_call_id: True}, metadata=requests.metadata)``:
the metadata binds each approval to the pause the person was shown, so the program resumes
where it stopped, with exactly that call. An approval without it is refused with
``UserError``; one for a pause that is no longer current (an approval delivered twice, after
the program paused again) decides nothing, and the current pause is asked again. A denied
call is never resumed (pydantic-ai tells the model itself); the paused run expires
unresumed (or ``Runtime.discard`` drops it) and nothing more of it runs.

Install with ``pip install 'mycelium-codemode[pydantic-ai]'``.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, ModelRetry, UserError
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from .._access import Access
from .._context import Session
from .._execute import ToolCall
from .._leases import Lease
from .._runtime import Runtime
from . import MODEL_FIXABLE, model_output

__all__ = ["MyceliumToolset"]

_RAW = "\x00raw"
"""Where arguments that are not a JSON object travel to the tool, which answers them itself."""


class _Unchecked:
    """Accepts any arguments, so pydantic-ai never spends a retry (or ends the run) on them.

    The tools check their arguments themselves, with a message the model can act on.
    """

    def validate_json(
        self, input: str | bytes | bytearray, *, allow_partial: bool | str = False, **kwargs: Any
    ) -> dict[str, Any]:
        text = input if isinstance(input, str) else bytes(input).decode(errors="replace")
        try:
            parsed = json.loads(text)
        except ValueError:
            return {_RAW: text}
        return parsed if isinstance(parsed, dict) else {_RAW: text}

    def validate_python(self, input: Any, *, allow_partial: bool | str = False, **kwargs: Any) -> dict[str, Any]:
        return input if isinstance(input, dict) else {_RAW: json.dumps(input, default=repr)}


_ARGUMENTS = _Unchecked()


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
        self._entering = anyio.Lock()  # two tasks entering at once share one lease

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
        async with self._entering:
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
        arguments = tool_args.get(_RAW, tool_args)
        direct = next((candidate for candidate in lease.tools if candidate.definition.name == name), None)
        if direct is not None:
            result = await direct.call(arguments, tool_call_id=ctx.tool_call_id)
        else:
            prepared = lease.execute_tool.prepare(ToolCall(id=ctx.tool_call_id, name=name, arguments=arguments))
            shown = _shown(ctx) if ctx.tool_call_approved else None
            result = await prepared.execute(approved=True if shown else None, suspension_id=shown)
        if result.suspension is not None:
            raise ApprovalRequired(metadata=result.suspension.to_json())
        fixable = result.failure is not None and result.failure.code in MODEL_FIXABLE
        if fixable and ctx.retry < tool.max_retries:
            raise ModelRetry(model_output(result))
        return model_output(result)

    def _held(self) -> Lease:
        if self._lease is None:
            raise RuntimeError("MyceliumToolset is used outside an agent run: enter it first")
        return self._lease


def _shown(ctx: RunContext[Any]) -> str:
    """The pause an approval was given for, from the metadata the host passed back with it."""
    metadata = ctx.tool_call_metadata
    shown = metadata.get("suspension_id") if isinstance(metadata, dict) else None
    if not isinstance(shown, str):
        raise UserError(
            "approve a paused execute with DeferredToolResults(approvals=..., metadata=requests.metadata), "
            "so each approval names the pause the person was shown (its 'suspension_id')"
        )
    return shown
