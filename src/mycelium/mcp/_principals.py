"""Who is calling over MCP: principals, and the host's answer to each HTTP request.

A principal is the host's canonical actor behind a credential: a workspace member with
a role, an agent, or a team key. Its ids name that actor and are never the credential
itself, so a principal may be logged, stored with a connection and compared freely.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import json
import logging
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

import anyio
from starlette.requests import HTTPConnection

__all__ = [
    "Admitted",
    "Agent",
    "Authenticate",
    "Member",
    "Principal",
    "Refused",
    "TeamKey",
    "admit",
    "bearer_tokens",
    "principal_key",
    "principal_label",
    "principal_session",
]


logger = logging.getLogger("mycelium.mcp")


def _check_id(kind: str, value: object) -> None:
    if not isinstance(value, str) or not value or len(value) > 256:
        raise ValueError(f"{kind} must be a non-empty string of at most 256 characters, got {value!r}")


@dataclass(frozen=True)
class Member:
    """A person in the host's workspace, with the role the host gave them."""

    member_id: str
    role: str

    def __post_init__(self) -> None:
        _check_id("Member.member_id", self.member_id)
        _check_id("Member.role", self.role)


@dataclass(frozen=True)
class Agent:
    """An agent the host registered, acting under its own credential."""

    agent_id: str

    def __post_init__(self) -> None:
        _check_id("Agent.agent_id", self.agent_id)


@dataclass(frozen=True)
class TeamKey:
    """A team's shared key: the key's id, never its secret."""

    key_id: str

    def __post_init__(self) -> None:
        _check_id("TeamKey.key_id", self.key_id)


Principal: TypeAlias = Member | Agent | TeamKey


def principal_key(principal: Principal) -> str:
    """A stable text form of ``principal``, distinct for distinct principals.

    JSON (``["member", "<id>", "<role>"]``), so no id can forge another's key by holding
    a separator. Used to bind a connection to its principal, in memory and in stores.
    """
    match principal:
        case Member(member_id=member_id, role=role):
            parts = ["member", member_id, role]
        case Agent(agent_id=agent_id):
            parts = ["agent", agent_id]
        case TeamKey(key_id=key_id):
            parts = ["team-key", key_id]
        case _:
            raise ValueError(f"not a principal: {type(principal).__name__}")
    return json.dumps(parts, ensure_ascii=True, separators=(",", ":"))


def principal_label(principal: Principal) -> str:
    """How a person is shown ``principal``: ``member ada (admin)``, ``agent triage``, ``team key k1``."""
    match principal:
        case Member(member_id=member_id, role=role):
            return f"member {member_id} ({role})"
        case Agent(agent_id=agent_id):
            return f"agent {agent_id}"
        case TeamKey(key_id=key_id):
            return f"team key {key_id}"
        case _:
            raise ValueError(f"not a principal: {type(principal).__name__}")


def principal_session(principal: Principal) -> str:
    """The session id of ``principal``'s connection-free requests: the same on every replica.

    A digest of its :func:`principal_key`, so operations that see the session id see no
    member id or role, and ids of any length give a session id of one length.
    """
    return "principal-" + hashlib.sha256(principal_key(principal).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Admitted:
    """The request is admitted on behalf of ``principal``."""

    principal: Principal

    def __post_init__(self) -> None:
        if not isinstance(self.principal, Member | Agent | TeamKey):
            raise ValueError(f"Admitted.principal must be a Member, Agent or TeamKey, got {self.principal!r}")


@dataclass(frozen=True)
class Refused:
    """The request is refused: 401 (no valid credential) or 403 (valid, but not allowed here)."""

    status: Literal[401, 403] = 401

    def __post_init__(self) -> None:
        if self.status not in (401, 403):
            raise ValueError(f"Refused.status must be 401 or 403, got {self.status!r}")


Authenticate: TypeAlias = Callable[[HTTPConnection], "Admitted | Refused | Awaitable[Admitted | Refused]"]
"""The host's check of one HTTP request (its headers; the body is not read)."""


async def admit(authenticate: Authenticate, connection: HTTPConnection, *, timeout_s: float) -> Principal | Refused:
    """Run the host's ``authenticate`` on one request; a failure inside it refuses (401) and is logged,
    never a 500. An awaiting check that takes longer than ``timeout_s`` refuses too."""
    try:
        verdict = authenticate(connection)
        if inspect.isawaitable(verdict):
            # Only an awaiting check can be timed out; a sync one has already answered.
            with anyio.fail_after(timeout_s):
                verdict = await verdict
    except Exception as exc:
        # Its message may hold what the client presented: the operator gets where, not what.
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f" at {frame.filename}:{frame.lineno}" if frame else ""
        logger.error("authenticate() failed (%s raised%s); the request is refused with 401", type(exc).__name__, where)
        return Refused(401)
    if isinstance(verdict, Admitted):
        return verdict.principal
    if isinstance(verdict, Refused):
        return verdict
    logger.error("authenticate() failed: it returned %s, not Admitted or Refused; refused", type(verdict).__name__)
    return Refused(401)


def bearer_tokens(tokens: Mapping[str, Principal]) -> Callable[[HTTPConnection], Admitted | Refused]:
    """An ``authenticate`` for fixed bearer tokens: ``Authorization: Bearer <token>`` -> principal.

    Tokens are compared in constant time. Fit for demos and local servers; real hosts
    check their own credentials. An empty token is refused at construction.
    """
    table = dict(tokens)
    for token, principal in table.items():
        if not isinstance(token, str) or not token.strip():
            raise ValueError("bearer_tokens: every token must be a non-empty string")
        Admitted(principal)  # checks the principal's type
    encoded = [(token.encode(), principal) for token, principal in table.items()]

    def authenticate(request: HTTPConnection) -> Admitted | Refused:
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not presented:
            return Refused(401)
        candidate = presented.strip().encode()
        found: Principal | None = None
        for token, principal in encoded:  # every token is compared: the time does not say which matched
            if hmac.compare_digest(candidate, token):
                found = principal
        return Refused(401) if found is None else Admitted(found)

    return authenticate
