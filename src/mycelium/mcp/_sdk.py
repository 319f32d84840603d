"""The one module that touches private parts of the official MCP SDK, each behind a small named function.

The server resumes connections after a restart and evicts them itself, and the upstream
client wants the SDK's own HTTP defaults: neither is offered by the SDK's public API, so
both reach into private names of one release, pinned in ``pyproject.toml``
(:data:`SUPPORTED_MCP_VERSION`). Private names change without notice between releases,
so they are used here only, each function saying which one and why, and importing this
module fails at once, naming the versions or the missing part, when the installed SDK is
another release or lacks one of them: a clear ImportError now rather than an
AttributeError in the middle of a request. Moving to another release: run
``tests/mcp/test_sdk.py`` against it (one test a private part), then change both pins.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging

import anyio
import httpx2
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared import _httpx_utils
from mcp_types.version import LATEST_HANDSHAKE_VERSION
from starlette.types import Message, Receive, Scope, Send

from ._http import stays_connected, watch

SUPPORTED_MCP_VERSION = "2.3.0"
"""The one ``mcp`` release whose private parts this module is written against (``mcp==2.3.0`` in pyproject)."""

MANAGER_PARTS = ("_server_instances", "_session_owners", "_serve_opening_request", "_discard_session")
"""The private attributes of a ``StreamableHTTPSessionManager`` used here."""
HTTP_CLIENT_PARTS = ("create_mcp_http_client",)
"""The private names of ``mcp.shared._httpx_utils`` used here."""
TRANSPORT_LOGGER = "mcp.server.streamable_http"
"""The logger of the SDK's Streamable HTTP transport, where it reports a request that failed inside it."""


def check_sdk() -> None:
    """Refuse the installed SDK unless it is the supported release and has every private part used here."""
    check_version(importlib.metadata.version("mcp"))
    # A manager's constructor sets its session tables, so only a manager shows whether this release has them.
    manager = StreamableHTTPSessionManager(app=Server("mycelium-sdk-check"))
    check_parts(manager, MANAGER_PARTS, "StreamableHTTPSessionManager")
    check_parts(_httpx_utils, HTTP_CLIENT_PARTS, "mcp.shared._httpx_utils")


def check_version(installed: str) -> None:
    """Refuse an ``mcp`` release other than :data:`SUPPORTED_MCP_VERSION`, naming both versions."""
    if installed != SUPPORTED_MCP_VERSION:
        raise ImportError(
            f"mycelium.mcp supports mcp {SUPPORTED_MCP_VERSION} only (it relies on private parts of that release, "
            f"see mycelium/mcp/_sdk.py), but mcp {installed} is installed: install mcp=={SUPPORTED_MCP_VERSION}"
        )


def check_parts(owner: object, names: tuple[str, ...], where: str) -> None:
    """Refuse an SDK whose ``owner`` (described as ``where``) lacks one of the private ``names``, naming it."""
    for name in names:
        if not hasattr(owner, name):
            raise ImportError(
                f"mycelium.mcp relies on {where}.{name} of mcp {SUPPORTED_MCP_VERSION}, "
                "which the installed mcp does not have"
            )


def held_transport(manager: StreamableHTTPSessionManager, session_id: str) -> StreamableHTTPServerTransport | None:
    """The transport ``manager`` holds for ``session_id``, or ``None`` when it holds none.

    Private part: ``manager._server_instances``, the manager's table of open sessions. The
    public ``handle_request`` answers an unknown id with 404 but never says whether it holds
    one; the server must know before passing a request on (a connection it does not hold
    may be resumed) and after (a DELETE ended it).
    """
    return manager._server_instances.get(session_id)


def adopt_transport(
    manager: StreamableHTTPSessionManager,
    session_id: str,
    transport: StreamableHTTPServerTransport,
    owner: AuthenticatedUser,
) -> None:
    """File ``transport`` under ``session_id`` as if ``manager`` had opened it for ``owner``.

    Private parts: ``manager._server_instances`` (the open sessions) and
    ``manager._session_owners`` (the credential each was opened with, recorded as the manager
    records it, so another principal presenting the id gets 404). The manager opens a session
    only under an id it makes up, for an ``initialize`` it sees; a connection resumed after
    a restart keeps the id its client already holds.
    """
    manager._server_instances[session_id] = transport
    manager._session_owners[session_id] = authorization_context(owner)


