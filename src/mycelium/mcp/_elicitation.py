"""Confirmation by a person over MCP, and the rest of one request's access.

A ``confirm=True`` operation asks the person through the client: the question names the
module, the operation and its access label, never the arguments or a credential. When
the catalog keeps suspensions the run pauses first, so nothing waits in a sandbox slot
while the person decides: over 2026-07-28 the client is handed the question with the
call's result, over a connection the server asks by elicitation. Without suspensions the
run waits in place (connections only). Over 2026-07-28 the question and a reference to the
paused run travel in an input-required result (:func:`input_required`), and come back with the
retry (:func:`paused_run`). A decline, a cancel, a client that cannot be
asked, or one that leaves refuses the call; an approval is followed by a fresh read of
authority.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from .._access import Access, ConfirmAnswer, ConfirmRequest, Grant
from .._signals import AbortSignal
from ..suspensions import Suspension
from ._approvals import AwaitingPerson
from ._provider import McpAuthority

__all__ = [
    "APPROVAL",
    "APPROVAL_SCHEMA",
    "PausedRun",
    "RequestAccess",
    "approval_question",
    "approved",
    "input_required",
    "paused_run",
]

logger = logging.getLogger("mycelium.mcp")

APPROVAL = "approval"
"""The key of the one input an approval asks for, in an input-required result and its answer."""

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Allow this one call.",
            "default": True,
        }
    },
}


def approval_question(request: ConfirmRequest | Suspension) -> str:
    """What the person is asked about one call: its path, module and access label, never its arguments."""
    action = "changes something" if request.access == "write" else "reads"
    return f"Allow one call of {request.path}? It {action} ({request.access}) in module {request.module_id}."


def approved(answer: object) -> bool | None:
    """The person's decision in a client's answer to the approval form; ``None`` when there is no answer.

    Only an accepted form that leaves ``approve`` true (its default) approves; a decline, a
    cancel or any other answer refuses the call.
    """
    if answer is None:
        return None
    if not isinstance(answer, types.ElicitResult):
        return False
    return answer.action == "accept" and (answer.content or {}).get("approve", True) is True


class RequestAccess:
    """The access of one execute request: grants read afresh, re-authentication, asking the person.

    ``still_admitted`` re-runs the request's authentication (before every operation
    call); ``refresh`` reads the principal's authority again (after every approval);
    ``read_only`` caps writes at read (a connection resumed without its client's
    capabilities); ``left`` is aborted when the client leaves. With ``pause`` a confirmation
    the client can answer defers, so the run pauses into the catalog's suspensions (with
    ``page``, one it cannot answer too, for a person to decide on the host's page);
    ``modern`` says the request is of 2026-07-28, where a person is asked only that way.
    """

    def __init__(
        self,
        ctx: ServerRequestContext[Any, Any],
        authority: McpAuthority,
        *,
        refresh: Callable[[], Awaitable[McpAuthority]],
        still_admitted: Callable[[], Awaitable[bool]] | None,
        read_only: bool,
        left: AbortSignal | None,
        pause: bool,
        modern: bool,
        page: bool = False,
    ) -> None:
        self._ctx = ctx
        self.authority = authority
        """The principal's authority as last read."""
        self._refresh = refresh
        self._still_admitted = still_admitted
        self._read_only = read_only
        self._left = left
        self._pause = pause
        self._modern = modern
        self._page = page

    @property
    def access(self) -> Access:
        """The access every operation call of the execute goes through."""
        # Made when asked rather than kept: an Access kept here would hold this object's bound methods,
        # a cycle that only the garbage collector frees, once per request.
        return Access(explicit=True, session_grants=self._grants, confirm=self._confirm)

    async def refreshed(self) -> None:
        """Read the principal's authority again: what holds now, not when the person was asked."""
        self.authority = await self._refresh()

    async def _grants(self) -> Mapping[str, Grant]:
        if self._still_admitted is not None and not await self._still_admitted():
            return {}  # the credential no longer admits this principal: every module is refused
        grants = self.authority.grants
        if self._read_only:
            return {key: "read" if grant == "write" else grant for key, grant in grants.items()}
        return grants

    def can_ask(self) -> bool:
        """Whether the client can answer a confirmation's question itself (form elicitation)."""
        session = self._ctx.session
        capability = session.client_capabilities.elicitation if session.client_capabilities else None
        supports_form = capability is not None and (capability.form is not None or capability.url is None)
        # Over 2026-07-28 the question travels with the answer; over a connection, as a request of its own.
        return supports_form and (self._modern or session.can_send_request)

    async def _confirm(self, request: ConfirmRequest) -> ConfirmAnswer:
        if not self.can_ask():
            return "defer" if self._page else None  # with a page, a person decides there instead
        if self._pause:
            return "defer"
        if self._modern:
            return None  # nothing can wait for the answer in a request that stands alone
        answer = await self.ask(approval_question(request))
        if answer:
            await self.refreshed()
        return answer

    async def ask(self, question: str) -> bool:
        """Ask the person over this request's connection; whether they approved.

        A client that leaves while asked, or answers with something unusable, declines.
        """
        session = self._ctx.session
        answer: types.ElicitResult | None = None
        try:
            async with anyio.create_task_group() as group:

                async def ask() -> None:
                    nonlocal answer
                    answer = await session.elicit_form(
                        message=question, requested_schema=APPROVAL_SCHEMA, related_request_id=self._ctx.request_id
                    )
                    group.cancel_scope.cancel()

                async def walk_away(left: AbortSignal) -> None:
                    # Nothing can answer once the client closed the stream that carried the question.
                    await left.wait()
                    group.cancel_scope.cancel()

                group.start_soon(ask)
                if self._left is not None:
                    group.start_soon(walk_away, self._left)
        except Exception as exc:
            # A closed connection or a malformed answer: nobody approved. Said in one line; it is routine.
            logger.info("no usable answer to a confirmation (%s); declined", type(exc).__name__)
            return False
        if answer is None:
            logger.info("the client left while asked to confirm a call; declined")
            return False
        return approved(answer) is True


