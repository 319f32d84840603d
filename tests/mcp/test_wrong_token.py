"""A wrong token is told apart from a missing one (RFC 6750's ``invalid_token``), and logged without itself.

A real server (uvicorn on 127.0.0.1) authenticating with the library's ``bearer_tokens``, or
with a host's own ``authenticate``, answers raw HTTP requests; the warning it logs is read
from the ``mycelium.mcp`` logger.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest

from mycelium.mcp import Admitted, Refused, bearer_tokens, create_mcp, create_mcp_catalog
from mycelium.mcp._authentication import WARNINGS_PER_WINDOW
from mycelium.mcp._clients import WarningBudget
from mycelium.sandbox.monty import MontySandbox
from tests.support.loopback import serve_asgi

from . import raw_http as raw
from .conftest import ALICE, Host

GOOD = "token-alice-" + "a" * 24
WRONG = "token-typo-" + "w" * 24
INVALID_CHALLENGE = 'Bearer realm="mcp", error="invalid_token", error_description="the bearer token is not valid"'


@asynccontextmanager
async def serving(authenticate: Callable[[Any], Any] | None = None) -> AsyncIterator[str]:
    """A server on 127.0.0.1 whose only token is :data:`GOOD` (Alice's), unless ``authenticate`` is given."""
    host = Host()
    host.grant(ALICE, notes="read")
    async with create_mcp_catalog(load=host.load, sandbox=MontySandbox()) as catalog:
        server = create_mcp(catalog=catalog, authenticate=authenticate or bearer_tokens({GOOD: ALICE}))
        async with serve_asgi(server.asgi) as base:
            yield f"{base}/mcp"


async def initialize(http: httpx2.AsyncClient, url: str, **credentials: Any) -> raw.Answer:
    return await raw.send(http, "POST", url, sent=raw.headers(**credentials), body=raw.initialize())


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mycelium.mcp" and r.levelno == logging.WARNING]


async def test_a_wrong_token_is_told_invalid_token_and_what_to_send_instead(caplog: pytest.LogCaptureFixture) -> None:
    async with serving() as url, httpx2.AsyncClient(timeout=30) as http:
        with caplog.at_level(logging.WARNING, logger="mycelium.mcp"):
            wrong = await initialize(http, url, token=WRONG)
        assert wrong.status == 401
        assert wrong.headers["www-authenticate"] == INVALID_CHALLENGE
        message = json.loads(wrong.text)["error"]["message"]
        assert message.startswith("invalid token: this server does not accept the bearer token sent")
        assert "send the token its operator gave you, as Authorization: Bearer <token>" in message
        assert WRONG not in wrong.text
        assert (await initialize(http, url, token=GOOD)).status == 200


@pytest.mark.parametrize(
    "credentials", [{"token": None}, {"authorization": "Basic YWxpY2U6"}, {"authorization": "Bearer"}]
)
async def test_a_missing_token_is_told_to_send_one_without_an_error_code(
    credentials: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    async with serving() as url, httpx2.AsyncClient(timeout=30) as http:
        with caplog.at_level(logging.WARNING, logger="mycelium.mcp"):
            missing = await initialize(http, url, **credentials)
    assert missing.status == 401
    # RFC 6750: a request without a credential gets the challenge alone, no error code.
    assert missing.headers["www-authenticate"] == 'Bearer realm="mcp"'
    assert json.loads(missing.text)["error"]["message"] == (
        "authentication required: send the header Authorization: Bearer <token>"
    )
    assert warnings_of(caplog) == []  # nothing was presented: nothing to warn about


async def test_a_wrong_token_is_a_warning_naming_the_client_address_and_never_the_token(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving() as url, httpx2.AsyncClient(timeout=30) as http:
        with caplog.at_level(logging.DEBUG, logger="mycelium"):
            await initialize(http, url, token=WRONG)
    [warning] = warnings_of(caplog)
    assert warning.startswith("refused a request from 127.0.0.1:")
    assert warning.endswith("with 401: its bearer token is not valid")
    assert not any(WRONG in record.getMessage() or GOOD in record.getMessage() for record in caplog.records)


async def test_a_client_sending_wrong_tokens_in_a_loop_gets_a_bounded_number_of_warnings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving() as url, httpx2.AsyncClient(timeout=30) as http:
        with caplog.at_level(logging.WARNING, logger="mycelium.mcp"):
            answers = [await initialize(http, url, token=f"{WRONG}-{n}") for n in range(WARNINGS_PER_WINDOW + 5)]
    assert {answer.status for answer in answers} == {401}
    assert len(warnings_of(caplog)) == WARNINGS_PER_WINDOW


def test_the_warnings_held_back_are_counted_in_the_next_window() -> None:
    now = [0.0]
    budget = WarningBudget(2, 60.0, clock=lambda: now[0])
    assert [budget.spend() for _ in range(5)] == [0, 0, None, None, None]
    now[0] = 60.0
    assert budget.spend() == 3  # the first warning of the next minute says how many were not logged
    assert budget.spend() == 0


async def test_a_hosts_own_authenticate_may_say_the_token_is_not_valid() -> None:
    def authenticate(request: Any) -> Admitted | Refused:
        if request.headers.get("authorization") == f"Bearer {GOOD}":
            return Admitted(ALICE)
        return Refused(401, error="invalid_token") if "authorization" in request.headers else Refused(401)

    async with serving(authenticate) as url, httpx2.AsyncClient(timeout=30) as http:
        expired = await initialize(http, url, token="token-expired")
        missing = await initialize(http, url, token=None)
    assert expired.headers["www-authenticate"] == INVALID_CHALLENGE
    assert missing.headers["www-authenticate"] == 'Bearer realm="mcp"'


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"status": 403, "error": "invalid_token"}, "goes with status 401: a 403 credential is valid"),
        ({"status": 401, "error": "expired"}, "Refused.error must be None or 'invalid_token', got 'expired'"),
    ],
)
def test_a_refusal_says_only_what_rfc_6750_lets_a_401_say(arguments: dict[str, Any], said: str) -> None:
    with pytest.raises(ValueError, match=said):
        Refused(**arguments)
