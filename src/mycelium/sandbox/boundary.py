"""Turn what a sandbox raised into a typed failure, and a failure into what a model reads.

Classification is by type only: never by message text, never by walking an
exception's cause chain. The model-facing message says what happened and what the
model can do next, carries the reference that ties it to the operator's evidence, and
is at most :data:`MAX_FAILURE_MESSAGE_CHARS` characters. It holds nothing from the host.
"""

from __future__ import annotations

from ..errors import InvalidInput, OperationFailed
from ..failures import (
    BadResponse,
    Cancelled,
    CapabilityFailed,
    DeadlineExceeded,
    Failure,
    GuestException,
    InvalidArguments,
    InvalidResult,
    ResultTooLarge,
    SandboxBusy,
    SandboxError,
    SyntaxFailure,
    TransportLost,
    Unknown,
)
from ..text import clip

__all__ = ["MAX_FAILURE_MESSAGE_CHARS", "failure_from_exception", "sandbox_failure_message"]

MAX_FAILURE_MESSAGE_CHARS = 1_000
_MAX_DETAIL_CHARS = 400


def failure_from_exception(exc: BaseException) -> Failure:
    """The typed failure for an exception that escaped a sandbox's ``execute``.

    A :class:`SandboxError` carries its own failure; an unhandled :class:`OperationFailed`
    is ``capability-failed``; an unhandled :class:`InvalidInput` is the guest's own
    ``ValueError``. Everything else is foreign and becomes :class:`Unknown`.
    """
    if isinstance(exc, SandboxError):
        return exc.failure
    if isinstance(exc, OperationFailed):
        return CapabilityFailed(module=exc.module, operation=exc.operation, reference=exc.reference)
    if isinstance(exc, InvalidInput):
        return GuestException(type_name="ValueError", message=str(exc))
    return Unknown()


def sandbox_failure_message(failure: Failure, reference: str) -> str:
    """The bounded, host-detail-free message a model reads for ``failure``."""
    text = f"{_describe(failure)} (reference {reference})"
    if len(text) > MAX_FAILURE_MESSAGE_CHARS:
        tail = f"... (reference {reference})"
        text = text[: MAX_FAILURE_MESSAGE_CHARS - len(tail)] + tail
    return text


def _describe(failure: Failure) -> str:
    match failure:
        case SyntaxFailure(message=message, line=line, column=column, type_check=type_check):
            where = "" if line is None else f" at line {line}" + ("" if column is None else f", column {column}")
            problem = "failed its type check" if type_check else "has a syntax error"
            return f"The program {problem}{where}: {_clip(message)}. Fix it and run it again; nothing ran."
        case GuestException(type_name=type_name, message=message):
            return (
                f"The program raised {_clip(type_name, 80)}: {_clip(message)}. "
                "Fix the program or handle the error, then run it again."
            )
        case TransportLost():
            return "The sandbox stopped before the program finished. Run it again; if it recurs, do less per run."
        case BadResponse():
            return "The sandbox sent a malformed response. Retry later."
        case CapabilityFailed(module=module, operation=operation):
            return (
                f"The operation {_clip(operation, 160)} of module {_clip(module, 160)} failed on the host; "
                "your input was not the cause. Retry later or continue without it."
            )
        case DeadlineExceeded(timeout_ms=timeout_ms, acknowledged=acknowledged):
            state = "was stopped" if acknowledged else "is being stopped"
            return (
                f"The program did not finish within {timeout_ms} ms and {state}. "
                "Do less in one run (fewer calls, smaller loops) or split the work."
            )
        case Cancelled(acknowledged=acknowledged):
            state = "stopped" if acknowledged else "is being stopped"
            return f"The run was cancelled by the caller and {state}."
        case InvalidResult(reason=reason):
            return (
                f"The program's result is not JSON: {_clip(reason)}. Return only dicts with string keys, "
                "lists, strings, finite numbers, booleans and None."
            )
        case ResultTooLarge(size=size, limit=limit):
            return (
                f"The result is {size} bytes, over the limit of {limit} bytes; nothing was returned. "
                "Return a smaller result: filter, summarise or page through the data."
            )
        case SandboxBusy(capacity=capacity, waited_ms=waited_ms):
            return (
                f"All {capacity} sandbox slots stayed busy for {waited_ms} ms, so the program did not run. "
                "Retry later."
            )
        case InvalidArguments(message=message):
            return (
                f"The execute call was malformed: {_clip(message)}. "
                'Call it with {"code": "<a Python program>"} and nothing else.'
            )
        case Unknown():
            return "The run failed for a reason the host did not classify. Retry later."


def _clip(text: str, limit: int = _MAX_DETAIL_CHARS) -> str:
    return clip(text.strip().rstrip("."), limit)
