"""The MCP server: one ``execute`` tool over Streamable HTTP (or stdio), authenticated per request.

Built on the official SDK's low-level server and its Streamable HTTP session manager,
which serves both eras of the protocol on one endpoint: 2026-07-28, where every request
stands alone (no ``initialize``, no session; version and capabilities in its ``_meta``),
and the handshake revisions up to 2025-11-25, in stateful SSE mode so a tool call can
ask the person through form elicitation while it runs. This module adds what the SDK
leaves to the host:

- ``authenticate`` runs for every HTTP request (requests, notifications, the client's
  replies, GET streams, DELETE) and again before every operation call of an execute.
  The principal always comes from the credential, never from a request's ``_meta``.
- A ``MCP-Protocol-Version`` no era speaks gets HTTP 400 naming the versions served.
- A ``confirm=True`` operation pauses the run into the catalog's suspensions, so its
  sandbox slot is free while the person decides. Over 2026-07-28 the call answers with
  an input-required result whose sealed ``requestState`` names the paused run; the
  client's retry with the answer resumes it on whichever replica it reaches. Over the
  handshake revisions the server asks by elicitation and resumes the run itself.
- A connection (handshake revisions) is bound to the principal that opened it; another
  principal presenting its id gets 404, as if it did not exist.
- At most ``catalog.max_connections`` connections stay open in memory; opening one more
  evicts the least recently used idle one (a connection running an execute is never
  evicted). A connection the catalog still records, but this process does not hold (after
  a restart, or on another replica), is resumed for its own principal, without
  elicitation: it may read but not write until the client initializes a fresh connection.
- Each execute reads the principal's authority afresh, and again after each approval.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._distribution import VERSION
from .._execute import EXECUTE_INPUT_SCHEMA, ToolCall, ToolResult
from .._options import check_int
from .._signals import AbortController, AbortSignal
from .._text import new_reference
from ..failures import Cancelled, SuspensionFailed
from ..suspensions import Suspension
from ._approvals import PageApprovals, with_approval_argument
from ._authentication import Authentication
from ._bodies import DEFAULT_BODY_TIMEOUT_MS, BodyReader, Unread
from ._collector import ServingCollector
from ._elicitation import (
    APPROVAL,
    PausedRun,
    RequestAccess,
    approval_question,
    approved,
    input_required,
    paused_run,
)
from ._held import HeldConnections
from ._http import (
    CONNECTION_ENDED,
    LOOPBACK_HOSTS,
    LOOPBACK_ORIGINS,
    Answered,
    allowed,
    message_id,
    releasing,
    request_id,
    send_error,
    watch,
)
from ._keys import SecretKeys
from ._principals import Admitted, Authenticate, Principal, Refused, principal_key
from ._provider import McpCatalogProvider, McpExecutionContext
from ._results import answered, failure, tool_result
from ._sdk import held_transport, quiet_closed_streams

__all__ = ["LOOPBACK_HOSTS", "LOOPBACK_ORIGINS", "PROTOCOL_VERSIONS", "McpServer", "create_mcp"]

logger = logging.getLogger("mycelium.mcp")

PROTOCOL_VERSIONS: tuple[str, ...] = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
"""Every MCP protocol revision served, oldest first: the handshake revisions and 2026-07-28."""
EXECUTE = "execute"
"""The one tool's name."""

_SESSION_HEADER = "mcp-session-id"
_PRINCIPAL = "mycelium.principal"
_LEFT = "mycelium.left"  # the request's AbortSignal, aborted when its client disconnects
# Keys the SDK's transport files its own streams under; a request id equal to one would take it over.
_SDK_STREAM_KEYS = frozenset({"_GET_stream"})
_MAX_HELD_IDS = 1_024
_METHODS = frozenset({"POST", "GET", "DELETE"})
_END_WITHIN_S = 1.0  # for a cancelled request's stream to end: a client that reads nothing is not waited for
_MAX_ECHOED_VERSION = 64  # a header is bounded by the HTTP server, but echoing it need not be
_STATE_TTL_S = 600.0  # without suspensions nothing is paused, and a requestState never needs to live long

