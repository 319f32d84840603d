"""Approvals a person gives elsewhere: for a client that cannot be asked, and the handle its model polls with.

Many clients cannot answer an elicitation (batch agent runners, the Inspector CLI). With
:class:`PageApprovals` on, a ``confirm=True`` call of theirs pauses the run into the
catalog's suspensions like any other pause, and a person decides on a page of the host's
(``mycelium serve`` offers ``/approvals``). The model is told the run waits for a person,
with a handle the server minted: calling ``execute`` with ``{"approval": "<handle>"}``
instead of code resumes the program once the person has decided (exactly once: the store's
claim decides which of two polls resumes it), and answers ``approval-pending`` before.

A handle names the paused run and the session it belongs to, and is sealed (HMAC-SHA256
under a key of the deployment's ring) together with the principal it was minted for: no
other principal can use it, nobody can make one up, and it says nothing of the call's
arguments. Between replicas it works as the ring does.

A 2026-07-28 client retries an input-required result by itself, a few times within
seconds. For one that cannot be asked, the run's first answer is such a result carrying
only a sealed state (:class:`AwaitingPerson`): each retry waits a few seconds for the
decision (not in a sandbox slot, woken by a decision this process records) and answers
with the resumed program once there is one, else with the state again. Before the client's
retries could run out, or after ``wait_s`` in all, the model is given the handle instead,
so a person slower than that is still waited for. The store's claim decides, there too,
which of a retry and a poll resumes the run.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .._execute import ToolResult
from ..failures import ApprovalPending, InvalidArguments, SuspensionFailed
from ..suspensions import Suspension, Suspensions
from ._principals import Principal, principal_key

__all__ = [
    "APPROVAL_ARGUMENT",
    "MAX_STATE_ROUNDS",
    "RETRY_WAIT_S",
    "AwaitingPerson",
    "Handled",
    "PageApprovals",
    "malformed",
    "unknown_handle",
    "with_approval_argument",
]

APPROVAL_ARGUMENT = "approval"
"""The execute argument that carries a handle, instead of ``code``."""
_PREFIX = "approval-v1."
MAX_STATE_ROUNDS = 8
"""The most state-only answers one call gets before the model is given the handle. The official
SDKs give up after 10 input-required rounds; the margin is for a run handed off on the way."""
RETRY_WAIT_S = 3.0
"""The longest one retry waits for the person before it is answered with the state again."""
_RETRY_MARGIN_S = 1.0  # a client's retry comes within the SDK's backoff (at most 0.25 s) and a round trip
_MAX_HANDLE_CHARS = 512  # a handle minted here is about 150; anything longer is not one
_APPROVAL_PROPERTY: dict[str, Any] = {
    "type": "string",
    "description": "Instead of code: the handle a run paused for a person's approval gave you. Returns "
    "that run's result once the person has decided, or approval-pending until then.",
    "maxLength": _MAX_HANDLE_CHARS,
}
_DESCRIPTION_NOTE = (
    "\n\nApprovals: a call that needs a person's approval may pause the run; the result then says so "
    'and gives a handle. Call execute with {"approval": "<handle>"} instead of code (never both) to get '
    "the paused run's result once the person has decided; do not run the program again."
)


def with_approval_argument(schema: Mapping[str, Any], description: str) -> tuple[dict[str, Any], str]:
    """The execute tool's input schema and description once a handle may stand in for ``code``."""
    properties = {**schema.get("properties", {}), APPROVAL_ARGUMENT: _APPROVAL_PROPERTY}
    # Exactly one of the two: said in the description and checked by the server, since many
    # clients' schema handling refuses a top-level oneOf.
    extended = {key: value for key, value in schema.items() if key != "required"}
    return {**extended, "properties": properties}, description + _DESCRIPTION_NOTE


@dataclass(frozen=True)
class AwaitingPerson:
    """A paused run a person decides on the page, as a 2026-07-28 client's retries carry it (sealed)."""

    suspension_id: str
    session_id: str
    path: str
    rounds: int
    """How many state-only answers this call has had."""
    until: float
    """Unix time after which the model is given the handle rather than the state again."""


@dataclass(frozen=True)
class Handled:
    """What a genuine handle names: the paused run and the session it belongs to."""

    suspension_id: str
    session_id: str


