"""Turn what a sandbox raised into a typed failure, and a failure into what a model reads.

Classification is by type only: never by message text, never by walking an
exception's cause chain. The model-facing message says what happened and what the
model can do next, carries the reference that ties it to the operator's evidence, and
is at most :data:`MAX_FAILURE_MESSAGE_CHARS` characters. It holds nothing from the host.
"""

from __future__ import annotations

from .._exceptions import InvalidInput, OperationFailed
from .._text import clip
from ..failures import (
    ApprovalPending,
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
    SuspensionFailed,
    SyntaxFailure,
    TransportLost,
    Unknown,
)

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
        return CapabilityFailed(module=exc.module, operation=exc.operation, reference=exc.reference, path=exc.path)
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
            told = _with_detail(f"The program {problem}{where}", message)
            return f"{told} Fix it and run it again; nothing ran."
        case GuestException(type_name=type_name, message=message):
            told = _with_detail(f"The program raised {_clip(type_name, 80)}", message)
            return f"{told} Fix the program or handle the error, then run it again."
        case TransportLost():
            return "The sandbox stopped before the program finished. Run it again; if it recurs, do less per run."
        case BadResponse():
            return (
                "The sandbox sent a malformed response, so how far the program got is unknown: "
                f"operations it called may have run. {_MAYBE_LATER}"
            )
        case CapabilityFailed(operation=operation, path=path):
            return (
                f"The operation {_clip(path or operation, 160)} failed on the host; your input was not the cause. "
                f"Calls that finished before it took effect. {_MAYBE_LATER}"
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
            told = _with_detail("The program's result is not JSON", reason)
            return f"{told} Return only dicts with string keys, lists, strings, finite numbers, booleans and None."
        case ResultTooLarge(size=size, limit=limit):
            return (
                f"The result is more than the limit of {limit} bytes (at least {size}); nothing was returned. "
                "Return a smaller result: filter, summarise or page through the data."
            )
        case SandboxBusy(capacity=capacity, waited_ms=waited_ms):
            return (
                f"All {capacity} sandbox slots stayed busy for {waited_ms} ms, so the program did not run. Retry later."
            )
        case InvalidArguments(message=message, tool=tool, advice=str(advice)):
            return f"{_with_detail(f'The {_clip(tool, 64)} call was refused', message)} {advice}"
        case InvalidArguments(message=message, tool="execute"):
            told = _with_detail("The execute call was malformed", message)
            return f'{told} Call it with {{"code": "<a Python program>"}} and nothing else.'
        case InvalidArguments(message=message, tool=tool):
            told = _with_detail(f"The {_clip(tool, 64)} call was malformed", message)
            return f"{told} Call it again with arguments that match its input schema."
        case SuspensionFailed(suspension_id=suspension_id, reason=reason):
            which = _clip(suspension_id, 80) if suspension_id else "of this tool call"
            return f"The paused run {which} cannot continue: {_RESUME_REFUSALS[reason]} Nothing more of it ran."
        case ApprovalPending(suspension_id=suspension_id):
            return (
                f"The paused run {_clip(suspension_id, 80)} still waits for a person to approve or decline the "
                "call it paused at; nothing more of it ran. Do not run the program again: ask again later the "
                "same way, or tell the user what awaits their approval."
            )
        case Unknown():
            return (
                "The run failed on the host for a reason it could not classify; operations the program called "
                f"may have run. {_MAYBE_LATER}"
            )


_RESUME_REFUSALS = {
    "not-found": "there is no such paused run waiting (it finished, was already resumed, or never existed).",
    "expired": "the time to decide ran out, so the call that awaited approval did not run.",
    "already-resumed": "it has already been resumed (or was discarded), and a paused run never runs twice.",
    "tampered": "its stored state failed its integrity check.",
    "revision-changed": "the operations it was using have changed since it paused.",
    "undecided": "nobody has approved or declined the call it waits for yet.",
    "decided-otherwise": "the decision recorded for it says otherwise.",
    "unrestorable": "its sandbox state could not be restored.",
}

# The host cannot tell a passing fault from a lasting one: say so, and give the model a way out.
_MAYBE_LATER = "It may work if tried again later; if it fails again, continue without it or tell the user."
_SENTENCE_ENDS = (".", "?", "!")


def _with_detail(head: str, detail: str) -> str:
    """``head: detail`` as one sentence ending in exactly one mark (``head.`` when there is no detail).

    Guest and sandbox messages often end a sentence themselves ("Did you forget to import
    'asyncio'?"); they get no second mark.
    """
    text = _clip(detail)
    if not text:
        return f"{head}."
    return f"{head}: {text}" if text.endswith(_SENTENCE_ENDS) else f"{head}: {text}."


def _clip(text: str, limit: int = _MAX_DETAIL_CHARS) -> str:
    return clip(text.strip(), limit)
