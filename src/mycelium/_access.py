"""Access: the host's grants and a person's confirmation, checked before every operation call.

Operation authors label what an operation does (``access="read"`` observes,
``access="write"`` or no label changes something; ``confirm=True`` asks a person first).
Hosts pass their decisions down as data in :class:`Access`:

- ``grants``: module id (or its :func:`grant_as` key) -> ``"write"`` (every operation),
  ``"read"`` (read operations only) or ``"none"``. A key the host does not name keeps full
  access, so a host that grants nothing writes no permission code.
- ``session_grants``: read at **every call**; its keys override ``grants`` key by key, so a
  revoked grant applies to the very next call, even inside a running execute.
- ``required``: keys that fail closed: when nothing names one, it is ``"none"``.
- ``explicit``: every key fails closed, as if all were required: a module the grants do
  not name is refused (a served catalog's rule).
- ``confirm``: how the host asks a person (sync or async; only ``True`` approves, ``None``
  says nobody could be asked, ``"defer"`` says the person will answer later). Without it, a
  ``confirm=True`` operation is refused, never run unasked. After a person approves, the
  grant is read again: one revoked while they were deciding refuses the call. :func:`defer`
  defers every confirmation: in a runtime with suspensions the run pauses at the call and
  resumes once the person decides (see :mod:`mycelium.suspensions`); anywhere else a deferred
  confirmation is refused as ``confirmation-unavailable``.
- ``on_refused``: observes each refusal; it never changes the decision.

The gate (:mod:`mycelium._gate`) checks the grant first, then the person, both before the
input is decoded. A refused call returns an :class:`AccessRefusal` as its ordinary result (a
guest gets its JSON form) and nothing of the operation runs. A refusal still uses up its
ordinal: the call happened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ._context import InvocationContext
from ._hooks import Observer
from ._modules import Module, check_id
from ._operations import AccessLabel

__all__ = [
    "Access",
    "AccessRefusal",
    "ConfirmAnswer",
    "ConfirmRequest",
    "Decision",
    "DecisionDeferred",
    "Grant",
    "HandedOff",
    "RefusalReason",
    "RefusedCall",
    "defer",
    "grant_as",
    "is_grant",
]

Grant: TypeAlias = Literal["write", "read", "none"]
RefusalReason: TypeAlias = Literal[
    "not-granted", "read-only-grant", "confirmation-unavailable", "confirmation-declined"
]
ConfirmAnswer: TypeAlias = bool | Literal["defer"] | None
"""What a ``confirm`` callback answers: ``True`` approves, ``False`` declines, ``None`` says
nobody could be asked, ``"defer"`` says a person will decide later."""
Decision: TypeAlias = Literal["approved", "declined", "unavailable"]
"""A decision made outside the call: a person's, given to a resumed run, or ``"unavailable"``
when the run could not pause to wait for one."""
SessionGrants: TypeAlias = Callable[[], "Mapping[str, Grant] | Awaitable[Mapping[str, Grant]]"]

_GRANTS: frozenset[str] = frozenset({"write", "read", "none"})


@dataclass(frozen=True)
class AccessRefusal:
    """A call the host's access decisions refused. It is a result, not an exception."""

    module: str
    """The module id whose operation was refused."""
    operation: str
    """The operation's path relative to its module."""
    reason: RefusalReason
    message: str
    """Plain words a model can act on."""

    def to_json(self) -> dict[str, object]:
        """The form a guest program receives."""
        return {
            "refused": True,
            "module": self.module,
            "operation": self.operation,
            "reason": self.reason,
            "message": self.message,
        }


@dataclass(frozen=True)
class ConfirmRequest:
    """What a person is asked to confirm: which operation, by whom, and the raw arguments to show."""

    module_id: str
    module_name: str
    operation: str
    path: str
    access: AccessLabel
    session_id: str | None
    execution_id: str
    tool_call_id: str | None
    operation_ordinal: int | None
    arguments: object
    """The arguments as the caller sent them, not yet decoded: for display only."""


class DecisionDeferred(Exception):
    """Raised by the gate when the host deferred a confirmation in a run that can pause.

    It carries the call to decide: the run is suspended at it, and nothing of the call ran.
    """

    def __init__(self, request: ConfirmRequest) -> None:
        self.request = request
        super().__init__(f"{request.path} awaits a person's decision")


class HandedOff(DecisionDeferred):
    """Raised at a call of a run its host asked to pause (a draining server hands its runs off).

    The run is suspended there as for a deferred decision, but nobody decides: when it
    resumes, wherever that is, the call goes through the gate afresh, as if just placed.
    """

    def __init__(self, request: ConfirmRequest) -> None:
        self.request = request
        Exception.__init__(self, f"{request.path} was not started: the run was handed off")


def defer(request: ConfirmRequest) -> Literal["defer"]:
    """A ``confirm`` callback that defers every decision to a person who answers later.

    ``Access(confirm=defer)`` in a runtime with suspensions pauses a run at each confirm
    operation and hands the host a :class:`~mycelium.suspensions.Suspension` to decide.
    """
    return "defer"


@dataclass(frozen=True)
class RefusedCall:
    """What ``on_refused`` observes: the refusal and the call it refused."""

    refusal: AccessRefusal
    context: InvocationContext = field(repr=False)


@dataclass(frozen=True)
class Access:
    """The host's access decisions. See the module docstring for each field."""

    grants: Mapping[str, Grant] = field(default_factory=dict)
    session_grants: SessionGrants | None = None
    required: Collection[str] = ()
    explicit: bool = False
    confirm: Callable[[ConfirmRequest], ConfirmAnswer | Awaitable[ConfirmAnswer]] | None = None
    on_refused: Observer[RefusedCall] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.grants, Mapping):
            raise ValueError("Access.grants must be a mapping of module id to 'write', 'read' or 'none'")
        for key, grant in self.grants.items():
            if not is_grant(grant):
                raise ValueError(f"Access.grants[{key!r}] must be 'write', 'read' or 'none', got {grant!r}")
        if isinstance(self.required, str) or not isinstance(self.required, Collection):
            raise ValueError("Access.required must be a collection of module ids")
        if not isinstance(self.explicit, bool):
            raise ValueError(f"Access.explicit must be True or False, got {self.explicit!r}")
        for name in ("session_grants", "confirm", "on_refused"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise ValueError(f"Access.{name} must be callable")
        object.__setattr__(self, "grants", dict(self.grants))
        object.__setattr__(self, "required", frozenset(self.required))


def grant_as(module: Module, key: str) -> Module:
    """Look ``module``'s grant up under ``key`` (a wider owner, such as the extension that built it).

    Returns the same module, so it can wrap a registration: ``modules=[grant_as(m, "ext-1")]``.
    """
    module.grant_key = check_id("grant", key)
    return module


def is_grant(value: object) -> bool:
    """Whether ``value`` is one of the three grants."""
    return isinstance(value, str) and value in _GRANTS