@dataclass(frozen=True)
class PausedRun:
    """What a requestState carries: the paused run's id in the store, and the question to ask again.

    ``question`` is ``None`` when the client is asked nothing: for a run handed off by a
    stopping replica (the client retries at once and whichever replica answers resumes it),
    and for one a person decides on the host's page (``page``: its retries wait for that
    decision, and any answer they carry decides nothing). Only the SDK's boundary ever sees
    the state sealed; it opened and checked the client's copy (key, principal, tool call,
    deadline) before this module reads it.
    """

    suspension_id: str
    question: str | None
    page: AwaitingPerson | None = None

    @classmethod
    def awaiting(cls, page: AwaitingPerson) -> PausedRun:
        """The state of a run a person decides on the page."""
        return cls(page.suspension_id, None, page)

    def state(self) -> str:
        page = self.page
        fields: dict[str, object] = {"suspension": self.suspension_id, "question": self.question}
        if page is not None:
            fields["page"] = [page.session_id, page.path, page.rounds, page.until]
        return json.dumps(fields)


def paused_run(state: str | None) -> PausedRun | None:
    """The paused run a retry's (already opened) requestState names; ``None`` on a first call."""
    if state is None:
        return None
    try:
        fields = json.loads(state)
        question, suspension_id = fields["question"], str(fields["suspension"])
        page = fields.get("page")
        if page is not None:
            session_id, path, rounds, until = page
            awaiting = AwaitingPerson(suspension_id, str(session_id), str(path), int(rounds), float(until))
            return PausedRun.awaiting(awaiting)
        return PausedRun(suspension_id, None if question is None else str(question))
    except (ValueError, TypeError, KeyError):
        # Minted by this server under the ring yet unreadable: another release's state.
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid or expired requestState") from None


def input_required(paused: PausedRun) -> types.InputRequiredResult:
    """The input-required result for ``paused``: its question as a form, or (handed off) only its state."""
    if paused.question is None:
        return types.InputRequiredResult(request_state=paused.state())
    form = types.ElicitRequestFormParams(message=paused.question, requested_schema=APPROVAL_SCHEMA)
    return types.InputRequiredResult(
        input_requests={APPROVAL: types.ElicitRequest(params=form)}, request_state=paused.state()
    )
