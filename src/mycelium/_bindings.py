"""The invocation path: every operation call crosses here, from an execute or from ``Runtime.invoke``.

One call goes: identity (the ordinal, allocated when the binding is called) -> the
access gate -> input decoding -> the operation -> output encoding. Whose fault a failure
is gets decided here, once: a schema violation on input is the caller's
(:class:`InvalidInput`); anything else is the host's (:class:`OperationFailed` with a
reference, while the exception itself goes to the host's ``on_operation_error`` and the
``mycelium`` logger).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from . import _tracing
from ._access import AccessRefusal, Decision, DecisionDeferred, HandedOff
from ._context import InvocationContext
from ._exceptions import InvalidInput, OperationFailed, ToolError
from ._gate import AccessGate, confirm_request
from ._graph import InstalledModule, InstalledOperation, OperationGraph
from ._hooks import notify
from ._schemas import SchemaViolation
from ._signals import AbortSignal
from ._text import new_reference
from ._values import JsonTooLarge, JsonValue, NotJson, json_size

__all__ = [
    "BindingCallback",
    "Execution",
    "Invoker",
    "OperationErrorHandler",
    "OperationEvidence",
]

logger = logging.getLogger("mycelium")

Stage: TypeAlias = Literal["access", "decode", "execute", "encode"]

BindingCallback: TypeAlias = Callable[[JsonValue], Awaitable[JsonValue]]
"""An admitted operation as a sandbox sees it: call it with one JSON input, await the JSON output.

