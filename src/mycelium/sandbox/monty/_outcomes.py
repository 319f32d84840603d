"""A call's outcome as a program driven step by step receives it: its value, or an exception
of one of a few types, with a bounded message.

Monty accepts outcomes only in its own settled form; one stored in a paused run's state is
checked against that form when the state is read back.
"""

from __future__ import annotations

from typing import TypeAlias

from pydantic_monty import ExternalSettledResult

from ._errors import _clip

_Outcome: TypeAlias = ExternalSettledResult
# The exception types a call's outcome keeps when it crosses into the guest; any other is an Exception.
_GUEST_EXCEPTIONS = frozenset(
    {"ValueError", "RuntimeError", "TypeError", "KeyError", "PermissionError", "TimeoutError", "LookupError"}
)


def _raised(exc: BaseException) -> _Outcome:
    """What the guest gets at a call for ``exc``: the same exception type if it keeps it, else ``Exception``."""
    name = type(exc).__name__
    return {"exc_type": name if name in _GUEST_EXCEPTIONS else "Exception", "message": _clip(str(exc))}  # type: ignore[typeddict-item]


def _settled_form(outcome: object) -> _Outcome:
    """A stored outcome, checked to be one Monty accepts."""
    if isinstance(outcome, dict) and outcome.keys() == {"return_value"}:
        return {"return_value": outcome["return_value"]}
    if (
        isinstance(outcome, dict)
        and outcome.keys() == {"exc_type", "message"}
        and outcome["exc_type"] in _GUEST_EXCEPTIONS | {"Exception", "NameError"}
        and isinstance(outcome["message"], str)
    ):
        return {"exc_type": outcome["exc_type"], "message": outcome["message"]}
    raise ValueError("an outcome is malformed")
