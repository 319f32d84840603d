"""What the host is told when a run goes wrong inside Monty: its errors as typed failures, the
guest's frames as a traceback in the guest's own line numbers, and the bound on every text
of the guest's or Monty's that a failure or a call's outcome quotes.
"""

from __future__ import annotations

import re
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
from .._namespaces import closest_names, missing_name_advice
from ._namespaces import _guest_line

if TYPE_CHECKING:
    from ._calls import _GuestRun
    from ._namespaces import _GuestModules

_MAX_TEXT = 2_000
# Monty reports some things its Python does not support (`raise ValueError(42)`) under this prefix.
_MONTY_LIMITATION = "Internal error in monty: "
# How Monty words a name a program typed that is not there, as it runs and as it is type-checked.
_NO_ATTRIBUTE = re.compile(r"[Mm]odule ['`]([\w.]+)['`] has no (?:attribute|member) ['`](\w+)['`]")
_NOT_DEFINED = re.compile(r"[Nn]ame ['`](\w+)['`] (?:is not defined|used when not defined)")


def _failure_for(exc: MontyError, run: _GuestRun, guest: _GuestModules, timeout_ms: int) -> Exception:
    """The exception that reports a Monty error in ``run`` (of ``guest``'s namespaces): a typed
    failure, or the host's own failure."""
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
        elif type_name in ("AttributeError", "NameError"):
            message = _with_advice(message, guest)
        return SandboxError(
            GuestException(type_name=type_name, message=_clip(message), traceback=_guest_traceback(exc.traceback()))
        )
    return SandboxError(TransportLost())


def _with_advice(message: str, guest: _GuestModules) -> str:
    """``message`` (Monty's or its type checker's), with the names the program may have meant
    when it typed one its namespaces lack.

    Suggestions come from the run's own namespaces only, which hold just what its lease offers.
    """
    if missing := _NO_ATTRIBUTE.fullmatch(message):
        namespace, name = missing.groups()
        members = guest.members.get(namespace if namespace == "env" else namespace.removeprefix("env."))
        if members is not None:  # one of ours, not an object of the program's
            return f"{message} ({missing_name_advice(namespace, closest_names(name, members, namespace))})"
    elif missing := _NOT_DEFINED.fullmatch(message):
        # Most undefined names are the program's own; only a near miss of a namespace, or an
        # operation called without its namespace, gets advice.
        name = missing.group(1)
        bare = [path for path in guest.leaves if not path.startswith("env.") and path.rsplit(".", 1)[-1] == name]
        suggestions = [*closest_names(name, guest.members[""]), *bare][:3]
        if suggestions:
            return f"{message} ({missing_name_advice('', suggestions)})"
    return message


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
