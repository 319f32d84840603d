"""The closed set of typed execute failures.

Every failed execute ends in exactly one of these frozen dataclasses. Each has a
stable ``code`` (a class attribute, also in :meth:`to_dict`) that hosts and models can
branch on; the fields are safe facts, never host exception text. A sandbox adapter
reports a typed failure by raising :class:`SandboxError`; anything else it raises is
foreign and becomes :class:`Unknown`. :data:`Failure` is their union: ``help(Failure)``
lists every member with its code.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeAlias, Union, dataclass_transform, get_args

__all__ = [
    "MODEL_FIXABLE",
    "ApprovalPending",
    "BadResponse",
    "Cancelled",
    "CapabilityFailed",
    "DeadlineExceeded",
    "Failure",
    "FailureEvidence",
    "GuestException",
    "InvalidArguments",
    "InvalidResult",
    "ResultTooLarge",
    "ResumeRefusal",
    "SandboxBusy",
    "SandboxError",
    "SuspensionFailed",
    "SyntaxFailure",
    "TransportLost",
    "Unknown",
]


@dataclass_transform(frozen_default=True)
class _FailureBase:
    """Makes each failure class a frozen dataclass with its stable ``code``, given as a class keyword."""

    code: ClassVar[str]

    def __init_subclass__(cls, *, code: str, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.code = code
        dataclass(frozen=True)(cls)

    def to_dict(self) -> dict[str, object]:
        """The failure as a JSON-ready dict, ``code`` first."""
        return {"code": self.code, **dataclasses.asdict(self)}  # type: ignore[call-overload]


class SyntaxFailure(_FailureBase, code="syntax"):
    """The program could not be parsed (or failed its type check)."""

    message: str
    line: int | None = None
    column: int | None = None
    type_check: bool = False
    """True when the program parsed but failed its type check against the operations' stubs."""


class GuestException(_FailureBase, code="guest-exception"):
    """The program raised and did not handle it. ``traceback`` holds guest frames only."""

    type_name: str
    message: str
    traceback: str | None = None


class TransportLost(_FailureBase, code="transport-lost"):
    """The connection to the sandbox (a worker process) was lost mid-run."""


class BadResponse(_FailureBase, code="bad-response"):
    """The sandbox sent something malformed, oversized or unknown."""


class CapabilityFailed(_FailureBase, code="capability-failed"):
    """An operation failed on the host and the program did not handle it."""

    module: str
    operation: str
    reference: str
    path: str | None = None
    """The complete path the program called (``apps.bazaar.windows.open``): what the model typed."""


class DeadlineExceeded(_FailureBase, code="deadline-exceeded"):
    """The run hit its deadline. ``acknowledged`` is false while backing work may still run."""

    timeout_ms: int
    acknowledged: bool


class Cancelled(_FailureBase, code="cancelled"):
    """The caller cancelled the run. ``acknowledged`` is false while backing work may still run."""

    acknowledged: bool
    by: Literal["caller"] = "caller"


class InvalidResult(_FailureBase, code="invalid-result"):
    """The program's value is not JSON (a set, bytes, NaN, a cycle, an object...)."""

    reason: str


class ResultTooLarge(_FailureBase, code="result-too-large"):
    """The program's value encodes to more than the result limit; nothing is truncated."""

    size: int
    """At least this many bytes: measuring stops as soon as the limit is passed."""
    limit: int


class SandboxBusy(_FailureBase, code="sandbox-busy"):
    """No sandbox slot opened within the admission wait; the program has not run."""

    capacity: int
    waited_ms: int


class InvalidArguments(_FailureBase, code="invalid-arguments"):
    """A tool call's arguments were wrong; nothing ran. ``tool`` names the tool: ``execute`` or a direct tool."""

    message: str
    tool: str = "execute"
    advice: str | None = None
    """What to do instead, when that is not to send arguments in the tool's input shape (a
    program over the size bound: split the work)."""


ResumeRefusal: TypeAlias = Literal[
    "not-found",
    "expired",
    "already-resumed",
    "tampered",
    "revision-changed",
    "undecided",
    "decided-otherwise",
    "unrestorable",
]
"""Why a paused run could not resume. Nothing more of the run ran in any of these cases."""


class SuspensionFailed(_FailureBase, code="suspension-failed"):
    """A paused run could not resume; nothing more of it ran. ``reason`` says why."""

    suspension_id: str
    reason: ResumeRefusal


class ApprovalPending(_FailureBase, code="approval-pending"):
    """A paused run still waits for a person to approve or decline its call; nothing more of it ran.

    Not a dead end: asking again once the person has decided resumes the run."""

    suspension_id: str


class Unknown(_FailureBase, code="unknown"):
    """Something failed that Mycelium does not classify; the operator evidence has the cause."""


MODEL_FIXABLE = frozenset(
    {SyntaxFailure.code, GuestException.code, InvalidResult.code, ResultTooLarge.code, InvalidArguments.code}
)
"""Codes of the failures a model fixes by changing its program: the program's own mistakes.

They are routine (logged at INFO, not WARNING), and framework adapters send them to the
framework's retry channel while retries last."""

# A `typing.Union`, not an `X | Y` union: only the former can carry the docstring that
# `help(Failure)` shows. Both work alike in annotations, `isinstance` and `typing.get_args`.
Failure: TypeAlias = Union[  # noqa: UP007
    SyntaxFailure,
    GuestException,
    TransportLost,
    BadResponse,
    CapabilityFailed,
    DeadlineExceeded,
    Cancelled,
    InvalidResult,
    ResultTooLarge,
    SandboxBusy,
    InvalidArguments,
    SuspensionFailed,
    ApprovalPending,
    Unknown,
]
Failure.__doc__ = (
    """Any typed execute failure: one of a closed set of frozen dataclasses.

``ToolResult.failure`` and ``FailureEvidence.failure`` hold one. Each member has a stable
``code``; branch on the class with ``match`` (or on ``failure.code``), and test membership
with ``isinstance(value, Failure)``::

    match result.failure:
        case DeadlineExceeded(acknowledged=False): ...
        case CapabilityFailed(reference=reference): ...

The members, with their codes:

"""
    + "\n".join(f"- ``{kind.__name__}`` ({kind.code}): {kind.__doc__}" for kind in get_args(Failure))
    + "\n"
)


@dataclass(frozen=True)
class FailureEvidence:
    """What the operator gets for a failed execute. Never shown to a guest or a model."""

    reference: str
    """Also in the model's message, so a report can be matched to this evidence."""
    failure: Failure
    execution_id: str | None
    """``None`` when the arguments were refused; set for every attempt past that, run or not."""
    session_id: str | None
    tool_call_id: str | None
    adapter: str
    build_sha: str | None
    duration_ms: float
    cause: BaseException | None = None
    """The host-side exception behind the failure, if there was one."""


class SandboxError(Exception):
    """Raised by a sandbox adapter to end an execute with a typed failure."""

    def __init__(self, failure: Failure) -> None:
        self.failure = failure
        super().__init__(failure.code)
