"""What ``mycelium.mcp._sdk`` relies on in the SDK's private parts, one test a part, and that it is alone in that.

Each test drives a real ``StreamableHTTPSessionManager`` (no HTTP server: ASGI calls made
by hand) through the functions of ``_sdk`` and asserts the behaviour the MCP server builds
on, so a change in a pinned SDK release shows here first, by name.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Message

from mycelium.mcp import _sdk
from mycelium.mcp._http import stays_connected, watch

from .raw_http import ACCEPT, INITIALIZED, PROTOCOL_VERSION, initialize, messages

ROOT = Path(__file__).resolve().parents[2]
ALICE = AuthenticatedUser(AccessToken(token="alice", client_id="alice", scopes=[]))
BOB = AuthenticatedUser(AccessToken(token="bob", client_id="bob", scopes=[]))
TOOLS_LIST = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}


async def _list_tools(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(name="probe", input_schema={"type": "object"})])


@asynccontextmanager
async def running_manager() -> AsyncIterator[StreamableHTTPSessionManager]:
    """A stateful SSE manager, as the MCP server builds one, running; no Host checks (no HTTP here)."""
    server: Server[Any] = Server("sdk-test", on_list_tools=_list_tools)
    manager = StreamableHTTPSessionManager(app=server, json_response=False, stateless=False, session_idle_timeout=None)
    async with manager.run():
        yield manager


async def call(
    manager: StreamableHTTPSessionManager,
    user: AuthenticatedUser,
    body: object,
    *,
    session: str | None = None,
    method: str = "POST",
) -> tuple[int, dict[str, str], list[Any]]:
    """One request through ``manager.handle_request``: status, headers and the JSON-RPC messages answered."""
    return await _answer(manager.handle_request, user, body, session, method)


async def _answer(
    handler: Any, user: AuthenticatedUser, body: object, session: str | None, method: str
) -> tuple[int, dict[str, str], list[Any]]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    await handler(_scope(user, session, method), watch(stays_connected, None, first=raw), send)
    [start] = [message for message in sent if message["type"] == "http.response.start"]
    text = b"".join(message.get("body", b"") for message in sent if message["type"] == "http.response.body")
    headers = {name.decode(): value.decode() for name, value in start.get("headers", [])}
    return start["status"], headers, messages(text.decode())


def _scope(user: AuthenticatedUser, session: str | None, method: str) -> dict[str, Any]:
    headers = [(b"accept", ACCEPT.encode()), (b"content-type", b"application/json"), (b"host", b"127.0.0.1:1")]
    if session is not None:
        headers += [(b"mcp-session-id", session.encode()), (b"mcp-protocol-version", PROTOCOL_VERSION.encode())]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 1),
        "user": user,
    }


async def adopted(manager: StreamableHTTPSessionManager, session_id: str, owner: AuthenticatedUser) -> int:
    """Adopt a new transport under ``session_id`` for ``owner`` and complete its handshake: the status answered."""
    transport = StreamableHTTPServerTransport(mcp_session_id=session_id, is_json_response_enabled=False)
    _sdk.adopt_transport(manager, session_id, transport, owner=owner)

    async def handshake(scope: Any, receive: Any, send: Any) -> None:
        await _sdk.serve_opening_request(manager, transport, scope, receive, send)

    status, _, _ = await _answer(handshake, owner, INITIALIZED, session_id, "POST")
    return status


# --------------------------------------------------------------------------- the guards at import


def test_the_version_guard_refuses_any_other_release_naming_both() -> None:
    _sdk.check_version(_sdk.SUPPORTED_MCP_VERSION)
    with pytest.raises(ImportError, match=r"supports mcp 2\.3\.0 only.*but mcp 2\.4\.0 is installed"):
        _sdk.check_version("2.4.0")
    with pytest.raises(ImportError, match=r"mcp 2\.3\.0rc1 is installed"):
        _sdk.check_version("2.3.0rc1")


def test_the_supported_release_is_the_one_pinned_and_installed() -> None:
    pinned = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"mcp=={_sdk.SUPPORTED_MCP_VERSION}" in pinned
    assert importlib.metadata.version("mcp") == _sdk.SUPPORTED_MCP_VERSION


def test_a_missing_private_part_is_refused_naming_it() -> None:
    _sdk.check_parts(StreamableHTTPSessionManager(app=Server("x")), _sdk.MANAGER_PARTS, "StreamableHTTPSessionManager")

    older = SimpleNamespace(_server_instances={})  # a release with the session table but no owners
    with pytest.raises(ImportError, match=r"StreamableHTTPSessionManager\._session_owners of mcp 2\.3\.0"):
        _sdk.check_parts(older, _sdk.MANAGER_PARTS, "StreamableHTTPSessionManager")


def test_no_other_module_under_src_names_a_private_part_of_the_sdk() -> None:
    private = re.compile("|".join(map(re.escape, [*_sdk.MANAGER_PARTS, *_sdk.HTTP_CLIENT_PARTS, "_httpx_utils"])))
    sdk_module = Path(_sdk.__file__).resolve()
    naming = [
        f"{path.relative_to(ROOT)}: {found}"
        for path in sorted((ROOT / "src").rglob("*.py"))
        if path.resolve() != sdk_module
        for found in private.findall(path.read_text())
    ]
    assert naming == []


# --------------------------------------------------------------------------- _server_instances


async def test_held_transport_is_the_one_the_manager_opened_for_an_id_and_none_for_another() -> None:
    async with running_manager() as manager:
        status, headers, _ = await call(manager, ALICE, initialize())
        assert status == 200
        session_id = headers["mcp-session-id"]
        held = _sdk.held_transport(manager, session_id)
        assert isinstance(held, StreamableHTTPServerTransport)
        assert held.mcp_session_id == session_id
        assert _sdk.held_transport(manager, "not-" + session_id) is None


# ------------------------------------------------------------------ _server_instances and _serve_opening_request


async def test_an_adopted_transport_is_served_by_the_manager_under_its_id() -> None:
    async with running_manager() as manager:
        assert _sdk.held_transport(manager, "kept-id") is None
        assert await adopted(manager, "kept-id", ALICE) == 202
        assert _sdk.held_transport(manager, "kept-id") is not None
        status, _, answered = await call(manager, ALICE, TOOLS_LIST, session="kept-id")
        assert status == 200
        assert [tool["name"] for tool in answered[0]["result"]["tools"]] == ["probe"]


async def test_an_adopted_transport_whose_opening_request_fails_is_discarded() -> None:
    async with running_manager() as manager:
        transport = StreamableHTTPServerTransport(mcp_session_id="kept-id", is_json_response_enabled=False)
        _sdk.adopt_transport(manager, "kept-id", transport, owner=ALICE)

        async def handshake(scope: Any, receive: Any, send: Any) -> None:
            await _sdk.serve_opening_request(manager, transport, scope, receive, send)

        status, _, _ = await _answer(handshake, ALICE, b"{not json", "kept-id", "POST")
        assert status >= 400
        assert _sdk.held_transport(manager, "kept-id") is None
        assert transport.is_terminated


# --------------------------------------------------------------------------- _session_owners


async def test_an_adopted_transport_answers_only_its_owner_and_404_to_another() -> None:
    async with running_manager() as manager:
        assert await adopted(manager, "kept-id", ALICE) == 202
        status, _, answered = await call(manager, BOB, TOOLS_LIST, session="kept-id")
        assert status == 404
        assert answered[0]["error"]["message"] == "Session not found"
        status, _, _ = await call(manager, ALICE, TOOLS_LIST, session="kept-id")
        assert status == 200


# --------------------------------------------------------------------------- _discard_session


async def test_a_discarded_transport_is_terminated_and_its_id_answers_404() -> None:
    async with running_manager() as manager:
        assert await adopted(manager, "kept-id", ALICE) == 202
        transport = _sdk.held_transport(manager, "kept-id")
        assert transport is not None
        await _sdk.discard_transport(manager, "kept-id")
        assert _sdk.held_transport(manager, "kept-id") is None
        assert transport.is_terminated
        status, _, _ = await call(manager, ALICE, TOOLS_LIST, session="kept-id")
        assert status == 404
        await _sdk.discard_transport(manager, "kept-id")  # an id no longer held: nothing to do, no error


# --------------------------------------------------------------------------- create_mcp_http_client


async def test_http_client_carries_the_headers_and_auth_given_with_the_sdk_timeouts() -> None:
    auth = httpx2.BasicAuth("user", "password")
    async with _sdk.http_client({"X-Token": "secret-token"}, auth) as client:
        assert client.headers["x-token"] == "secret-token"
        assert client.auth is auth
        assert client.timeout == httpx2.Timeout(30.0, read=300.0)
        assert not client.follow_redirects  # the SDK's transports follow redirects within the origin themselves
    async with _sdk.http_client({}, None) as client:
        assert client.auth is None
