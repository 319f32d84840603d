"""Authenticating one HTTP request: the host's ``authenticate`` run safely, and a refusal answered.

The host's check may be sync or async, may raise, hang or answer nonsense: every one of
those refuses with 401 and is logged by where it failed, never by what it said (an
exception's text may quote the credential). A refusal is answered before the SDK sees
the request.
"""

from __future__ import annotations

import inspect
import logging
import traceback

import anyio
from starlette.requests import HTTPConnection
from starlette.types import Send

from ._http import send_error
from ._principals import Admitted, Authenticate, Principal, Refused

__all__ = ["Authentication"]

logger = logging.getLogger("mycelium.mcp")


class Authentication:
    """The host's ``authenticate``, bounded by ``timeout_s`` when it awaits, and the answer to a refusal."""

    def __init__(self, authenticate: Authenticate, timeout_s: float) -> None:
        if not callable(authenticate):
            raise ValueError("authenticate must be a callable taking the HTTP request")
        self._authenticate = authenticate
        self._timeout_s = timeout_s

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

    async def refuse(self, send: Send, refused: Refused) -> None:
        """Answer a refused request: 401 with a ``WWW-Authenticate`` challenge, or 403."""
        extra = [(b"www-authenticate", b'Bearer realm="mcp"')] if refused.status == 401 else []
        message = "authentication required" if refused.status == 401 else "forbidden"
        await send_error(send, refused.status, message, extra=extra)
