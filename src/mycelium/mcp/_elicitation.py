"""Confirmation by MCP form elicitation, and the rest of one request's access.

A ``confirm=True`` operation asks the person through the client: the question names the
module, the operation and its access label, never the arguments or a credential. The
run waits in place; a decline, a cancel, a client that cannot be asked, or one that
leaves refuses the call, and an approval is followed by a fresh read of authority.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext

from .._access import Access, ConfirmRequest, Grant
from ._catalog import McpAuthority

__all__ = ["APPROVAL_SCHEMA", "RequestAccess"]

logger = logging.getLogger("mycelium.mcp")

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


class RequestAccess:
    """The access of one execute request: grants read afresh, re-authentication, elicitation.

    ``still_admitted`` re-runs the request's authentication (before every operation
    call); ``refresh`` reads the principal's authority again (after every approval);
    ``read_only`` caps writes at read (a connection resumed without its client's
    capabilities); ``gone`` is set when the client leaves.
    """

    def __init__(
        self,
        ctx: ServerRequestContext[Any, Any],
        authority: McpAuthority,
        *,
        refresh: Callable[[], Awaitable[McpAuthority]],
        still_admitted: Callable[[], Awaitable[bool]] | None,
        read_only: bool,
        gone: anyio.Event | None,
    ) -> None:
        self._ctx = ctx
        self._authority = authority
        self._refresh = refresh
        self._still_admitted = still_admitted
        self._read_only = read_only
        self._gone = gone
        self.access = Access(explicit=True, session_grants=self._grants, confirm=self._confirm)
        """The access every operation call of the execute goes through."""

    async def _grants(self) -> Mapping[str, Grant]:
        if self._still_admitted is not None and not await self._still_admitted():
            return {}  # the credential no longer admits this principal: every module is refused
        grants = self._authority.grants
        if self._read_only:
            return {key: "read" if grant == "write" else grant for key, grant in grants.items()}
        return grants

    async def _confirm(self, request: ConfirmRequest) -> bool | None:
        session = self._ctx.session
        capability = session.client_capabilities.elicitation if session.client_capabilities else None
        supports_form = capability is not None and (capability.form is not None or capability.url is None)
        if not supports_form or not session.can_send_request:
            return None
        action = "changes something" if request.access == "write" else "reads"
        message = (
            f"Allow one call of {request.path}? It {action} ({request.access}) in module "
            f"{request.module_id} ({request.module_name})."
        )
        answer: types.ElicitResult | None = None
        try:
            async with anyio.create_task_group() as group:

                async def ask() -> None:
                    nonlocal answer
                    answer = await session.elicit_form(
                        message=message, requested_schema=APPROVAL_SCHEMA, related_request_id=self._ctx.request_id
                    )
                    group.cancel_scope.cancel()

                async def walk_away(gone: anyio.Event) -> None:
                    # Nothing can answer once the client closed the stream that carried the question.
                    await gone.wait()
                    group.cancel_scope.cancel()

                group.start_soon(ask)
                if self._gone is not None:
                    group.start_soon(walk_away, self._gone)
        except Exception as exc:
            # A closed connection or a malformed answer: nobody approved. Said in one line; it is routine.
            logger.info("no usable answer to a confirmation of %s (%s); declined", request.path, type(exc).__name__)
            return False
        if answer is None:
            logger.info("the client left while asked to confirm %s; declined", request.path)
            return False
        if answer.action != "accept" or (answer.content or {}).get("approve", True) is not True:
            return False
        self._authority = await self._refresh()  # what holds now, not when the person was asked
        return True