class PageApprovals:
    """Approvals decided on a page: handles minted and opened under ``keys`` (newest first: the first
    seals, every one opens), and a 2026-07-28 client's retries held up to ``wait_s`` in all."""

    def __init__(self, keys: Sequence[bytes], suspensions: Suspensions, *, wait_s: float) -> None:
        if not keys:
            raise ValueError("PageApprovals needs at least one key")
        self._keys = tuple(keys)
        self._suspensions = suspensions
        self._wait_s = wait_s

    def mint(self, suspension_id: str, session_id: str, principal: Principal) -> str:
        """A handle for the run paused as ``suspension_id`` in ``session_id``, usable by ``principal`` alone."""
        body = _encode(json.dumps([suspension_id, session_id], separators=(",", ":")).encode())
        return f"{_PREFIX}{body}.{_encode(self._mac(self._keys[0], body, principal))}"

    def open(self, handle: object, principal: Principal) -> Handled | None:
        """What ``handle`` names, if it was minted here for ``principal``; ``None`` for anything else."""
        if not isinstance(handle, str) or len(handle) > _MAX_HANDLE_CHARS or not handle.startswith(_PREFIX):
            return None
        body, _, mac = handle[len(_PREFIX) :].partition(".")
        try:
            presented = _decode(mac)
            if not any(hmac.compare_digest(presented, self._mac(key, body, principal)) for key in self._keys):
                return None
            suspension_id, session_id = json.loads(_decode(body))
        except (ValueError, TypeError, binascii.Error):
            return None
        if not isinstance(suspension_id, str) or not isinstance(session_id, str) or not session_id:
            return None
        return Handled(suspension_id, session_id)

    @staticmethod
    def _mac(key: bytes, body: str, principal: Principal) -> bytes:
        return hmac.new(key, principal_key(principal).encode() + b"\n" + body.encode(), hashlib.sha256).digest()

    def requested(self, arguments: Mapping[str, object]) -> str | ToolResult | None:
        """The handle an execute call polls with; ``None`` for a call that runs code (the execute
        tool checks it); a malformed result for a call with both, or neither."""
        if APPROVAL_ARGUMENT not in arguments:
            return None if "code" in arguments else malformed("give either code or an approval handle")
        handle = arguments[APPROVAL_ARGUMENT]
        if "code" in arguments:
            return malformed("give either code or an approval handle, not both")
        if len(arguments) > 1:
            return malformed("an approval handle comes alone")
        if not isinstance(handle, str):
            return malformed("the approval handle must be a string")
        return handle

    async def poll(
        self, handle: str, principal: Principal, resume: Callable[[str, str], Awaitable[ToolResult]]
    ) -> ToolResult:
        """Resume the run ``handle`` names with the decision recorded for it (``resume(suspension_id,
        session_id)``), or say it still waits; a handle not minted for ``principal`` resumes nothing."""
        handled = self.open(handle, principal)
        if handled is None:
            return unknown_handle()
        return self.polled(await resume(handled.suspension_id, handled.session_id), handle)

    def paused(
        self,
        suspension: Suspension,
        principal: Principal,
        *,
        modern: bool,
        draining: bool,
        earlier: AwaitingPerson | None,
    ) -> ToolResult | AwaitingPerson:
        """What a call whose run paused for the page answers: over 2026-07-28 the state its client retries
        with (``earlier`` when the run paused before in this call), else the handle for the model."""
        session_id = suspension.session_id or ""
        if not modern or draining or self._wait_s <= 0:
            return self.waiting(suspension.id, session_id, suspension.path, principal)
        # A program that pauses again after resuming goes on counting the call's rounds and time. The
        # state lives as long as the pause: a retry must reach the server with time to spare before that.
        rounds, until = (earlier.rounds, earlier.until) if earlier is not None else (0, time.time() + self._wait_s)
        until = min(until, suspension.expires_at.timestamp() - _RETRY_MARGIN_S)
        return self._next(AwaitingPerson(suspension.id, session_id, suspension.path, rounds, until), principal)

    async def retried(
        self, awaiting: AwaitingPerson, principal: Principal, *, draining: bool
    ) -> ToolResult | AwaitingPerson | None:
        """A client's retry of ``awaiting``: ``None`` once the run may resume (decided, or no longer
        waiting), else what to answer after waiting a while: the state again, or the handle.

        A draining server waits for nobody: the handle lets the model poll whichever replica it reaches.
        """
        if draining:
            return self.waiting(awaiting.suspension_id, awaiting.session_id, awaiting.path, principal)
        wait = max(0.0, min(awaiting.until - time.time(), RETRY_WAIT_S))
        if await self._suspensions.until_decided(awaiting.suspension_id, within_s=wait):
            return None
        return self._next(awaiting, principal)

    def _next(self, awaiting: AwaitingPerson, principal: Principal) -> ToolResult | AwaitingPerson:
        """The state for one more retry, or the handle once the call has waited as long as it may."""
        if awaiting.rounds >= MAX_STATE_ROUNDS or time.time() >= awaiting.until:
            return self.waiting(awaiting.suspension_id, awaiting.session_id, awaiting.path, principal)
        return replace(awaiting, rounds=awaiting.rounds + 1)

    def waiting(self, suspension_id: str, session_id: str, path: str, principal: Principal) -> ToolResult:
        """What the model reads when its run pauses for a person it cannot reach: wait, then poll."""
        handle = self.mint(suspension_id, session_id, principal)
        text = (
            f"Waiting for a person's approval: {path} needs a person to approve it before it runs, "
            "and they decide on the server's approvals page. Everything the program did before that call has "
            "happened. Do not run the program again. Tell the user what awaits their approval; once they have "
            f'decided, call execute with {{"{APPROVAL_ARGUMENT}": "{handle}"}} (and no code) to get the '
            "program's result."
        )
        return ToolResult(text=text, is_error=False)

    def polled(self, result: ToolResult, handle: str) -> ToolResult:
        """The result of a poll: the resumed program's, or ``approval-pending`` while nobody has decided."""
        failure = result.failure
        if not isinstance(failure, SuspensionFailed) or failure.reason != "undecided":
            return result
        pending = ApprovalPending(suspension_id=failure.suspension_id)
        told = ToolResult.failed(pending)
        text = f'{told.text} Ask with {{"{APPROVAL_ARGUMENT}": "{handle}"}}.'
        return ToolResult(text=text, is_error=True, failure=pending, reference=told.reference)


def unknown_handle() -> ToolResult:
    """What a poll with a handle this server did not mint for the caller gets: nothing to resume."""
    return ToolResult.failed(SuspensionFailed(suspension_id="", reason="not-found"))


def malformed(message: str) -> ToolResult:
    """An execute call that gives both code and a handle, or neither."""
    failure = InvalidArguments(message=message, tool="execute")
    return ToolResult(
        text=f"The execute call was malformed: {message}. Call it with "
        f'{{"code": "<a Python program>"}} to run a program, or with {{"{APPROVAL_ARGUMENT}": "<handle>"}} '
        "to get the result of a run that waited for approval; never both.",
        is_error=True,
        failure=failure,
    )


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
