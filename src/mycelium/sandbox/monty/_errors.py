"""What the host is told when a run goes wrong inside Monty: its errors as typed failures, the
guest's frames as a traceback in the guest's own line numbers, and the bound on every text
of the guest's or Monty's that a failure or a call's outcome quotes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic_monty import (
    Frame,
    MontyConversionError,
    MontyCrashedError,
    MontyError,
    MontyRuntimeError,
    MontySyntaxError,
)

from ..._text import clip
from ...failures import DeadlineExceeded, GuestException, InvalidResult, SandboxError, SyntaxFailure, TransportLost
from ._namespaces import _guest_line

if TYPE_CHECKING:
    from ._calls import _GuestRun

_MAX_TEXT = 2_000
# Monty reports some things its Python does not support (`raise ValueError(42)`) under this prefix.
_MONTY_LIMITATION = "Internal error in monty: "


def _failure_for(exc: MontyError, run: _GuestRun, timeout_ms: int) -> Exception:
    """The exception that reports a Monty error in ``run``: a typed failure, or the host's own failure."""
    if isinstance(exc, MontySyntaxError):
        frames = exc.traceback()
        if frames and frames[-1].function_name is not None:
            # Raised by exec() or eval() while the program ran: not "nothing ran".
            return SandboxError(
                GuestException(
                    type_name="SyntaxError", message=_clip(str(exc.exception())), traceback=_guest_traceback(frames)
                )
            )
        line = _guest_line(frames[0].line) if frames else None
        column = frames[0].column if frames else None
        return SandboxError(SyntaxFailure(message=_clip(str(exc.exception())), line=line, column=column))
    if isinstance(exc, MontyCrashedError):
        if exc.timed_out:
            return SandboxError(DeadlineExceeded(timeout_ms=timeout_ms, acknowledged=True))
        return SandboxError(TransportLost())
    if isinstance(exc, MontyConversionError):
        return SandboxError(InvalidResult(reason=f"the value cannot leave the sandbox: {_clip(str(exc))}"))
    if isinstance(exc, MontyRuntimeError):
        inner = exc.exception()
        # Clipped before anything reads it: a guest's message may be megabytes long.
        message = _clip(str(inner))
        type_name = type(inner).__name__
        for failure in run.host_failures():
            # Our own message, unique by its reference, came back out: nobody handled it.
            if type(inner) is RuntimeError and message == str(failure):
                return failure
        if type(inner) is RuntimeError and message.startswith(_MONTY_LIMITATION):
            # Not a fault of the host: something the sandbox's Python does not support.
            type_name = "NotImplementedError"
            message = f"the sandbox does not support this: {message.removeprefix(_MONTY_LIMITATION)}"
        elif "'coroutine'" in message:
            # The guest used a call's coroutine as if it were its result.
            message = f"{message} (an operation call was not awaited; {run.called()})"
        return SandboxError(
            GuestException(type_name=type_name, message=_clip(message), traceback=_guest_traceback(exc.traceback()))
        )
    return SandboxError(TransportLost())


def _guest_traceback(frames: list[Frame]) -> str:
    """The guest's frames as a traceback, in the guest's own line numbers."""
    lines = []
    for frame in frames[-20:]:
        where = f"line {_guest_line(frame.line)}" + (f", in {frame.function_name}" if frame.function_name else "")
        lines.append(f"  {where}: {(frame.source_line or '').strip()}")
    if len(frames) > 20:
        lines.insert(0, f"  ... {len(frames) - 20} earlier frames")
    return _clip("\n".join(lines))


def _clip(text: str) -> str:
    """``text`` cut to the length any one text may have in a failure or a call's outcome."""
    return clip(text, _MAX_TEXT)
