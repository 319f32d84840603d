"""The envelopes the host and its sandbox child exchange, beyond :mod:`mycelium.sandbox.wire`'s.

The child runs a whole :class:`~mycelium.sandbox.SandboxRequest`, not only a wire start: it
also needs the request's limits, its stubs, whether it may pause, and for a resume the
paused state and which calls to start again. What a revision of the catalog makes the same
for every run (its namespaces, stubs and positional names, megabytes for 10,000 operations)
goes to a child once, as a :class:`RevisionMessage`; each run names it by its key, and both
ends keep the last :data:`KEPT_REVISIONS` the same way, so they always agree on which a child
holds. A call the host defers comes back as
:class:`CallDeferredMessage`; a paused run goes out as :class:`SuspendedMessage`, with the
state as base64 (bounded: :data:`MAX_STATE_BYTES`).

Everything the child sends is decoded by :func:`decode_child_message`, which never raises.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, Field, TypeAdapter

from ...failures import BadResponse

# The child's messages extend the wire's vocabulary: the same bounded field types and envelope base.
from ..wire import (
    CallMessage,
    CallResultMessage,
    DoneMessage,
    FailedMessage,
    LogMessage,
    NamespaceInfo,
    StartMessage,
    _Count,
    _Name,
    _Text,
    decode_untrusted,
)
from ..wire import _Envelope as _Message

MAX_STATE_BYTES = 64 * 1024 * 1024
"""The largest paused-run state a child may send (a paused heap), before base64."""
KEPT_REVISIONS = 32
"""How many revisions a child keeps, the least recently run forgotten first (the host mirrors it)."""


# --- host -> child ----------------------------------------------------------------------


class ResumeInfo(_Message):
    """What a resumed run starts from: the paused state and the sandbox's ids of its paused calls."""

    state: str
    """The state :class:`SuspendedMessage` carried, base64."""
    pending: list[_Count]


class RevisionMessage(_Message):
    """What every run of one revision shares, for the child to keep under ``key``."""

    type: Literal["revision"] = "revision"
    key: _Name
    namespaces: list[NamespaceInfo]
    stubs: dict[str, str]
    positional: dict[str, dict[str, str]]
    """Transport alias -> operation -> the name its one positional argument stands for, for the
    bindings that declare one (``forage.search("query")``; see ``positional_name``)."""


class RunMessage(_Message):
    """Run one request (or resume one) of the revision ``revision``: the wire start, and what the adapter needs.

    The start's ``namespaces`` are left empty: the revision holds them.
    """

    type: Literal["run"] = "run"
    revision: _Name
    start: StartMessage
    max_input_bytes: _Count | None
    max_result_bytes: _Count | None
    suspendable: bool
    workspace: str | None
    """The host directory to mount at ``/workspace`` for this run, if any."""
    resume: ResumeInfo | None = None


class CallDeferredMessage(_Message):
    """The host's binding deferred the call to a person: the run may pause at it."""

    type: Literal["call-deferred"] = "call-deferred"
    call_id: _Count
    path: _Name
    ordinal: _Count | None
    handed_off: bool


class CallFailedMessage(_Message):
    """The call failed on the host: the child raises the same host failure, so that one the
    program leaves unhandled ends the run as the host's own failure."""

    type: Literal["call-failed"] = "call-failed"
    call_id: _Count
    module: _Text
    operation: _Text
    path: _Text
    reference: _Text


HostToChild: TypeAlias = RevisionMessage | RunMessage | CallResultMessage | CallDeferredMessage | CallFailedMessage
_HOST_TO_CHILD: TypeAdapter[HostToChild] = TypeAdapter(Annotated[HostToChild, Field(discriminator="type")])


# --- child -> host ----------------------------------------------------------------------


class PendingCallMessage(_Message):
    """A resumed run starts one of the calls it paused at (``pending_id``: the sandbox's id for it)."""

    type: Literal["pending-call"] = "pending-call"
    call_id: _Count
    pending_id: _Count


class PausedCallIds(_Message):
    """One call a run paused at: the sandbox's id for it, and the ``call_id`` the host knows it by."""

    sandbox_id: _Count
    call_id: _Count


class SuspendedMessage(_Message):
    """The run paused at ``deferred``, in the order the program placed them."""

    type: Literal["suspended"] = "suspended"
    state: Annotated[str, Field(max_length=(MAX_STATE_BYTES * 4) // 3 + 4)]
    deferred: Annotated[list[PausedCallIds], Field(min_length=1)]


class HostFailureMessage(_Message):
    """The run ended with a host failure of one of its calls, unhandled: the host's own to raise.

    All its fields, not only its reference: a resumed run's failure may come from before the
    pause, which the paused state (not this host process) remembers."""

    type: Literal["host-failure"] = "host-failure"
    module: _Text
    operation: _Text
    path: _Text
    reference: _Text


class UnrestorableMessage(_Message):
    """The state a resume gave cannot be restored; nothing ran."""

    type: Literal["unrestorable"] = "unrestorable"
    reason: _Text


ChildMessage: TypeAlias = (
    CallMessage
    | PendingCallMessage
    | LogMessage
    | DoneMessage
    | FailedMessage
    | SuspendedMessage
    | HostFailureMessage
    | UnrestorableMessage
)
_CHILD_MESSAGE: TypeAdapter[ChildMessage] = TypeAdapter(Annotated[ChildMessage, Field(discriminator="type")])


def decode_child_message(data: bytes, *, max_bytes: int) -> ChildMessage | BadResponse:
    """One message from the child, or :class:`BadResponse` for anything else; never raises."""
    return decode_untrusted(_CHILD_MESSAGE, data, max_bytes=max_bytes)


def decode_host_to_child(data: bytes) -> HostToChild:
    """One message from the host (for the child). Raises ``ValueError`` if malformed: the host is ours."""
    decoded = decode_untrusted(_HOST_TO_CHILD, data, max_bytes=max(len(data), 1))
    if isinstance(decoded, BadResponse):
        raise ValueError("malformed host message")
    return decoded


def encode_message(message: BaseModel) -> bytes:
    """``message`` as compact UTF-8 JSON, its ``type`` first (the host reads a frame's type before its body)."""
    return message.model_dump_json().encode("utf-8")


def state_text(state: bytes) -> str:
    """A paused state as the envelopes carry it."""
    return base64.b64encode(state).decode("ascii")


def state_bytes(text: str) -> bytes | None:
    """The state ``text`` carries, or ``None`` when it is not base64."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
