"""Authenticating one HTTP request: the host's ``authenticate`` run safely, and a refusal answered.

The host's check may be sync or async, may raise, hang or answer nonsense: every one of
those refuses with 401 and is logged by where it failed, never by what it said (an
exception's text may quote the credential). A refusal is answered before the SDK sees
the request, with what the client should do: send a token, send a valid one (RFC 6750's
``invalid_token``), or ask for access. A token that is not valid is logged as a warning
naming the client's address, never the token; a client sending wrong tokens in a loop
gets at most :data:`WARNINGS_PER_WINDOW` such lines a minute, the rest counted.
"""

from __future__ import annotations

import inspect
import logging
import traceback

import anyio
from starlette.requests import HTTPConnection
from starlette.types import Send

from ._clients import WarningBudget, shown_address
from ._http import send_error
from ._principals import Admitted, Authenticate, Principal, Refused

__all__ = ["Authentication"]

logger = logging.getLogger("mycelium.mcp")

WARNINGS_PER_WINDOW = 10
"""How many invalid-token warnings are logged in :data:`WARNING_WINDOW_S`; the others are counted."""
WARNING_WINDOW_S = 60.0

_MISSING = "authentication required: send the header Authorization: Bearer <token>"
_INVALID = (
    "invalid token: this server does not accept the bearer token sent; send the token its operator "
    "gave you, as Authorization: Bearer <token>"
)
_FORBIDDEN = "forbidden: this credential may not use this server; ask its operator for access"
_CHALLENGE = b'Bearer realm="mcp"'
_INVALID_CHALLENGE = b'Bearer realm="mcp", error="invalid_token", error_description="the bearer token is not valid"'


class Authentication:
    """The host's ``authenticate``, bounded by ``timeout_s`` when it awaits, and the answer to a refusal."""

    def __init__(self, authenticate: Authenticate, timeout_s: float) -> None:
        if not callable(authenticate):
            raise ValueError("authenticate must be a callable taking the HTTP request")
        self._authenticate = authenticate
        self._timeout_s = timeout_s
        self._warnings = WarningBudget(WARNINGS_PER_WINDOW, WARNING_WINDOW_S)

    async def admit(self, connection: HTTPConnection) -> Principal | Refused:
        """Who sends ``connection``, or the refusal; a failure inside ``authenticate`` refuses (401), never a 500."""
        try:
            verdict = self._authenticate(connection)
            if inspect.isawaitable(verdict):
                # Only an awaiting check can be timed out; a sync one has already answered.
                with anyio.fail_after(self._timeout_s):
                    verdict = await verdict
        except Exception as exc:
            # Its message may hold what the client presented: the operator gets where, not what.
            frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
            where = f" at {frame.filename}:{frame.lineno}" if frame else ""
            logger.error(
                "authenticate() failed (%s raised%s); the request is refused with 401", type(exc).__name__, where
            )
            return Refused(401)
        if isinstance(verdict, Admitted):
            return verdict.principal
        if isinstance(verdict, Refused):
            return verdict
        logger.error("authenticate() failed: it returned %s, not Admitted or Refused; refused", type(verdict).__name__)
        return Refused(401)

    async def still_admitted(self, connection: HTTPConnection, principal: Principal) -> bool:
        """Whether ``connection``'s credential still stands for ``principal`` (checked again mid-run)."""
        verdict = await self.admit(connection)
        return not isinstance(verdict, Refused) and verdict == principal

    async def refuse(self, send: Send, refused: Refused, connection: HTTPConnection) -> None:
        """Answer a refused request: 401 with a ``WWW-Authenticate`` challenge, or 403."""
        if refused.status == 403:
            await send_error(send, 403, _FORBIDDEN)
            return
        if refused.error is None:
            await send_error(send, 401, _MISSING, extra=[(b"www-authenticate", _CHALLENGE)])
            return
        self._warnings.warn(
            logger,
            "refused a request from %s with 401: its bearer token is not valid",
            shown_address(connection.client),
        )
        await send_error(send, 401, _INVALID, extra=[(b"www-authenticate", _INVALID_CHALLENGE)])
