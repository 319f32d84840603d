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
import textwrap
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import anyio

from .admission import AdmissionPolicy, BackingWork, SandboxSlots
from .bindings import BindingCallback, Execution, Invoker
from .discovery import (
    FORAGE_MODULE_ID,
    Catalog,
    NamespaceStubs,
    forage_bindings,
    namespace_tree,
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
    SandboxBusy,
    SandboxError,
    Unknown,
)
from .graph import OperationGraph
from .hooks import Observer, notify
from .modules import GUEST_IMPORTS
from .options import ExecutionOptions
from .sandbox import Sandbox, SandboxRequest
from .sandbox.boundary import failure_from_exception, sandbox_failure_message
from .signals import AbortController, AbortSignal
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
    """

    text: str
    is_error: bool
    value: JsonValue = None
    failure: Failure | None = None
    logs: tuple[str, ...] = ()
    reference: str | None = None

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

    async def execute(self, signal: AbortSignal | None = None) -> ToolResult:
        """Run the program, or return the argument failure without running anything.

        ``signal`` is the caller's: aborting it (or cancelling the awaiting task) stops the
        run, reported as ``cancelled``.
        """
        if self.code is None:
            failure = self.failure or InvalidArguments("no code")
            return await self._tool._fail(_Attempt(None, self.tool_call_id), failure, None)
        return await self._tool._execute(self.code, self.tool_call_id, signal)


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


@dataclass
class _Attempt:
    """One execute attempt as the operator sees it."""

    execution_id: str | None
    """``None`` when nothing was started (invalid arguments)."""
    tool_call_id: str | None
    started: float = field(default_factory=anyio.current_time)
    logs: list[str] = field(default_factory=list)


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
    helpers: Mapping[str, Mapping[str, BindingCallback]]
    namespace_paths: Mapping[str, tuple[str, ...]]
    module_ids: Mapping[str, str]
    stubs: Mapping[str, str]

    @classmethod
    def build(cls, graph: OperationGraph, sandbox_notes: str | None = None) -> RevisionView:
        """Build the view of ``graph`` once; leases of the revision reuse it."""
        catalog = Catalog(graph)
        return cls(
            graph=graph,
            catalog=catalog,
            definition=execute_definition(catalog, sandbox_notes),
            helpers={"forage": forage_bindings(catalog)},
            namespace_paths={"forage": ("forage",), **{m.transport: m.path for m in graph.modules}},
            module_ids={"forage": FORAGE_MODULE_ID, **{m.transport: m.id for m in graph.modules}},
            stubs=NamespaceStubs(catalog),
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

    def prepare(self, call: ToolCall) -> PreparedExecute:
        """Validate a tool call's arguments. Bad arguments give a call whose result is ``invalid-arguments``."""
        with self._hold():
            try:
                code = self._parse(call)
            except _BadArguments as exc:
                return PreparedExecute(self, call.id, None, InvalidArguments(str(exc)))
            return PreparedExecute(self, call.id, code, None)

    async def run(
        self, code: str, tool_call_id: str | None = None, signal: AbortSignal | None = None
    ) -> ToolResult:
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

    async def _execute(self, code: str, tool_call_id: str | None, caller_signal: AbortSignal | None) -> ToolResult:
        with self._hold():
            execution_id = f"exec-{uuid.uuid4().hex}"
            attempt = _Attempt(execution_id, tool_call_id)
            controller = AbortController()
            stop_following = (
                caller_signal.add_listener(lambda _: controller.abort(_CALLER)) if caller_signal is not None else None
            )
            try:
                value = await self._supervise(code, execution_id, attempt, controller)
            except _Stopped as stopped:
                with anyio.CancelScope(shield=True):  # report what was decided even if cancelled now
                    return await self._fail(attempt, stopped.failure, stopped.cause)
            except Exception as exc:
                return await self._fail(attempt, failure_from_exception(exc), exc)
            finally:
                if stop_following is not None:
                    stop_following()
            return await self._admit(value, attempt)

    async def _supervise(
        self, code: str, execution_id: str, attempt: _Attempt, controller: AbortController
    ) -> object:
        """Admit, dispatch and watch one run; return its value or raise what ended it.

        The deadline counts from the start of the attempt, so queueing for a slot does not
        restart it. An abort (deadline or caller) is followed by up to ``abort_grace_ms`` of
        waiting for the sandbox to settle; if it does not, the stop is unacknowledged and the
        backing work keeps its slot until it settles.
        """
        deadline = attempt.started + self._options.timeout_ms / 1000
        work: BackingWork | None = None
        try:
            await self._wait_for_slot(attempt, controller, deadline)
            work = self._dispatch(code, execution_id, attempt, controller, deadline)
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
        if isinstance(work.error, Exception):
            raise work.error
        if work.error is not None:
            # An adapter's own cancellation or exit is not the caller's: it is foreign.
            raise _Stopped(Unknown(), cause=work.error)
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
        self, code: str, execution_id: str, attempt: _Attempt, controller: AbortController, deadline: float
    ) -> BackingWork:
        """Start the program in the slot just admitted; the work owns the slot until it settles."""
        services = self._services
        execution = Execution(
            self._view.graph,
            services.invoker,
            execution_id=execution_id,
            tool_call_id=attempt.tool_call_id,
            session_id=services.session_id,
            signal=controller.signal,
            helpers=self._view.helpers,
            max_input_bytes=self._options.max_operation_input_bytes,
            max_inflight_input_bytes=self._options.max_inflight_input_bytes,
        )
        request = SandboxRequest(
            execution_id=execution_id,
            code=code,
            timeout_ms=max(1, round((deadline - anyio.current_time()) * 1000)),
            bindings=execution.bindings,
            namespace_paths=self._view.namespace_paths,
            modules=self._view.module_ids,
            session_id=services.session_id,
            on_log=attempt.logs.append,
            stubs=self._view.stubs,
            max_input_bytes=self._options.max_operation_input_bytes,
            max_result_bytes=self._options.max_result_bytes,
        )
        return services.slots.start(lambda: services.sandbox.execute(request, controller.signal))

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
    stubs = render_bounded(list(catalog.targets), inline_chars + 1)
    inline = len(stubs) <= inline_chars and "more operations" not in stubs
    body = (
        "These operations are available, as Python stubs. Call each by the path in the comment above it: "
        "`# <ns>.<op>` means `await <ns>.<op>(...)`.\n\n" + stubs
        if inline
        else "Namespaces (operation counts). Find operations with `await forage.search(\"what you need\")`, "
        "then `await forage.describe(\"path\")` for the exact signature:\n\n"
        + namespace_tree(catalog, max_chars - len(rules) - 200)
    )
    text = rules + body
    if len(text) > max_chars:
        marker = "\n... (cut: use forage.list() and forage.describe(...) for the rest)"
        text = text[: max_chars - len(marker)] + marker
    return text


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
- Discover with `await forage.search("what you need")` (a few words), `await forage.list("prefix")`
  and `await forage.describe("path.or.prefix")`.

Result: end with `return <value>` (or a final expression). It must be JSON (dicts with string keys,
lists, strings, finite numbers, booleans, None) and small; print() output comes back as logs. Each run
starts fresh: no variable, function or import survives to the next run.

"""
# The list of modules is the one installation checks names against: one list, probed by tests.
_RULES = _RULES_TEXT.replace(
    "{imports}",
    textwrap.fill(f"Modules you can import (no other imports work): {', '.join(sorted(GUEST_IMPORTS))}.", width=104),
)
