"""Authentication on every HTTP request, sessions bound to principals, the pinned protocol, Host and Origin.

Raw HTTP against a real server: every kind of request a client sends (an initialize, a
tools/call, a notification, the client's reply to a server request, the GET stream, the
DELETE) is authenticated on its own, and a credential revoked while a program runs stops
its next operation call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mycelium import Module
from mycelium.mcp import PROTOCOL_VERSIONS, Admitted, McpAuthority, Refused, create_mcp, create_mcp_catalog
from mycelium.sandbox.monty import MontySandbox
from tests.support.loopback import serve_asgi

from . import raw_http as raw
from .conftest import ALICE, BOB, CAROL, FORBIDDEN_TOKEN, Host, served, text_of

WITHOUT_A_VALID_TOKEN: dict[str, dict[str, Any]] = {
    "missing": {"token": None},
    "unknown": {"token": "token-nobody"},
    "scheme-only": {"authorization": "Bearer"},
    "other-scheme": {"authorization": "Basic dG9rZW4tYWxpY2U6"},
    "revoked": {"token": "token-carol"},
}


def granted() -> Host:
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    host.grant(BOB, notes="write", reports="read")
    host.grant(CAROL, notes="write", reports="read")
    return host


async def still_works(http: httpx2.AsyncClient, url: str, session: str, token: str = "token-alice") -> bool:
    """Alice's connection answers an ordinary execute."""
    answer = await raw.send(
        http, "POST", url, sent=raw.headers(token, session=session), body=raw.call_execute("return 40 + 2")
    )
    return answer.status == 200 and answer.result()["content"][0]["text"] == "42"


# -- 401 and 403 for every request kind -----------------------------------------------------


@pytest.mark.parametrize("kind", raw.REQUEST_KINDS)
async def test_every_request_kind_without_a_valid_token_gets_401_with_www_authenticate(kind: str) -> None:
    host = granted()
    host.revoked_tokens.add("token-carol")
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION)
        for case, credentials in WITHOUT_A_VALID_TOKEN.items():
            answer = await raw.exchange(
                http, s.url, kind, session, code="return await notes.create(text='refused')", **credentials
            )
            assert answer.status == 401, (case, answer.status, answer.text)
            assert answer.headers["www-authenticate"].startswith("Bearer"), case
            assert "mcp-session-id" not in answer.headers, case
            message = json.loads(answer.text)["error"]["message"]
            assert message == "authentication required: send the header Authorization: Bearer <token>", case
            assert "token-" not in answer.text, case
        assert await still_works(http, s.url, session)  # a refused DELETE ended nothing
    assert host.writes == []  # a refused tools/call ran nothing


@pytest.mark.parametrize("kind", raw.REQUEST_KINDS)
async def test_every_request_kind_with_a_forbidden_credential_gets_403(kind: str) -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION)
        answer = await raw.exchange(
            http, s.url, kind, session, token=FORBIDDEN_TOKEN, code="return await notes.create(text='refused')"
        )
        assert answer.status == 403, answer.text
        assert json.loads(answer.text)["error"]["message"].endswith("; ask its operator for access")
        assert "mcp-session-id" not in answer.headers
        assert FORBIDDEN_TOKEN not in answer.text
        assert await still_works(http, s.url, session)
    assert host.writes == []


@dataclass
class FailingHost(Host):
    """A host whose credential check breaks: it raises, or answers something that is not a verdict."""

    checks: int = 0

    async def authenticate(self, request: Any) -> Admitted | Refused:  # type: ignore[override]
        self.checks += 1
        presented = request.headers.get("authorization", "")
        if presented == "Bearer token-breaks":
            raise RuntimeError("the credential store is down")
        if presented == "Bearer token-odd":
            return "yes, admit them"  # type: ignore[return-value]
        return super().authenticate(request)


