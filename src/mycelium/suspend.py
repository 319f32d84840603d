"""Suspensions: runs paused at a person's decision and kept, sealed, until the decision comes.

A runtime opts in with ``Runtime(suspensions=Suspensions(...))`` and a ``confirm`` callback
that answers ``"defer"`` (:func:`~mycelium.access.defer` always does). When a program calls
a ``confirm=True`` operation and the host defers, the run does not wait in memory: the
calls it has in flight settle, the sandbox captures the run, and the execute settles at
once with a :class:`~mycelium.execute.ToolResult` whose ``suspension`` names the pending
call. Later (minutes or days, in this process or another sharing the store) the host
resumes it with the person's decision: the pending call runs or is refused, and the
program goes on from where it stopped. Nothing that already ran runs again.

What is stored is sealed: an HMAC-SHA256 under the host's ``key`` covers the sandbox's
state and everything the runtime needs to continue (identity, the next ordinal, the
revision the run was offered, the pending calls and their arguments). A record changed
in the store is refused; a decision is sealed to the one suspension it decides.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

import anyio

from .access import DecisionDeferred
from .graph import OperationGraph
from .operations import AccessLabel
from .options import check_int
from .suspensions import MemorySuspensions, StoredSuspension, SuspensionLimitReached, SuspensionStore
from .values import JsonValue

__all__ = ["PausedCall", "StoreUnavailable", "Suspension", "SuspensionRecord", "Suspensions", "module_digests"]

T = TypeVar("T")

MIB = 1024 * 1024
_MAC_BYTES = 32
SEAL_ON_LOOP_BYTES = 256 * 1024
"""Sealing or checking a record larger than this hashes it off the event loop; less takes under a millisecond."""
_RECORD_MAGIC = b"MYCSUSP1"
_DECISIONS = {True: b"approved", False: b"declined"}


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
            )
        )
    return tuple(calls)


class StoreUnavailable(Exception):
    """The suspension store failed or did not answer in time; the cause is chained."""


@dataclass(frozen=True)
class Suspensions:
    """A runtime's opt-in to pausing runs at deferred decisions.

    - ``store``: where suspensions are kept (:class:`~mycelium.suspensions.MemorySuspensions`
      by default; ``SqliteSuspensions`` survives a restart, ``PostgresSuspensions`` is shared
      by several servers).
    - ``key``: the HMAC key that seals what is stored, at least 16 bytes. Required for a
      store that outlives the process (every process that resumes needs the same key); a
      memory store gets a random one.
    - ``expires_after_ms``: how long a suspension waits for its decision (24 hours).
    - ``max_per_session``: how many suspensions one session may hold at once (20). When
      it is full, a deferred call is refused as ``confirmation-unavailable`` and the run
      goes on; so it is when a paused run's state is over ``max_state_bytes`` (16 MiB).
    - ``store_timeout_ms``: how long one store operation may take (10 s, and never past the
      run's deadline). A store that fails or takes longer ends the run with an ``unknown``
      failure: whether it kept the pause is not known, so the run does not go on.
    """

    store: SuspensionStore = field(default_factory=MemorySuspensions)
    key: bytes | None = field(default=None, repr=False)
    expires_after_ms: int = 86_400_000
    max_per_session: int = 20
    max_state_bytes: int = 16 * MIB
    store_timeout_ms: int = 10_000

    def __post_init__(self) -> None:
        if not isinstance(self.store, SuspensionStore):
            raise ValueError(f"Suspensions.store must implement SuspensionStore, got {type(self.store).__name__}")
        check_int("Suspensions.expires_after_ms", self.expires_after_ms)
        check_int("Suspensions.max_per_session", self.max_per_session)
        check_int("Suspensions.max_state_bytes", self.max_state_bytes)
        check_int("Suspensions.store_timeout_ms", self.store_timeout_ms)
        if self.key is None:
            if not isinstance(self.store, MemorySuspensions):
                raise ValueError(
                    "Suspensions.key is required with a store that outlives this process: every process "
                    "that resumes a suspension must seal and check it with the same key"
                )
            object.__setattr__(self, "key", secrets.token_bytes(32))
        elif not isinstance(self.key, bytes) or len(self.key) < 16:
            raise ValueError("Suspensions.key must be bytes, at least 16 of them")

    async def stored(self, operation: Callable[[], Awaitable[T]], *, until: float | None = None) -> T:
        """Run one store operation within ``store_timeout_ms`` (and by ``until``, on anyio's clock).

        Raises :class:`StoreUnavailable` for any failure of the store (its own error, or
        taking too long); :class:`~mycelium.suspensions.SuspensionLimitReached` passes through.
        """
        within = self.store_timeout_ms / 1000
        if until is not None:
            within = max(0.0, min(within, until - anyio.current_time()))
        try:
            with anyio.fail_after(within):
                return await operation()
        except SuspensionLimitReached:
            raise
        except Exception as exc:
            raise StoreUnavailable(f"the suspension store failed: {type(exc).__name__}") from exc

    def new_id(self) -> str:
        """A fresh, unguessable suspension id."""
        return f"susp-{secrets.token_hex(16)}"

    def seal(self, record: SuspensionRecord) -> StoredSuspension:
        """The stored form of ``record``, sealed under the key."""
        header = json.dumps(
            {
                "id": record.id,
                "session_id": record.session_id,
                "tool_call_id": record.tool_call_id,
                "execution_id": record.execution_id,
                "code": record.code,
                "created_at": record.created_at,
                "expires_at": record.expires_at,
                "spent_ms": record.spent_ms,
                "next_ordinal": record.next_ordinal,
                "sources": dict(record.sources),
                "modules": dict(record.modules),
                "calls": [call.__dict__ for call in record.calls],
                "logs": list(record.logs),
                "resumed": record.resumed,
            },
            separators=(",", ":"),
            allow_nan=False,
        ).encode()
        body = _RECORD_MAGIC + len(header).to_bytes(4, "big") + header + record.state
        return StoredSuspension(
            id=record.id,
            session_id=record.session_id,
            tool_call_id=record.tool_call_id,
            expires_at=record.expires_at,
            record=body + self._mac(body),
        )

    async def unsealed(self, stored: StoredSuspension) -> SuspensionRecord | None:
        """:meth:`unseal`, for a large record off the event loop (checking the seal hashes it all)."""
        if len(stored.record) > SEAL_ON_LOOP_BYTES:
            return await anyio.to_thread.run_sync(self.unseal, stored)
        return self.unseal(stored)

    async def of_call(
        self, session_id: str | None, tool_call_id: str, code: str
    ) -> tuple[StoredSuspension, SuspensionRecord | None] | None:
        """The newest suspension of this session's tool call whose record is ``code``'s, expired or not.

        Its record is ``None`` when the seal fails (such a suspension is refused, never taken for
        another program's). Raises :class:`StoreUnavailable` when the store fails.
        """
        found = await self.stored(lambda: self.store.find(session_id, tool_call_id))
        for stored in found:
            record = await self.unsealed(stored)
            if record is None or record.code == code:  # else: another program under the same tool call id
                return stored, record
        return None

    async def waiting(self, session_id: str | None, tool_call_id: str, code: str) -> Suspension | None:
        """The unexpired suspension this session's tool call of ``code`` waits in, if any (see :meth:`of_call`)."""
        paused = await self.of_call(session_id, tool_call_id, code)
        record = paused[1] if paused is not None else None
        return record.suspension() if record is not None and record.expires_at > now() else None

    def unseal(self, stored: StoredSuspension) -> SuspensionRecord | None:
        """The record inside ``stored``, or ``None`` when its seal or its columns do not match it."""
        blob = stored.record
        body, mac = blob[:-_MAC_BYTES], blob[-_MAC_BYTES:]
        if len(blob) <= _MAC_BYTES or not hmac.compare_digest(mac, self._mac(body)):
            return None
        try:
            start = len(_RECORD_MAGIC) + 4
            end = start + int.from_bytes(body[len(_RECORD_MAGIC) : start], "big")
            header = json.loads(body[start:end])
            record = SuspensionRecord(
                id=header["id"],
                session_id=header["session_id"],
                tool_call_id=header["tool_call_id"],
                execution_id=header["execution_id"],
                code=header["code"],
                created_at=header["created_at"],
                expires_at=header["expires_at"],
                spent_ms=header["spent_ms"],
                next_ordinal=header["next_ordinal"],
                sources=header["sources"],
                modules=header["modules"],
                calls=tuple(PausedCall(**call) for call in header["calls"]),
                logs=tuple(str(line) for line in header["logs"]),
                state=body[end:],
                resumed=header["resumed"] is True,
            )
        except (ValueError, TypeError, KeyError):
            return None  # sealed by us yet unreadable: a record of another version
        # The columns a store searches by must say what the sealed record says.
        columns = (stored.id, stored.session_id, stored.tool_call_id, stored.expires_at)
        if columns != (record.id, record.session_id, record.tool_call_id, record.expires_at) or not record.calls:
            return None
        return record

    def seal_decision(self, suspension_id: str, approved: bool) -> bytes:
        """A decision bound to one suspension."""
        word = _DECISIONS[approved]
        return word + self._mac(suspension_id.encode() + b":" + word)

    def open_decision(self, suspension_id: str, sealed: bytes | None) -> bool | None:
        """The decision sealed for ``suspension_id``; ``None`` when there is none or it is not one of ours."""
        if sealed is None:
            return None
        for approved, word in _DECISIONS.items():
            if sealed == word + self._mac(suspension_id.encode() + b":" + word):
                return approved
        return None

    def _mac(self, data: bytes) -> bytes:
        assert self.key is not None  # set in __post_init__
        return hmac.new(self.key, data, hashlib.sha256).digest()


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


def now() -> float:
    """Wall-clock time, shared by every process that uses a store."""
    return time.time()
