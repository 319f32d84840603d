"""What a suspension is: the pending call a person decides, and the record that lets the run go on.

A :class:`SuspensionRecord` is everything the runtime seals for one paused run; a
:class:`Suspension` is the part of it a host shows a person. Time here is wall-clock time
(:func:`now`), since every process sharing a store must agree on when a record expires.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from .._access import DecisionDeferred, HandedOff
from .._graph import OperationGraph
from .._operations import AccessLabel
from .._values import JsonValue

__all__ = ["PausedCall", "Suspension", "SuspensionRecord", "module_digests", "now", "paused_calls"]


@dataclass(frozen=True)
class Suspension:
    """A run paused at a call that awaits a person's decision: what a host shows them.

    The person approves this exact call (``path`` with ``arguments``), never "the program".
    """

    id: str
    """Stable and unguessable; pass it to ``Runtime.resume``."""
    module_id: str
    operation: str
    """The operation's path inside its module."""
    path: str
    """The path the program called (``crm.contacts.delete``)."""
    access: AccessLabel
    arguments: JsonValue
    """The call's input, already checked against the operation's input schema."""
    operation_ordinal: int
    tool_call_id: str | None
    execution_id: str
    session_id: str | None
    expires_at: datetime
    """After this the run can no longer resume (UTC)."""
    handed_off: bool = False
    """The run was paused because its host handed it off (a server stopping), not for a person:
    nobody decides it; resuming it with no decision goes on, this call going through the gate afresh."""
    requester: str | None = None
    """Whom the run's session acts for, as its host named it (``Session.requester``)."""

    def to_json(self) -> dict[str, JsonValue]:
        """The pending call as JSON, for an approval screen or a framework's approval request.

        Keys: ``suspension_id`` (what an answer names), ``tool_call_id``, ``module_id``,
        ``path``, ``access``, ``arguments`` and ``expires_at`` (ISO 8601, UTC).
        """
        return {
            "suspension_id": self.id,
            "tool_call_id": self.tool_call_id,
            "module_id": self.module_id,
            "path": self.path,
            "access": self.access,
            "arguments": self.arguments,
            "expires_at": self.expires_at.isoformat(),
        }

    def model_text(self) -> str:
        """What the model reads: the run is paused, not failed, and must not be started again."""
        if self.handed_off:
            return (
                f"Paused: the server handed this run off before {self.path} (suspension {self.id}). "
                "Everything the program did before that call has happened; the rest continues when the "
                "run is resumed. Do not run this again."
            )
        return (
            f"Paused for approval: {self.path} needs a person to approve it before it runs "
            f"(suspension {self.id}). Everything the program did before that call has happened; the rest "
            "continues once the person decides. Do not run this again or retry the call: tell the user what "
            "awaits their approval."
        )


@dataclass(frozen=True)
class PausedCall:
    """A call the paused run deferred, as the record keeps it."""

    call: int
    """The sandbox's id for the call (see :class:`~mycelium.sandbox.Suspended`)."""
    module_id: str
    operation: str
    path: str
    access: AccessLabel
    arguments: JsonValue
    ordinal: int
    handed_off: bool = False
    """Whether the call was paused because the host handed the run off, not for a decision: on
    resume it goes through the gate afresh."""


@dataclass(frozen=True)
class SuspensionRecord:
    """Everything sealed for one suspension: what resuming needs, and nothing of the host's."""

    id: str
    session_id: str | None
    tool_call_id: str | None
    execution_id: str
    code: str
    created_at: float
    expires_at: float
    spent_ms: int
    """Run time used before the pause; time spent paused does not count."""
    next_ordinal: int
    sources: Mapping[str, str]
    """Source id -> version of the revision the run ran against (evidence)."""
    modules: Mapping[str, str]
    """Module id -> digest of its path, transport and operation labels: what must not change."""
    calls: tuple[PausedCall, ...]
    """The first is the one to decide; the others are asked again on resume."""
    logs: tuple[str, ...]
    """What the program printed before the pause: the resumed result carries it too."""
    state: bytes
    resumed: bool = False
    """Whether the run had resumed before it paused here: a decision replayed with its tool call
    (which names no suspension) decides only a first pause, never this one."""
    claimed: bool = False
    """A tombstone's record (see :meth:`tombstone`): it was claimed, and resumes nothing."""
    requester: str | None = None
    """Whom the run's session acts for (``Session.requester``): shown to the person who decides."""

    def tombstone(self) -> SuspensionRecord:
        """What is kept of this record once it is claimed: who it was and a digest of its program,
        so a retry of the resume or of its tool call is recognised; not its program's text (up to
        64 KiB, kept for a day), its state, calls or output."""
        return dataclasses.replace(self, code=_digest(self.code), calls=(), logs=(), state=b"", claimed=True)

    @property
    def handed_off(self) -> bool:
        """Whether the run was handed off (see :class:`~mycelium._access.HandedOff`): nobody decides
        it, and it resumes with no decision."""
        return bool(self.calls) and self.calls[0].handed_off

    def runs(self, code: str) -> bool:
        """Whether this record (or its tombstone) is of a run of ``code``."""
        return self.code == (_digest(code) if self.claimed else code)

    def suspension(self) -> Suspension:
        """The host-facing view of the pending call."""
        first = self.calls[0]
        return Suspension(
            id=self.id,
            module_id=first.module_id,
            operation=first.operation,
            path=first.path,
            access=first.access,
            arguments=first.arguments,
            operation_ordinal=first.ordinal,
            tool_call_id=self.tool_call_id,
            execution_id=self.execution_id,
            session_id=self.session_id,
            expires_at=datetime.fromtimestamp(self.expires_at, UTC),
            handed_off=first.handed_off,
            requester=self.requester,
        )


def paused_calls(deferred: Mapping[int, DecisionDeferred]) -> tuple[PausedCall, ...]:
    """The record's form of a sandbox's deferred calls, in the sandbox's order."""
    calls = []
    for call, deferral in deferred.items():
        request = deferral.request
        calls.append(
            PausedCall(
                call=call,
                module_id=request.module_id,
                operation=request.operation,
                path=request.path,
                access=request.access,
                arguments=request.arguments,  # type: ignore[arg-type]  # a guest's call input is JSON
                ordinal=request.operation_ordinal or 0,
                handed_off=isinstance(deferral, HandedOff),
            )
        )
    return tuple(calls)


def module_digests(graph: OperationGraph) -> dict[str, str]:
    """Module id -> a digest of what a paused program relies on: where the module is, and each
    operation's path and labels. A resumed run needs every one of its modules unchanged."""
    digests = {}
    for module in graph.modules:
        shape = [
            module.path,
            module.transport,
            module.grant_key,
            [
                (relative, target.operation.access, target.operation.confirm)
                for relative, target in module.operations.items()
            ],
        ]
        digests[module.id] = hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:32]
    return digests


def _digest(code: str) -> str:
    return "sha256:" + hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def now() -> float:
    """Wall-clock time, shared by every process that uses a store."""
    return time.time()
