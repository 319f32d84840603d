"""Principals name actors, never credentials; bearer_tokens admits exactly the configured tokens."""

from __future__ import annotations

import pytest
from starlette.requests import HTTPConnection

from mycelium.mcp import Admitted, Agent, Member, Refused, TeamKey, bearer_tokens
from mycelium.mcp._principals import principal_key


def request(authorization: str | None) -> HTTPConnection:
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    return HTTPConnection({"type": "http", "headers": headers})


def test_distinct_principals_never_share_a_key_whatever_their_ids_hold() -> None:
    tricky = [
        Member("a:b", "c"),
        Member("a", "b:c"),
        Member('a","b', "c"),
        Agent("member:a:b:c"),
        Agent('["member","a","b:c"]'),
        TeamKey("a"),
        Agent("a"),
    ]
    assert len({principal_key(principal) for principal in tricky}) == len(tricky)


@pytest.mark.parametrize("bad", ["", "x" * 257, 3, None])
def test_a_principal_id_must_be_a_short_non_empty_string(bad: object) -> None:
    with pytest.raises(ValueError, match="agent_id"):
        Agent(bad)  # type: ignore[arg-type]


def test_refused_is_401_or_403_only() -> None:
    assert Refused().status == 401
    with pytest.raises(ValueError, match="401 or 403"):
        Refused(500)  # type: ignore[arg-type]


def test_admitted_takes_a_principal_only() -> None:
    with pytest.raises(ValueError, match="Member, Agent or TeamKey"):
        Admitted("alice")  # type: ignore[arg-type]


def test_bearer_tokens_admit_the_configured_token_and_refuse_everything_else() -> None:
    authenticate = bearer_tokens({"s3cret": Member("ada", "owner"), "other": Agent("bot")})
    assert authenticate(request("Bearer s3cret")) == Admitted(Member("ada", "owner"))
    assert authenticate(request("bearer other")) == Admitted(Agent("bot"))
    for header in [None, "", "Bearer", "Bearer ", "Basic s3cret", "s3cret"]:
        assert authenticate(request(header)) == Refused(401), header
    # A bearer token was sent but matches none: RFC 6750's invalid_token, told apart from no token.
    for header in ["Bearer s3cret2", "Bearer s3cre"]:
        assert authenticate(request(header)) == Refused(401, error="invalid_token"), header


def test_bearer_tokens_refuse_an_empty_token_at_construction() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        bearer_tokens({" ": Agent("bot")})