@pytest.mark.parametrize("kind", raw.REQUEST_KINDS)
async def test_an_authenticate_that_raises_or_answers_nonsense_refuses_with_401_and_is_logged(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    host = FailingHost()
    host.grant(ALICE, notes="write")
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION)
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="mycelium"):
            broken = await raw.exchange(http, s.url, kind, session, token="token-breaks")
            odd = await raw.exchange(http, s.url, kind, session, token="token-odd")
        for answer in (broken, odd):
            assert answer.status == 401, answer.text
            assert answer.headers["www-authenticate"].startswith("Bearer")
            assert "credential store" not in answer.text  # the host's failure stays in the operator's log
        [raised, nonsense] = [record for record in caplog.records if record.name == "mycelium.mcp"]
        assert raised.levelno == logging.ERROR
        # Where it failed, not what it said: an exception's text may quote what the client presented.
        assert "RuntimeError" in raised.getMessage()
        assert "test_authentication.py" in raised.getMessage()
        assert raised.exc_info is None
        assert "credential store is down" not in raised.getMessage()
        assert nonsense.levelno == logging.ERROR
        assert "str" in nonsense.getMessage()
        assert await still_works(http, s.url, session)


@dataclass
class Custom:
    url: str
    host: Host


@asynccontextmanager
async def custom_server(
    host: Host, authenticate: Callable[[Any], Any] | None = None, **options: Any
) -> AsyncIterator[Custom]:
    """A server built with ``create_mcp`` options that ``served()`` does not expose."""
    async with create_mcp_catalog(load=host.load, sandbox=MontySandbox()) as catalog:
        server = create_mcp(catalog=catalog, authenticate=authenticate or host.authenticate, **options)
        async with serve_asgi(server.asgi) as base:
            yield Custom(f"{base}/mcp", host)


async def test_an_authenticate_that_never_answers_refuses_with_401_after_its_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    host = granted()
    never = anyio.Event()

    async def hanging(request: Any) -> Admitted | Refused:
        if request.headers.get("authorization") == "Bearer token-hangs":
            await never.wait()  # a credential service that does not answer
        return host.authenticate(request)

    async with custom_server(host, hanging, authenticate_timeout_ms=200) as c, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, c.url)
        for kind in raw.REQUEST_KINDS:
            answer = await raw.exchange(http, c.url, kind, session, token="token-hangs")
            assert answer.status == 401, (kind, answer.text)
        assert await still_works(http, c.url, session)
    assert any("authenticate() failed" in record.getMessage() for record in caplog.records)


# -- a connection is bound to its principal -------------------------------------------------


async def test_another_principal_presenting_a_session_id_is_refused_as_if_it_did_not_exist() -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        alices = await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION)
        unknown = await raw.exchange(http, s.url, "tools-call", "0" * 32, token="token-bob")
        for token in ("token-bob", "token-carol"):
            for kind in raw.REQUEST_KINDS[1:]:  # every kind that presents a session id
                answer = await raw.exchange(
                    http, s.url, kind, alices, token=token, code="return await notes.create(text='stolen')"
                )
                assert answer.status == 404, (token, kind, answer.text)
                assert answer.text == unknown.text  # nothing tells a known id from an unknown one
        assert await still_works(http, s.url, alices)
        bobs = await raw.open_session(http, s.url, "token-bob")
        assert await still_works(http, s.url, bobs, "token-bob")
        assert (await raw.exchange(http, s.url, "tools-call", bobs)).status == 404  # and the other way round
        ended = await raw.exchange(http, s.url, "delete", alices)
        assert ended.status == 200
        assert (await raw.exchange(http, s.url, "tools-call", alices)).status == 404
    assert host.writes == []


async def test_an_sdk_clients_connection_cannot_be_used_by_another_principal() -> None:
    host = granted()
    opened: list[str] = []

    async def remember(response: httpx2.Response) -> None:
        if "mcp-session-id" in response.headers:
            opened.append(response.headers["mcp-session-id"])

    async with served(host) as s:
        http = httpx2.AsyncClient(
            headers={"Authorization": "Bearer token-alice"}, timeout=30, event_hooks={"response": [remember]}
        )
        async with http, Client(streamable_http_client(s.url, http_client=http), mode="legacy") as alice:
            async with httpx2.AsyncClient(timeout=30) as bob:
                stolen = await raw.exchange(bob, s.url, "tools-call", opened[0], token="token-bob")
                assert stolen.status == 404
            result = await alice.call_tool("execute", {"code": "return await notes.search(text='first')"})
            assert json.loads(text_of(result)) == [{"id": 1, "text": "first"}]