Calling it (not awaiting it) is what places the call: its ordinal is taken at once.
It raises ``InvalidInput`` (a ``ValueError``) for input the operation refuses and
``OperationFailed`` for a host failure; both messages are safe to show a guest.
"""


@dataclass(frozen=True)
class OperationEvidence:
    """Operator evidence for one failed operation call. Never shown to a guest or model."""

    reference: str
    module_id: str
    operation: str
    path: str
    stage: Stage
    """Where it failed: the access gate's host callbacks, a decoder that raised (not a validation
    error), the function, or the output."""
    exception: BaseException = field(repr=False)
    context: InvocationContext = field(repr=False)


OperationErrorHandler: TypeAlias = Callable[[OperationEvidence], object]
"""Receives :class:`OperationEvidence`; may be sync or async. Its own exceptions are logged."""


class Invoker:
    """Runs one operation call through the checks every call gets."""

    def __init__(self, gate: AccessGate, on_operation_error: OperationErrorHandler | None = None) -> None:
        self._gate = gate
        self._on_operation_error = on_operation_error

    def invoke(
        self,
        target: InstalledOperation,
        raw: object,
        context: InvocationContext,
        *,
        may_defer: bool = False,
        decided: Decision | None = None,
        traced: bool | None = None,
    ) -> Awaitable[JsonValue | AccessRefusal]:
        """Check access, decode ``raw``, run the operation, encode its result (see :meth:`_invoke`); await it.

        With tracing on (see :mod:`mycelium.tracing`), the call is one span: its module,
        path and ordinal, and how it ended (never its input or output). ``traced`` says
        whether it is on, when the caller already knows (a run decides once for all its
        calls); ``None`` looks.
        """
        invocation = self._invoke(target, raw, context, may_defer=may_defer, decided=decided)
        if _tracing.active() if traced is None else traced:
            return _traced(target, context, invocation)
        return invocation

    async def _invoke(
        self,
        target: InstalledOperation,
        raw: object,
        context: InvocationContext,
        *,
        may_defer: bool,
        decided: Decision | None,
    ) -> JsonValue | AccessRefusal:
        """Check access, decode ``raw``, run the operation, encode its result.

        Returns an :class:`AccessRefusal` when the host's access decisions refuse the call
        (nothing was decoded or run). Raises :class:`InvalidInput` when ``raw`` breaks the
        input schema and :class:`OperationFailed` for any host failure; neither carries
        host detail. ``may_defer`` and ``decided`` are the gate's
        (:meth:`~mycelium._gate.AccessGate.check`): with ``may_defer``, a confirmation the
        host defers raises :class:`~mycelium.sandbox.DecisionDeferred` once the input is
        known to be valid, so nobody is asked to approve a call that could not run.
        """
        op = target.operation
        stage: Stage = "access"
        deferring = False
        try:
            try:
                refusal = await self._gate.check(target, context, raw, may_defer=may_defer, decided=decided)
            except DecisionDeferred:
                stage = "decode"
                op.decode_input(raw)  # a SchemaViolation here is the caller's, as for any call
                deferring = True
                raise
            if refusal is not None:
                return refusal
            stage = "decode"
            decoded = op.decode_input(raw)
            stage = "execute"
            result = await op.call(decoded, context)
            stage = "encode"
            return op.encode_output(result)
        except Exception as exc:
            if deferring:  # the gate's deferral, for a valid input: the run pauses here
                raise
            # A DecisionDeferred raised by the host's own code is a failure like any other.
            caught = exc
        # Raised outside the handler so the host exception is not the error's __context__:
        # the error may travel towards a guest, the evidence may not.
        if stage == "decode" and isinstance(caught, SchemaViolation):
            raise InvalidInput(target.path, caught.errors)
        if stage == "execute" and isinstance(caught, ToolError):
            raise ToolError(caught.message, origin=caught.origin, path=target.path)  # for the caller, as written
        raise await self._host_failure(target, context, stage, caught)

    async def _host_failure(
        self,
        target: InstalledOperation,
        context: InvocationContext,
        stage: Stage,
        exc: Exception,
    ) -> OperationFailed:
        evidence = OperationEvidence(
            reference=new_reference(),
            module_id=target.module.id,
            operation=target.relative,
            path=target.path,
            stage=stage,
            exception=exc,
            context=context,
        )
        logger.error(
            "operation %s (module %s) failed in %s, reference %s",
            evidence.path,
            evidence.module_id,
            stage,
            evidence.reference,
            exc_info=exc,
        )
        await notify(self._on_operation_error, evidence, name="on_operation_error")
        return OperationFailed(
            module=evidence.module_id,
            operation=evidence.operation,
            path=evidence.path,
            reference=evidence.reference,
        )


async def _traced(
    target: InstalledOperation, context: InvocationContext, invocation: Awaitable[JsonValue | AccessRefusal]
) -> JsonValue | AccessRefusal:
    """Await ``invocation`` (one call of ``target``) inside a span of its own, which records how it ended."""
    with _tracing.operation_span(
        module_id=target.module.id, path=target.path, ordinal=context.operation_ordinal
    ) as span:
        try:
            outcome = await invocation
        except DecisionDeferred:
            _tracing.outcome(span, "deferred", failed=False)
            raise
        except InvalidInput:
            _tracing.outcome(span, "invalid-input", failed=False)
            raise
        except ToolError:
            _tracing.outcome(span, "tool-error", failed=False)
            raise
        except OperationFailed as exc:
            _tracing.outcome(span, "failed", failed=True, reference=exc.reference)
            raise
        if isinstance(outcome, AccessRefusal):
            _tracing.outcome(span, "refused", failed=False, access=outcome.reason)
        else:
            _tracing.outcome(span, "ok", failed=False, access="allowed")
        return outcome


class Execution:
    """The host side of one execute attempt: its identity, its ordinal counter and its bindings.

    A fresh ``Execution`` (fresh ``execution_id``, counter at zero) is made for every
    attempt, so replaying a program gives the same ordinals. A suspended run resumes in
    an ``Execution`` with the same ``execution_id`` whose counter continues where it stopped.
    Once ``pause`` is aborted, a run that can pause pauses at its next new call (raising
    :class:`~mycelium._access.HandedOff` from that call's binding); calls already placed go on.
    Its calls are traced when ``traced`` (the run has a span of its own).
    """

    def __init__(
        self,
        graph: OperationGraph,
        invoker: Invoker,
        *,
        execution_id: str,
        tool_call_id: str | None,
        session_id: str | None,
        signal: AbortSignal,
        helpers: Mapping[str, Mapping[str, BindingCallback]] | None = None,
        max_input_bytes: int | None = None,
        max_inflight_input_bytes: int | None = None,
        suspendable: bool = False,
        first_ordinal: int = 0,
        pause: AbortSignal | None = None,
        traced: bool = False,
    ) -> None:
        self.graph = graph
        # Host helpers (discovery) sit beside the operations but take no ordinals and no gate.
        self.helpers: Mapping[str, Mapping[str, BindingCallback]] = dict(helpers or {})
        self.execution_id = execution_id
        self.tool_call_id = tool_call_id
        self.session_id = session_id
        self.signal = signal
        self._invoker = invoker
        # A run that can pause lets the gate defer a confirmation; a resumed one continues its ordinals.
        self._suspendable = suspendable
        # Once the host asks (a draining server), each new call of a run that can pause pauses it instead.
        self._pause = pause if suspendable else None
        self._next_ordinal = first_ordinal
        # Whether the run is traced, decided once when it starts: its calls' spans need its span.
        self._traced = traced
        self._max_input = max_input_bytes
        self._max_inflight = max_inflight_input_bytes
        self._inflight = 0
        # A sandbox may place calls from a thread of its own (Monty does) while calls settle on the loop.
        self._inflight_lock = threading.Lock()

    @property
    def bindings(self) -> Mapping[str, Mapping[str, BindingCallback]]:
        """Transport alias -> relative path -> callback, for the sandbox request."""
        # Made when asked rather than kept: a view kept here would refer back to this execution, a
        # cycle that only the garbage collector frees, once per execute.
        return _GraphBindings(self)

    @property
    def next_ordinal(self) -> int:
        """The ordinal the next call would take (read when a run pauses)."""
        return self._next_ordinal

    def call(self, target: InstalledOperation, raw: JsonValue) -> Awaitable[JsonValue]:
        """Start one operation call.

        The ordinal is taken here, synchronously, before anything is awaited: calls get
        positions in the order the program made them, even when started concurrently.
        Input over the size limits raises :class:`InvalidInput` at once, and the call is
        not placed (it takes no ordinal).
        """
        size = self._admit_input(target, raw)
        # Calls may be placed from a sandbox's own thread: the ordinal is taken under the lock.
        with self._inflight_lock:
            ordinal = self._next_ordinal
            self._next_ordinal += 1
        return self._guest_form(target, raw, ordinal, size)

    def resume_call(
        self, target: InstalledOperation, raw: JsonValue, ordinal: int, decision: Decision | None
    ) -> Awaitable[JsonValue]:
        """Start a call a paused run deferred, under its own ordinal, now that it is decided.

        An ``"approved"`` call still needs its grant as it reads now; a declined or
        unavailable one is refused. ``None`` asks the host again (a call deferred beside
        the one decided), which may defer it again.
        """
        # Admitted when it was first placed; the record it was kept in bounds it, so it is only counted.
        size = json_size(raw) if self._max_inflight is not None else 0
        with self._inflight_lock:
            self._inflight += size
        # Never handed off again here: a resume asked to pause still goes on as far as its next new call.
        return self._guest_form(target, raw, ordinal, size, decision, may_hand_off=False)

    def _admit_input(self, target: InstalledOperation, raw: JsonValue) -> int:
        if self._max_input is None and self._max_inflight is None:
            return 0
        try:
            size = json_size(raw, limit=self._max_input)
        except JsonTooLarge as exc:
            raise InvalidInput(
                target.path, [f"the input is more than {exc.limit} bytes; one call may send at most {exc.limit}"]
            ) from None
        except NotJson as exc:
            raise InvalidInput(target.path, [str(exc)]) from None
        with self._inflight_lock:
            carried = self._inflight
            if self._max_inflight is None or carried + size <= self._max_inflight:
                self._inflight += size
                return size
        raise InvalidInput(
            target.path,
            [
                f"calls still running already carry {carried} bytes of input; all calls together "
                f"may carry at most {self._max_inflight}: await some before starting more"
            ],
        )

    async def _guest_form(
        self,
        target: InstalledOperation,
        raw: JsonValue,
        ordinal: int,
        size: int,
        decided: Decision | None = None,
        *,
        may_hand_off: bool = True,
    ) -> JsonValue:
        """What a guest receives: a refusal is an ordinary value, in its JSON form.

        The invocation starts here, inside the one coroutine a call is: a call never
        started leaves no second coroutine behind unawaited.
        """
        context = InvocationContext(
            execution_id=self.execution_id,
            tool_call_id=self.tool_call_id,
            session_id=self.session_id,
            operation_ordinal=ordinal,
            module_id=target.module.id,
            operation=target.relative,
            signal=self.signal,
        )
        try:
            if may_hand_off and self._pause is not None and self._pause.aborted:
                raise HandedOff(confirm_request(target, context, raw))
            outcome = await self._invoker.invoke(
                target,
                raw,
                context,
                may_defer=self._suspendable and decided is None,
                decided=decided,
                traced=self._traced,
            )
        finally:
            with self._inflight_lock:
                self._inflight -= size
        if isinstance(outcome, AccessRefusal):
            return outcome.to_json()  # type: ignore[return-value]  # to_json builds only JSON values
        return outcome


class _GraphBindings(Mapping[str, Mapping[str, BindingCallback]]):
    """Transport alias -> relative path -> callback, made on demand (a graph may hold thousands)."""

    def __init__(self, execution: Execution) -> None:
        self._execution = execution

    def __getitem__(self, transport: str) -> Mapping[str, BindingCallback]:
        if transport in self._execution.helpers:
            return self._execution.helpers[transport]
        module = self._execution.graph.by_transport(transport)
        if module is None:
            raise KeyError(transport)
        return _ModuleBindings(self._execution, module)

    def __iter__(self) -> Iterator[str]:
        yield from self._execution.helpers
        yield from (module.transport for module in self._execution.graph.modules)

    def __len__(self) -> int:
        return len(self._execution.helpers) + len(self._execution.graph.modules)


class _ModuleBindings(Mapping[str, BindingCallback]):
    def __init__(self, execution: Execution, module: InstalledModule) -> None:
        self._execution = execution
        self._module = module

    def __getitem__(self, relative: str) -> BindingCallback:
        return functools.partial(self._execution.call, self._module.operations[relative])

    def __iter__(self) -> Iterator[str]:
        return iter(self._module.operations)

    def __len__(self) -> int:
        return len(self._module.operations)