# Over stdio there is no HTTP request to read the principal from: it is the server's configured one.
_STDIO_PRINCIPAL: contextvars.ContextVar[Principal] = contextvars.ContextVar("mycelium_mcp_stdio_principal")


class McpServer:
    """An MCP server for one catalog. Build it with :func:`create_mcp`.

    ``asgi`` is the ASGI app to mount at the host's MCP route. It answers the ASGI
    lifespan itself; a host that mounts it inside its own app runs it with
    ``async with server.running():`` in that app's lifespan. ``close()`` closes every
    open transport; the catalog keeps its connection records (its owner decides).
    """

    def __init__(
        self,
        *,
        catalog: McpCatalogProvider,
        authenticate: Authenticate,
        name: str,
        allowed_hosts: Sequence[str] | None,
        allowed_origins: Sequence[str] | None,
        max_request_bytes: int,
        authenticate_timeout_ms: int,
        max_connections_per_principal: int | None,
        secret_keys: SecretKeys | None,
        page_approvals: bool = False,
        approval_wait_ms: int = 20_000,
        freeze_loaded: bool = False,
        body_timeout_ms: int = DEFAULT_BODY_TIMEOUT_MS,
    ) -> None:
        if not isinstance(catalog, McpCatalogProvider):
            raise ValueError(f"catalog must implement McpCatalogProvider, got {type(catalog).__name__}")
        if secret_keys is not None and not isinstance(secret_keys, SecretKeys):
            raise ValueError(f"secret_keys must be a SecretKeys, got {type(secret_keys).__name__}")
        self._catalog = catalog
        self._authentication = Authentication(
            authenticate, check_int("authenticate_timeout_ms", authenticate_timeout_ms) / 1000
        )
        self._max_request_bytes = check_int("max_request_bytes", max_request_bytes)
        self._bodies = BodyReader(
            max_bytes=self._max_request_bytes, timeout_s=check_int("body_timeout_ms", body_timeout_ms) / 1000
        )
        bound = catalog.max_connections
        self._per_principal = (
            max(1, bound // 2)
            if max_connections_per_principal is None
            else check_int("max_connections_per_principal", max_connections_per_principal)
        )
        self._server: Server[Any] = Server(
            name,
            version=VERSION,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            # Without it the SDK lists the tools (a load() and a lease) before every call of 2026-07-28,
            # to check Mcp-Param headers against a schema that is always the same.
            get_tool_input_schema=lambda tool: self._schema if tool == EXECUTE else None,
        )
        self._server.middleware.append(self._instructions)
        # The SDK's boundary seals every requestState it hands out and opens every one that comes
        # back (AES-GCM under the ring, bound to the principal, the tool call and a deadline), so
        # the handler only ever sees state it minted. A ring of this process alone serves one replica.
        suspensions = catalog.suspensions
        keys = secret_keys if secret_keys is not None else SecretKeys.of(secrets.token_hex(32))
        self._collector = ServingCollector() if freeze_loaded else None
        wait_s = check_int("approval_wait_ms", approval_wait_ms) / 1000
        self._approvals = (
            PageApprovals(keys.approval_keys(), suspensions, wait_s=wait_s) if page_approvals and suspensions else None
        )
        self._schema: dict[str, Any] = (
            with_approval_argument(EXECUTE_INPUT_SCHEMA, "")[0] if self._approvals else EXECUTE_INPUT_SCHEMA
        )
        security = RequestStateSecurity(
            keys=keys.request_state_keys(),
            ttl=suspensions.expires_after_ms / 1000 if suspensions is not None else _STATE_TTL_S,
            bind_principal=lambda ctx: principal_key(self._caller(ctx)[0]),
        )
        self._server.middleware.append(RequestStateBoundary(security, default_audience=name))
        self._hosts = tuple(LOOPBACK_HOSTS if allowed_hosts is None else allowed_hosts)
        self._origins = tuple(LOOPBACK_ORIGINS if allowed_origins is None else allowed_origins)
        self._manager = StreamableHTTPSessionManager(
            app=self._server,
            json_response=False,
            stateless=False,
            security_settings=TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=list(self._hosts),
                allowed_origins=list(self._origins),
            ),
            # Connections end by DELETE or eviction; their records belong to the catalog.
            session_idle_timeout=None,
            max_request_body_size=self._max_request_bytes,
            max_sessions=None,
        )
        self._connections = HeldConnections(catalog, self._manager, per_principal=self._per_principal)

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            await self._serve(scope, receive, send)

        # A plain coroutine function: servers such as uvicorn recognise it as an ASGI 3 app.
        self._app: ASGIApp = app
        self._running = False
        self._closed = False
        self._draining = False
        self._pause = AbortController()

    # -- ASGI ---------------------------------------------------------------------------

    @property
    def asgi(self) -> ASGIApp:
        """The ASGI app: every HTTP request is authenticated before the SDK sees it."""
        return self._app

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if not self._running or self._closed:
            await send_error(send, 503, "the MCP server is not running")
            return
        if scope["method"] not in _METHODS:
            await send_error(send, 405, "use POST, GET or DELETE", extra=[(b"allow", b"GET, POST, DELETE")])
            return
        connection = HTTPConnection(scope)
        # Checked here, before the credential: the SDK's own check would take `localhost:1.evil.example`
        # for `localhost:*`, and a rebound page learns nothing from how its token fares.
        if not allowed(connection.headers.get("host"), self._hosts):
            await send_error(send, 421, "this server is not served under that Host name")
            return
        origin = connection.headers.get("origin")
        if origin is not None and not allowed(origin, self._origins):
            await send_error(send, 403, "requests from that Origin are not accepted")
            return
        principal = await self._authentication.admit(connection)
        if isinstance(principal, Refused):
            await self._authentication.refuse(send, principal, connection)
            return
        key = principal_key(principal)
        token = AccessToken(token=key, client_id=key, scopes=[])
        left = AbortController()
        scope = {**scope, "user": AuthenticatedUser(token), _PRINCIPAL: principal, _LEFT: left.signal}
        session_id = connection.headers.get(_SESSION_HEADER)
        body: bytes | None = None
        if scope["method"] == "POST":
            read = await self._bodies.read(scope, receive)
            if isinstance(read, Unread):
                await read.answer(send)
                return
            body = read
        version = connection.headers.get("mcp-protocol-version")
        if version is not None and version not in PROTOCOL_VERSIONS:
            # The spec's UnsupportedProtocolVersionError: ``supported`` agrees with server/discover
            # (the per-request revisions); the handshake ones are named beside them.
            served = ", ".join(PROTOCOL_VERSIONS)
            data: dict[str, object] = {
                "supported": list(MODERN_PROTOCOL_VERSIONS),
                "requested": version[:_MAX_ECHOED_VERSION],
                "handshake": list(HANDSHAKE_PROTOCOL_VERSIONS),
            }
            message = f"unsupported MCP protocol version; this server speaks {served}"
            await send_error(
                send, 400, message, code=types.UNSUPPORTED_PROTOCOL_VERSION, echo=message_id(body), data=data
            )
            return
        answered = Answered(send)
        watched = watch(receive, left, first=body)
        try:
            if version in MODERN_PROTOCOL_VERSIONS:
                # One request, one answer, nothing kept: the SDK's per-request entry serves it whole.
                await self._manager.handle_request(scope, watched, answered)
            elif session_id is None:
                await self._manager.handle_request(scope, watched, self._opening(principal, answered))
            else:
                await self._continue(scope, watched, answered, principal, session_id, request_id(body))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The connection's streams were closed under the request (a DELETE, an eviction, a stop):
            # the SDK fails forwarding its message. It ends here, answered, and the HTTP connection stays.
            logger.debug("a request ended with its connection, which was closed under it")
            await answered.finish(404, CONNECTION_ENDED)
            return
        except anyio.get_cancelled_exc_class():
            # Cancelled once its event stream began (a server stopping at its deadline): the stream
            # ends, without the answer, instead of being cut, which the HTTP server logs as an error.
            # One that had not begun is answered by whoever cancelled it.
            if answered.started:
                with anyio.move_on_after(_END_WITHIN_S, shield=True):
                    await answered.finish()
            raise
        await answered.finish()
        if self._collector is not None:
            self._collector.answered()

    async def _continue(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        principal: Principal,
        session_id: str,
        request_id: str | None,
    ) -> None:
        """Serve a request on an existing connection: held, resumed, or refused as unknown."""
        known = self._connections.get(session_id)
        if known is None or held_transport(self._manager, session_id) is None:
            resumed = await self._connections.resume(session_id, principal, scope)
            if resumed == "full":
                await send_error(send, 503, "no connection can be freed now")
                return
            if resumed == "unknown":
                await send_error(send, 404, "Session not found")
                return
            known = self._connections[session_id]
        elif known.principal != principal_key(principal):
            await send_error(send, 404, "Session not found")  # as if it did not exist: ids are not probed
            return
        await self._connections.touch(session_id, known)
        if request_id is not None:
            # The SDK files answers by request id: a second request with an id still in flight
            # would take the other's answer and leave one of them unanswered. An id is free again
            # only once its answer went out whole; a client that left before that abandons it for
            # good on this connection: its run is stopped, but the handler still answers under that
            # id as it unwinds, whenever that is. The SDK's own stream keys are never free.
            if request_id in known.requests or request_id in _SDK_STREAM_KEYS:
                await send_error(send, 409, "this request id is in flight or was abandoned on this connection")
                return
            known.requests.add(request_id)
            send = releasing(send, lambda: known.requests.discard(request_id))
        await self._manager.handle_request(scope, receive, send)
        ended = scope["method"] == "DELETE" and held_transport(self._manager, session_id) is None
        # A client that keeps abandoning requests has its connection closed, not the table grown.
        if ended or len(known.requests) > _MAX_HELD_IDS:
            await self._connections.end(session_id)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        try:
            async with self.running():
                await send({"type": "lifespan.startup.complete"})
                await receive()  # lifespan.shutdown
        except Exception:
            logger.exception("the MCP server failed to start or stop")
            await send({"type": "lifespan.shutdown.failed", "message": "see the server log"})
            return
        await send({"type": "lifespan.shutdown.complete"})

    @asynccontextmanager
    async def running(self) -> AsyncIterator[McpServer]:
        """Run the session manager; requests are served while this is entered. Once only."""
        quiet_closed_streams()
        async with self._manager.run():
            if self._collector is not None:
                self._collector.started()
            self._running = True
            try:
                yield self
            finally:
                self._running = False
                await self.close()

    def drain(self) -> None:
        """Take over no handed-off run from now on: a retry of one is answered with its state again,
        so the client's next retry reaches another replica. Runs in flight go on."""
        self._draining = True

    def hand_off(self) -> None:
        """Hand off the 2026-07-28 runs in flight: each run that can pause pauses at its next operation
        call into the store, and its client's retry resumes it on whichever replica answers. A run fed
        whole, or one of a connection, cannot pause: it goes on."""
        self.drain()
        self._pause.abort("handed off")

    async def close(self) -> None:
        """Close every open transport. The catalog's connection records are kept for its owner."""
        self._closed = True
        for session_id in list(self._connections):
            await self._connections.discard(session_id)

    def _opening(self, principal: Principal, send: Send) -> Send:
        """Wrap ``send`` for a request that opens a connection: record it before the client learns its id."""
        refused = False

        async def opening_send(message: Message) -> None:
            nonlocal refused
            if refused:
                return
            if message["type"] == "http.response.start" and message["status"] < 400:
                headers = dict(message.get("headers", []))
                session_id = headers.get(_SESSION_HEADER.encode(), b"").decode()
                if session_id and not await self._connections.open(session_id, principal):
                    refused = True
                    await send_error(send, 503, "every connection of this server is running an execute")
                    return
            await send(message)

        return opening_send

    # -- MCP handlers ---------------------------------------------------------------------

    def _caller(self, ctx: ServerRequestContext[Any, Any]) -> tuple[Principal, HTTPConnection | None, str | None]:
        """Who calls, over which HTTP request, on which connection (``None`` over stdio and 2026-07-28).

        A request of 2026-07-28 belongs to no connection whatever headers it sends: an
        ``Mcp-Session-Id`` there is the client's to choose, and must never pick the session a
        run is filed under (its suspensions, its quota) in place of its principal's own.
        """
        request = ctx.request
        if isinstance(request, HTTPConnection):
            modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
            return request.scope[_PRINCIPAL], request, None if modern else request.headers.get(_SESSION_HEADER)
        return _STDIO_PRINCIPAL.get(), None, None

    async def _instructions(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Give each principal its own instructions: the catalog's answer for them, read at initialize."""
        result = await call_next(ctx)
        if ctx.method != "initialize" or not isinstance(result, dict):
            return result  # the SDK hands middleware the initialize result as its wire dict
        principal, _, _ = self._caller(ctx)
        try:
            authority = await self._catalog.refresh(principal)
        except Exception:
            logger.exception("load()/refresh() failed while initializing; no instructions sent")
            return result
        return {**result, "instructions": authority.instructions} if authority.instructions else result

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        principal, _, _ = self._caller(ctx)
        authority = await self._catalog.refresh(principal)
        definition = await self._catalog.definition(principal, authority)
        schema, description = definition.input_schema, definition.description
        if self._approvals is not None:
            schema, description = with_approval_argument(schema, description)
        tool = types.Tool(
            name=definition.name,
            description=description,
            input_schema=schema,
            annotations=types.ToolAnnotations(
                title="Run a Python program against the host's operations",
                read_only_hint=False,
                destructive_hint=True,
                idempotent_hint=False,
                open_world_hint=False,
            ),
        )
        return types.ListToolsResult(tools=[tool])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name != EXECUTE:
            # Not a tool result: the spec answers a tool nobody offered as invalid params.
            raise MCPError(code=types.INVALID_PARAMS, message=f"this server has one tool, {EXECUTE!r}")
        principal, request, session_id = self._caller(ctx)
        left: AbortSignal | None = None if request is None else request.scope.get(_LEFT)
        authentication = self._authentication
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        connection = self._connections.get(session_id) if session_id else None
        if connection is not None:
            connection.running += 1
        try:
            authority = await self._catalog.refresh(principal)
            access = RequestAccess(
                ctx,
                authority,
                refresh=lambda: self._catalog.refresh(principal),
                still_admitted=None if request is None else lambda: authentication.still_admitted(request, principal),
                read_only=connection is not None and connection.resumed,
                left=left,
                pause=self._catalog.suspensions is not None,
                modern=modern,
                page=self._approvals is not None,
            )
            # A connection's request ids are its own; over 2026-07-28 every client numbers from the start
            # under one principal's session, so an id there names no call and could match another's pause.
            call_id = None if modern else str(ctx.request_id)
            call = ToolCall(id=call_id, name=params.name, arguments=params.arguments or {})
            approvals = self._approvals
            polled = approvals.requested(params.arguments or {}) if approvals is not None else None
            if isinstance(polled, ToolResult):
                return tool_result(polled)

            # Only a run whose client retries by itself can be handed off: a connection's cannot.
            pause = self._pause.signal if modern else None

            def context(session: str | None = session_id) -> McpExecutionContext:
                # A paused run resumes in the session it paused in (a poll may come over another connection).
                return McpExecutionContext(principal, session, access.authority, access.access, call.id, pause, left)

            paused = paused_run(params.request_state) if modern else None
            if approvals is not None and polled is not None:
                resume = lambda run, session: self._catalog.resume_run(run, None, context(session))  # noqa: E731
                result = await approvals.poll(polled, principal, resume)
            elif paused is None:
                result = await self._catalog.execute(call, context())
            elif paused.page is not None and approvals is not None:
                # A person decides on the page: an answer the client sends along decides nothing.
                waited = await approvals.retried(paused.page, principal, draining=self._draining)
                if waited is not None:
                    return answered(waited)
                result = await self._catalog.resume_run(paused.suspension_id, None, context())
            elif paused.question is None:
                if self._draining:
                    return input_required(paused)  # not taken over here: the client's next retry goes elsewhere
                result = await self._catalog.resume_run(paused.suspension_id, None, context())
            else:
                answer = approved((params.input_responses or {}).get(APPROVAL))
                if answer is None:
                    # Not asked again: a state whose run has moved on would be sealed afresh, its
                    # deadline pushed past the pause's own, for a question already answered.
                    raise MCPError(code=types.INVALID_PARAMS, message="the retry carries no answer to the approval")
                # The authority read for this retry is already what holds after the person answered.
                result = await self._catalog.resume_run(paused.suspension_id, answer, context())
            while result.suspension is not None:
                suspension = result.suspension
                if approvals is not None and not suspension.handed_off and not access.can_ask():
                    earlier = paused.page if paused is not None else None  # a person decides elsewhere
                    return answered(
                        approvals.paused(suspension, principal, modern=modern, draining=self._draining, earlier=earlier)
                    )
                question = None if suspension.handed_off else approval_question(suspension)
                if modern:
                    return input_required(PausedRun(suspension.id, question))
                assert question is not None  # a connection's runs are never handed off
                resume = functools.partial(
                    self._catalog.resume_run, suspension.id, context=context(suspension.session_id)
                )
                result = await self._asked(suspension, question, access, left, resume)
            return tool_result(result)
        except MCPError:
            raise
        except Exception:
            reference = new_reference()
            logger.exception("execute over MCP failed on the host, reference %s", reference)
            return failure(f"The host failed to run this request (reference {reference}). Try again later.")
        finally:
            if connection is not None:
                connection.running -= 1

    async def _asked(
        self,
        suspension: Suspension,
        question: str,
        access: RequestAccess,
        left: AbortSignal | None,
        resume: Callable[[bool], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Ask the person over the connection while the paused run holds nothing, then ``resume`` it
        with their answer.

        Only this request can resume the run: nothing of a 2025-11-25 connection comes back for
        it. So when the request ends without the resume having claimed it (the client left or
        cancelled the call, the resume was refused, or a step failed), the run is dropped rather
        than left to expire.
        """
        claimed = False
        try:
            answer = await access.ask(question)
            if left is not None and left.aborted:
                return ToolResult.failed(Cancelled(acknowledged=True))  # nobody is left to take the answer
            if answer:
                await access.refreshed()
            result = await resume(answer)
            # A resume refused (the approvals page decided otherwise, say) or stopped before its claim
            # (its client left on the way) leaves the run paused. Dropping one another resume claimed
            # changes nothing.
            claimed = (left is None or not left.aborted) and not isinstance(result.failure, SuspensionFailed)
            return result
        finally:
            if not claimed:
                await self._drop(suspension)

    async def _drop(self, suspension: Suspension) -> None:
        """Drop a paused run unresumed; nothing if a resume already claimed it. Finishes even when cancelled."""
        suspensions = self._catalog.suspensions
        if suspensions is None:
            return
        with anyio.CancelScope(shield=True):  # bounded by the store's own timeout
            try:
                await suspensions.discard(suspension.id, suspension.session_id)
            except Exception as exc:  # it expires instead; the request's own outcome stands
                logger.warning("could not drop paused run %s (%s); it expires", suspension.id, type(exc).__name__)

    async def serve_stdio(self, principal: Principal) -> None:
        """Serve the catalog over stdin/stdout for ``principal`` until the client closes the streams."""
        _STDIO_PRINCIPAL.set(principal)
        async with stdio_server() as (read, write):
            await self._server.run(read, write, self._server.create_initialization_options())


def create_mcp(
    *,
    catalog: McpCatalogProvider,
    authenticate: Authenticate | Callable[[HTTPConnection], Awaitable[Admitted | Refused]],
    name: str = "mycelium",
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = None,
    max_request_bytes: int = 256 * 1024,
    authenticate_timeout_ms: int = 10_000,
    max_connections_per_principal: int | None = None,
    secret_keys: SecretKeys | None = None,
    page_approvals: bool = False,
    approval_wait_ms: int = 20_000,
    freeze_loaded: bool = False,
    body_timeout_ms: int = DEFAULT_BODY_TIMEOUT_MS,
) -> McpServer:
    """An MCP server offering ``catalog``'s ``execute`` tool, with ``authenticate`` on every request.

    ``authenticate(request)`` (sync or async) sees the request's headers and returns
    ``Admitted(principal)`` or ``Refused(401 | 403)`` (``Refused(401, error="invalid_token")``
    for a credential sent but not valid, which the client is told); an exception or a timeout
    (``authenticate_timeout_ms``) refuses with 401 and is logged. ``allowed_hosts`` and
    ``allowed_origins`` are the Host and Origin values accepted (``"host:*"`` allows any
    port); by default loopback only. Bodies over ``max_request_bytes`` (256 KiB: a
    64 KiB program with room for its JSON escapes) get 413 before anything parses them,
    since the SDK checks a message's every value on the event loop. A body must arrive whole within
    ``body_timeout_ms`` (30 s) of the server's first read of it, else 408 and the HTTP connection
    closes: a client that sends its body slowly, or stops halfway, holds its request no longer.
    ``max_connections_per_principal`` (default: half of ``catalog.max_connections``, at
    least 1) is how many of the held connections one principal may have: its next one
    replaces its own least recently used idle connection, or gets 503 if all are busy.
    ``secret_keys`` seals the ``requestState`` of approvals over 2026-07-28: every replica
    behind one address needs the same ring (by default a key of this process only).
    ``page_approvals`` (with suspensions) pauses a confirmation no client can answer for a person to
    decide on the host's page; the model polls with a handle (see :mod:`mycelium.mcp._approvals`). A
    2026-07-28 client's own retries of such a pause wait for the person up to ``approval_wait_ms`` in
    all (20 s) before the model is given the handle; 0 gives it the handle at once.
    ``freeze_loaded``: once the server runs, what the process has loaded is collected and frozen
    (:func:`gc.freeze`), and once more after the first 100 answered requests, what they loaded
    (the principal's runtime, the SDK's lazily made parts), so no later full collection walks it
    (see :mod:`mycelium.mcp._collector`). For a process that serves one server for its life
    (``mycelium serve`` sets it): a frozen object that later becomes cyclic garbage is never
    collected. By default the collector is left as the host set it.
    """
    return McpServer(
        catalog=catalog,
        authenticate=authenticate,
        name=name,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        max_request_bytes=max_request_bytes,
        authenticate_timeout_ms=authenticate_timeout_ms,
        max_connections_per_principal=max_connections_per_principal,
        secret_keys=secret_keys,
        page_approvals=page_approvals,
        approval_wait_ms=approval_wait_ms,
        freeze_loaded=freeze_loaded,
        body_timeout_ms=body_timeout_ms,
    )
