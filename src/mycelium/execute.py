"""The execute tool: the one tool a model gets.

A model calls ``execute`` with ``{"code": "<python program>"}``. The tool validates the
arguments, builds a fresh :class:`~mycelium.bindings.Execution` (new ``execution_id``,
ordinals from zero), hands the program to the sandbox, and admits only a bounded JSON
value back. Every outcome is a :class:`ToolResult`; failures are typed and their text is
safe for the model, with a reference to the operator's evidence.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from .bindings import Execution, Invoker
from .discovery import Catalog
from .errors import new_reference
from .failures import Failure, InvalidArguments, InvalidResult, ResultTooLarge
from .graph import OperationGraph
from .sandbox import Sandbox, SandboxRequest
from .sandbox.boundary import failure_from_exception, sandbox_failure_message
from .signals import AbortController, AbortSignal
from .values import JsonValue, NotJson, check_json, dumps_compact

__all__ = [
    "EXECUTE_INPUT_SCHEMA",
    "ExecuteTool",
    "ExecutionOptions",
    "PreparedExecute",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
]

logger = logging.getLogger("mycelium")

EXECUTE_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "The Python program to run."}},
    "required": ["code"],
    "additionalProperties": False,
}

_MAX_DESCRIPTION_CHARS = 8_192


@dataclass(frozen=True)
class ExecutionOptions:
    """Host-only limits for each execute. Guests submit only code.

    ``timeout_ms`` is the execution budget passed to the sandbox;
    ``max_code_bytes`` bounds the submitted program (UTF-8); ``max_result_bytes`` bounds
    the compact JSON of the result, which is never truncated: a larger one fails.
    """

    timeout_ms: int = 180_000
    max_code_bytes: int = 64 * 1024
    max_result_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        for name in ("timeout_ms", "max_code_bytes", "max_result_bytes"):
            value = getattr(self, name)
            if type(value) is not int or value <= 0:
                raise ValueError(f"ExecutionOptions.{name} must be a positive int, got {value!r}")


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
    """

    text: str
    is_error: bool
    value: JsonValue = None
    failure: Failure | None = None
    logs: tuple[str, ...] = ()
    reference: str | None = None

    @classmethod
    def failed(cls, failure: Failure, reference: str | None = None) -> ToolResult:
        """A failed result whose text is the model-facing message for ``failure``."""
        # A capability failure already has the reference the host's evidence carries.
        reference = reference or getattr(failure, "reference", None) or new_reference()
        return cls(
            text=sandbox_failure_message(failure, reference),
            is_error=True,
            failure=failure,
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

    async def execute(self, signal: AbortSignal | None = None) -> ToolResult:
        """Run the program (or return the argument failure without running anything)."""
        if self.failure is not None or self.code is None:
            return ToolResult.failed(self.failure or InvalidArguments("no code"))
        return await self._tool._execute(self.code, self.tool_call_id, signal)


class ExecuteTool:
    """The ``execute`` tool of one lease. Its graph, and so its bindings, never change."""

    def __init__(
        self,
        *,
        graph: OperationGraph,
        catalog: Catalog,
        sandbox: Sandbox,
        invoker: Invoker,
        options: ExecutionOptions,
        session_id: str | None,
        hold: Callable[[], AbstractContextManager[None]],
    ) -> None:
        self._graph = graph
        self._sandbox = sandbox
        self._invoker = invoker
        self._options = options
        self._session_id = session_id
        self._hold = hold
        self.definition = ToolDefinition(
            name="execute", description=execute_description(catalog), input_schema=EXECUTE_INPUT_SCHEMA
        )

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
        return await self.prepare(ToolCall(id=tool_call_id, name="execute", arguments={"code": code})).execute(signal)

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

    async def _execute(self, code: str, tool_call_id: str | None, caller_signal: AbortSignal | None) -> ToolResult:
        with self._hold():
            controller = AbortController()
            stop_following = caller_signal.add_listener(controller.abort) if caller_signal is not None else None
            execution = Execution(
                self._graph,
                self._invoker,
                execution_id=f"exec-{uuid.uuid4().hex}",
                tool_call_id=tool_call_id,
                session_id=self._session_id,
                signal=controller.signal,
            )
            request = SandboxRequest(
                execution_id=execution.execution_id,
                code=code,
                timeout_ms=self._options.timeout_ms,
                bindings=execution.bindings,
                namespace_paths={module.transport: module.path for module in self._graph.modules},
                modules={module.transport: module.id for module in self._graph.modules},
                session_id=self._session_id,
            )
            try:
                value = await self._sandbox.execute(request, controller.signal)
            except Exception as exc:
                return self._failed(failure_from_exception(exc), execution, exc)
            finally:
                if stop_following is not None:
                    stop_following()
            return self._admit(value, execution)

    def _admit(self, value: object, execution: Execution) -> ToolResult:
        """Admit the program's value only as bounded JSON; nothing is truncated."""
        try:
            check_json(value)
        except NotJson as exc:
            return self._failed(InvalidResult(reason=str(exc)), execution, None)
        text = dumps_compact(value)  # type: ignore[arg-type]  # check_json proved it is JSON
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self._options.max_result_bytes:
            return self._failed(ResultTooLarge(size=size, limit=self._options.max_result_bytes), execution, None)
        return ToolResult(text=text, is_error=False, value=value)  # type: ignore[arg-type]

    def _failed(self, failure: Failure, execution: Execution, cause: BaseException | None) -> ToolResult:
        result = ToolResult.failed(failure)
        logger.warning(
            "execute %s (tool call %s) failed: %s, reference %s",
            execution.execution_id,
            execution.tool_call_id,
            failure.code,
            result.reference,
            exc_info=cause,
        )
        return result


class _BadArguments(Exception):
    pass


def execute_description(catalog: Catalog, max_chars: int = _MAX_DESCRIPTION_CHARS) -> str:
    """The execute tool's description: the guest language rules, then the operations, bounded."""
    head = (
        "Run a short Python program in a fresh sandbox and get back its JSON result.\n"
        "- The program calls the host's operations below as async functions: "
        "`result = await demo.ping()`. Await every call; run several at once with `asyncio.gather(...)`.\n"
        "- Pass arguments as keywords (`await notes.search(query=\"x\")`) or as one dict, not both.\n"
        "- Every operation is also reachable under `env` (`env.apps.bazaar.windows.open(...)`).\n"
        "- End with `return <value>` (or a final expression). The value must be JSON: dicts with string keys, "
        "lists, strings, finite numbers, booleans, None. Keep it small.\n"
        "- Nothing survives between runs; the sandbox has no host files, network or environment.\n"
        "\nOperations:\n"
    )
    lines: list[str] = []
    used = len(head)
    for shown, entry in enumerate(catalog.entries):
        labels = entry.access + (", asks a person" if entry.confirm else "")
        line = f"- {entry.path}(...) [{labels}]" + (f": {entry.description}" if entry.description else "")
        if used + len(line) + 1 > max_chars - 80:
            lines.append(f"- ... and {len(catalog.entries) - shown} more operations not listed here")
            break
        lines.append(line)
        used += len(line) + 1
    if not lines:
        lines.append("- (none)")
    return head + "\n".join(lines)