# -- the protocol versions served ----------------------------------------------------------

_REQUEST_IDS = {"initialize": 1, "tools-call": 7}


@pytest.mark.parametrize("version", ["1.0", "", "2099-01-01", "2025-11-25x", "2026-07-28;"])
async def test_a_request_naming_a_version_no_era_speaks_gets_400_naming_the_served_ones(version: str) -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION)
        for kind in raw.REQUEST_KINDS:
            answer = await raw.exchange(
                http, s.url, kind, session, version=version, code="return await notes.create(text='x')"
            )
            assert answer.status == 400, (kind, answer.text)
            error = json.loads(answer.text)
            assert all(served_version in error["error"]["message"] for served_version in PROTOCOL_VERSIONS)
            assert error["error"]["code"] == types.UNSUPPORTED_PROTOCOL_VERSION
            assert error["error"]["data"] == {
                "supported": ["2026-07-28"],  # what server/discover lists
                "requested": version,
                "handshake": ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"],
            }
            assert error["id"] == _REQUEST_IDS.get(kind)  # the request's own id, where it has one
            assert "mcp-session-id" not in answer.headers
        assert await still_works(http, s.url, session)
    assert host.writes == []


@pytest.mark.parametrize("asked", ["2025-06-18", "2025-03-26", "2024-11-05"])
async def test_an_initialize_asking_for_an_older_handshake_version_is_served_in_it(asked: str) -> None:
    async with served(granted()) as s, httpx2.AsyncClient(timeout=30) as http:
        body = raw.initialize(1)
        body["params"]["protocolVersion"] = asked
        answer = await raw.send(http, "POST", s.url, sent=raw.headers(version=None), body=body)
        assert answer.status == 200
        assert answer.result()["protocolVersion"] == asked
        session = answer.headers["mcp-session-id"]
        notified = await raw.send(
            http, "POST", s.url, sent=raw.headers(session=session, version=asked), body=raw.INITIALIZED
        )
        assert notified.status == 202
        listed = await raw.send(
            http,
            "POST",
            s.url,
            sent=raw.headers(session=session, version=asked),
            body={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        )
        assert [tool["name"] for tool in listed.result()["tools"]] == ["execute"]


async def test_an_auto_negotiating_sdk_client_speaks_2026_07_28_without_a_refusal() -> None:
    host = granted()
    exchanges: list[tuple[str | None, int]] = []

    async def record(response: httpx2.Response) -> None:
        exchanges.append((response.request.headers.get("mcp-protocol-version"), response.status_code))

    async with served(host) as s:
        http = httpx2.AsyncClient(
            headers={"Authorization": "Bearer token-alice"}, timeout=30, event_hooks={"response": [record]}
        )
        async with http, Client(streamable_http_client(s.url, http_client=http)) as client:  # mode "auto"
            result = await client.call_tool("execute", {"code": "return await notes.create(text='negotiated')"})
            assert client.protocol_version == "2026-07-28"
    assert json.loads(text_of(result)) == {"id": 3, "text": "negotiated"}
    assert exchanges
    assert all(version == "2026-07-28" and status == 200 for version, status in exchanges)


# -- Host and Origin ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", raw.REQUEST_KINDS)
async def test_a_foreign_origin_or_host_is_refused(kind: str) -> None:
    host = granted()
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        port = s.url.split(":")[2].split("/")[0]
        session = await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION)
        foreign = [
            {"origin": "http://evil.example"},
            {"origin": f"http://evil.example:{port}"},
            {"origin": "null"},
            {"host": "evil.example"},
            {"host": f"evil.example:{port}"},
            {"host": "127.0.0.1.evil.example"},
            # A loopback name and a port, then more: only digits may follow the colon.
            {"host": "localhost:1.evil.example"},
            {"host": "127.0.0.1:80@evil.example"},
            {"origin": "http://localhost:1.evil.example"},
        ]
        for extra in foreign:
            answer = await raw.exchange(http, s.url, kind, session, code="return await notes.create(text='x')", **extra)
            assert 400 <= answer.status < 500, (extra, answer.status, answer.text)
            assert "mcp-session-id" not in answer.headers
        local = await raw.exchange(http, s.url, "tools-call", session, origin=f"http://localhost:{port}")
        assert local.status == 200
        assert await still_works(http, s.url, session)
    assert host.writes == []