async def serve_opening_request(
    manager: StreamableHTTPSessionManager,
    transport: StreamableHTTPServerTransport,
    scope: Scope,
    receive: Receive,
    send: Send,
) -> None:
    """Start the server task of an adopted ``transport`` and let it answer the request in ``scope``.

    Private part: ``manager._serve_opening_request``. The public ``handle_request`` starts a
    session's server task only for a request without a session id, under a new id; a
    resumed connection needs its task started under the id it keeps. As for any opening
    request, one that is refused or fails leaves the transport discarded.
    """
    await manager._serve_opening_request(transport, scope, receive, send)


async def discard_transport(manager: StreamableHTTPSessionManager, session_id: str) -> None:
    """Close the transport ``manager`` holds for ``session_id``, if any: its id answers 404 from then on.

    Private parts: ``manager._server_instances`` (to find it) and ``manager._discard_session``
    (the manager's own clean-up, which forgets the id before it awaits anything and
    terminates the transport shielded from cancellation). Publicly a session ends only by
    its client's DELETE; the server also closes connections itself (eviction, shutdown).
    """
    transport = held_transport(manager, session_id)
    if transport is not None:
        await manager._discard_session(session_id, transport)


async def revive_transport(manager: StreamableHTTPSessionManager, session_id: str, scope: Scope) -> bool:
    """Start a transport under ``session_id`` and complete its handshake without the client; whether it holds.

    The client initialized this connection in a process that is gone; it only needs to be
    told it is initialized. Its capabilities were never recorded here, so nothing is asked
    of it (no elicitation). Built on :func:`adopt_transport` and :func:`serve_opening_request`.
    """
    transport = StreamableHTTPServerTransport(
        mcp_session_id=session_id,
        is_json_response_enabled=False,
        event_store=None,
        security_settings=manager.security_settings,
        retry_interval=manager.retry_interval,
        idle_timeout=manager.session_idle_timeout,
    )
    adopt_transport(manager, session_id, transport, owner=scope["user"])
    body = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    headers = [(name, value) for name, value in scope["headers"] if name in (b"host", b"origin")] + [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-session-id", session_id.encode()),
        (b"mcp-protocol-version", LATEST_HANDSHAKE_VERSION.encode()),
    ]
    handshake = {**scope, "method": "POST", "headers": headers, "query_string": b""}
    status = 0

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await serve_opening_request(manager, transport, handshake, watch(stays_connected, None, first=body), send)
    return 200 <= status < 300 and held_transport(manager, session_id) is not None


class _ClosedUnderRequest(logging.Filter):
    """Tell the SDK's report of a request whose connection's streams were closed under it for what it is.

    A DELETE, an eviction or the server stopping closes a connection's streams while other
    requests of it may still be on their way in; the SDK then fails forwarding their message
    and reports it as an error with a traceback ("Error handling POST request"). That is the
    expected end of such a request, which the server answers itself (see ``Answered``): the
    report becomes one line at DEBUG, kept only where DEBUG is logged. Any other failure is
    left as the SDK reports it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info is None or not _closed_streams_only(record.exc_info[1]):
            return True
        record.msg = f"{record.getMessage()}: its connection was closed meanwhile (a DELETE, an eviction, a stop)"
        record.args = None
        record.exc_info = record.exc_text = None
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


_CLOSED_UNDER_REQUEST = _ClosedUnderRequest()


def _closed_streams_only(error: BaseException | None) -> bool:
    """Whether ``error`` (each of them, in a group) is a memory stream of anyio found closed."""
    if isinstance(error, BaseExceptionGroup):
        return all(_closed_streams_only(each) for each in error.exceptions)
    return isinstance(error, anyio.ClosedResourceError | anyio.BrokenResourceError)


def quiet_closed_streams() -> None:
    """Log the SDK's failures over a connection closed under a request at DEBUG (once per process)."""
    transport_logger = logging.getLogger(TRANSPORT_LOGGER)
    if _CLOSED_UNDER_REQUEST not in transport_logger.filters:
        transport_logger.addFilter(_CLOSED_UNDER_REQUEST)


def http_client(headers: dict[str, str], auth: httpx2.Auth | None) -> httpx2.AsyncClient:
    """An HTTP client for an upstream server, with the SDK transports' own timeouts.

    Private part: ``mcp.shared._httpx_utils.create_mcp_http_client``, the factory
    ``streamable_http_client`` uses when it is given no client. Sending headers and basic
    auth takes a client of our own, and the public API exports no such factory; copying its
    timeouts (30 s, 300 s to read a stream a server holds open) here would drift from the SDK's.
    """
    return _httpx_utils.create_mcp_http_client(headers=headers, auth=auth)


check_sdk()
