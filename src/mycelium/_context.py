"""Who is calling: sessions and the identity every operation call receives."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._exceptions import MissingExecuteIdentity
from ._signals import AbortSignal

__all__ = ["CallContext", "ExecuteIdentity", "InvocationContext", "Session"]


@dataclass(frozen=True)
class Session:
    """The host's conversation or user session. ``id`` is a non-empty string.

    ``requester`` names whom the session acts for (a user, an agent), for a person deciding
    what its paused runs wait for: it is kept with each suspension (``Suspension.requester``).
    Never a credential.
    """

    id: str
    requester: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"Session id must be a non-empty string, got {self.id!r}")
        if self.requester is not None and not isinstance(self.requester, str):
            raise ValueError(f"Session requester must be a string or None, got {type(self.requester).__name__}")


@dataclass(frozen=True)
class ExecuteIdentity:
    """The pair that places a call inside one execute: the tool call and the call's position."""

    tool_call_id: str
    operation_ordinal: int


@dataclass(frozen=True)
class InvocationContext:
    """What one operation call knows about itself. Frozen: an operation cannot rewrite it.

    Inside an execute, ``operation_ordinal`` is the call's zero-based position among all
    operation calls of that execute attempt, allocated when the binding is called. A
    replay of the same program gets the same ordinals under a fresh ``execution_id``.
    An ordinal alone is not globally unique: combine it with the session and
    ``tool_call_id`` for deduplication, and still compare the intended payload.
    Identity grants no authority.

    ``signal`` is aborted when the call's run is stopped (its deadline, or its caller).
    A sync operation runs in a worker thread that nothing can interrupt: once started it
    runs to its end, and until it returns its run is not settled (a stop is reported
    ``acknowledged=False``, the run keeps its sandbox slot and ``Runtime.close()`` waits).
    To make a long sync operation stoppable, poll ``signal.aborted`` between steps and
    return early (a run that was stopped shows nobody what it returns). An async operation
    is cancelled at its next ``await``.
    """

    execution_id: str
    tool_call_id: str | None
    session_id: str | None
    operation_ordinal: int | None
    module_id: str
    operation: str
    signal: AbortSignal = field(repr=False, compare=False)

    def require_execute_identity(self) -> ExecuteIdentity:
        """Return the execute identity, or raise :class:`MissingExecuteIdentity` if part is missing.

        For operations whose writes must refuse rather than invent a fallback identity.
        """
        if self.tool_call_id is None or self.operation_ordinal is None:
            missing = [
                name
                for name, value in (("tool_call_id", self.tool_call_id), ("operation_ordinal", self.operation_ordinal))
                if value is None
            ]
            raise MissingExecuteIdentity(
                f"{self.module_id}:{self.operation} requires execute identity; missing {', '.join(missing)}"
            )
        return ExecuteIdentity(self.tool_call_id, self.operation_ordinal)


@dataclass(frozen=True)
class CallContext:
    """The identity a host supplies for a direct ``Runtime.invoke`` outside any execute.

    Fields left ``None`` stay ``None`` in the operation's :class:`InvocationContext`,
    except ``execution_id`` (a fresh id is made) and ``signal`` (a signal nobody aborts).
    """

    execution_id: str | None = None
    tool_call_id: str | None = None
    operation_ordinal: int | None = None
    signal: AbortSignal | None = None