async def test_allowed_hosts_and_origins_are_configurable() -> None:
    host = granted()
    allowed = {"allowed_hosts": ["mcp.example:*"], "allowed_origins": ["https://app.example"]}
    async with custom_server(host, None, **allowed) as c, httpx2.AsyncClient(timeout=30) as http:
        opened = await raw.send(
            http, "POST", c.url, sent=raw.headers(version=None, host="mcp.example:443"), body=raw.initialize()
        )
        assert opened.status == 200
        session = opened.headers["mcp-session-id"]
        proxied = {"host": "mcp.example:443", "origin": "https://app.example"}
        assert (await raw.exchange(http, c.url, "notification", session, **proxied)).status == 202
        assert (await raw.exchange(http, c.url, "tools-call", session, **proxied)).status == 200
        loopback = await raw.exchange(http, c.url, "tools-call", session)  # Host 127.0.0.1 is no longer allowed
        assert loopback.status == 421
        elsewhere = await raw.exchange(
            http, c.url, "tools-call", session, host="mcp.example:443", origin="https://x.example"
        )
        assert elsewhere.status == 403


# -- re-authentication inside an execute ----------------------------------------------------


@dataclass
class SignOutHost(Host):
    """A host with an operation that revokes the caller's token, as signing out elsewhere would."""

    on_sign_out: Callable[[], Awaitable[None]] | None = None
    account: Module = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        account = Module(id="test-account", name="account", description="The caller's account")

        @account.operation(access="read")
        async def sign_out() -> bool:
            """Revoke the token this program's request came with."""
            self.revoked_tokens.add("token-alice")
            if self.on_sign_out is not None:
                await self.on_sign_out()
            return True

        self.account = account

    def load(self, principal: Any) -> McpAuthority:
        authority = super().load(principal)
        return McpAuthority(
            grants=authority.grants, sources=[*authority.sources, self.account], instructions=authority.instructions
        )


async def test_a_token_revoked_while_a_program_runs_refuses_its_next_operation_call() -> None:
    host = SignOutHost()
    host.grant(ALICE, notes="write", account="read")
    code = (
        "made = await notes.create(text='before')\n"
        "await account.sign_out()\n"
        "after = await notes.create(text='after')\n"
        "found = await notes.search()\n"
        "return {'made': made['id'], 'after': after, 'found': found}"
    )
    async with served(host) as s, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, s.url, capabilities=raw.FORM_ELICITATION)
        answer = await raw.send(http, "POST", s.url, sent=raw.headers(session=session), body=raw.call_execute(code))
        assert answer.status == 200
        value = json.loads(answer.result()["content"][0]["text"])
        assert value["made"] == 3
        for refused in (value["after"], value["found"]):
            assert refused["refused"] is True
            assert refused["reason"] == "not-granted"
        assert host.writes == [("create", 3)]  # nothing ran after the revocation
        assert (await raw.exchange(http, s.url, "tools-call", session)).status == 401


async def test_a_token_revoked_while_an_sdk_clients_program_runs_refuses_the_rest_of_it() -> None:
    host = SignOutHost()
    code = (
        "import asyncio\n"
        "await account.sign_out()\n"
        "results = await asyncio.gather(notes.create(text='a'), apps.reports.count(), notes.search())\n"
        "return [r['reason'] for r in results]"
    )
    host.grant(ALICE, notes="write", account="read", reports="read")
    async with served(host) as s, s.client() as client:
        await client.list_tools()  # the client validates results against a listing it fetches once, first
        result = await client.call_tool("execute", {"code": code})
        host.revoked_tokens.clear()  # signed in again, so the client's closing DELETE is admitted
    assert result.is_error is False
    assert json.loads(text_of(result)) == ["not-granted"] * 3
    assert host.writes == []
