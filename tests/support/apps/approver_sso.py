"""The host's own sign-in for the approvals page, as ``mycelium serve --approver-auth`` loads it.

A session cookie the host issued names the person (``SESSIONS`` stands in for the host's session
store). On purpose it also admits anyone presenting a bearer token as the owner, a mistake a host
could make: the page must still refuse the agents' token.
"""

from __future__ import annotations

from starlette.requests import HTTPConnection

from mycelium.mcp import Admitted, Member, Refused

SESSIONS = {"session-of-ada": Member("ada", "approver")}
COOKIE = "sso"


def approver(request: HTTPConnection) -> Admitted | Refused:
    """Whoever the host's session cookie names; with a bearer token, the owner (the mistake above)."""
    if request.headers.get("authorization", "").lower().startswith("bearer "):
        return Admitted(Member("local", "owner"))
    person = SESSIONS.get(request.cookies.get(COOKIE, ""))
    return Admitted(person) if person is not None else Refused(401)
