"""Serving over Streamable HTTP: the catalog at ``/mcp`` with uvicorn, behind a bearer token.

The socket is bound before anything is announced, so the URL printed (with the real port
when the port asked for is 0) already answers. ``/healthz`` answers in front of the server
(see :mod:`._front`). The first SIGTERM or SIGINT drains: new work gets 503 while the
requests in flight get up to ``drain_seconds`` to finish; :data:`HAND_OFF_SECONDS` before
the end, the runs that can pause are handed off into the store; those still running at
the end are cancelled, the MCP streams are closed, and uvicorn stops. The next signal
stops at once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field

import anyio
import uvicorn
from rich.console import Console
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..mcp import (
    LOOPBACK_HOSTS,
    LOOPBACK_ORIGINS,
    Authenticate,
    McpCatalogProvider,
    McpServer,
    SecretKeys,
    approvals_app,
    bearer_tokens,
    create_mcp,
)
from ..mcp._approvals_page import APPROVALS_PATH
from ._banner import ApproverLogin, print_banner
from ._console import logger
from ._front import Front, Health, Probe
from ._owned import LOCAL_PRINCIPAL
from ._signals import stop_on_signal
from ._sockets import ClientLimits, accept_backlog, http_protocol
from ._target import Target
from ._tokens import Secret, TokenFileError

MCP_PATH = "/mcp"
DEFAULT_DRAIN_SECONDS = 30
"""How long a stop waits, by default, for the requests in flight before cancelling them."""
HAND_OFF_SECONDS = 5.0
"""How long before the drain's end (at most half of it) the runs still in flight are handed off: each
2026-07-28 run that can pause pauses at its next operation call, and its client's retry resumes it on
another replica. Until then they may finish here, which a replica alone needs."""
_SHUTDOWN_BACKSTOP_SECONDS = 5
"""What uvicorn still waits, after the drain, for connections to close: by then nothing should be running."""


class ServeError(Exception):
    """Serving failed (the port is taken, the server did not start); the message says why."""


@dataclass(frozen=True)
class HttpOptions:
    """Where and how `serve` listens over HTTP."""

    host: str
    port: int
    token: Secret
    """The agents' token."""
    allow_hosts: Sequence[str]
    approver_token: Callable[[], Secret] | None
    """The approvals page's token sign-in (``/approvals``), asked for only when the catalog pauses runs,
    so an app without the page has no approver token kept for it; ``None``: none, only
    ``approver_authenticate`` signs people in."""
    drain_seconds: float = DEFAULT_DRAIN_SECONDS
    """How long a stop waits for the requests in flight before cancelling them."""
    approver_authenticate: Authenticate | None = None
    """The app's own check of who may approve on the page (``--approver-auth``)."""
    approver_authenticate_name: str | None = None
    """How to name that check to a person (its ``module:attribute``)."""
    trusted_proxies: tuple[str, ...] = ()
    """The addresses (or networks) of the proxies whose ``X-Forwarded-For`` and ``X-Forwarded-Proto``
    are believed (``--trusted-proxy``); from any other peer those headers are the client's own words."""
    limits: ClientLimits = field(default_factory=ClientLimits)
    """How long a client may take to send a request, and how many idle connections one address may keep."""


@dataclass(frozen=True)
class Replica:
    """What this replica shares with the others (``--store``): the ring that seals, and the store."""

    secret_keys: SecretKeys
    probe: Probe
    """The store's health check."""
    store: str
    """How to name the store to a person: its URL with the password masked."""


async def serve_http(
    catalog: McpCatalogProvider,
    *,
    target: Target,
    label: str,
    name: str,
    http: HttpOptions,
    out: Console,
    replica: Replica | None = None,
) -> None:
    """Serve ``catalog`` until a signal stops it; the banner goes to ``out``. Raises :class:`ServeError`."""
    host, token, allow_hosts, limits = http.host, http.token.value, http.allow_hosts, http.limits
    body_timeout_ms = max(1, round(limits.body_timeout_s * 1000))
    suspensions = catalog.suspensions
    approver = None if suspensions is None or http.approver_token is None else http.approver_token()
    if approver is not None and approver.value == token:
        where = f"the approver token kept in {approver.file}" if approver.file else "the approver token"
        hint = f"delete {approver.file} to have a new one generated" if approver.file else "choose another"
        raise TokenFileError(f"{where} is the agents' token too: an agent must never approve its own calls; {hint}")
    hosts = [*LOOPBACK_HOSTS, *(f"{allowed}:*" for allowed in allow_hosts)]
    origins = [
        *LOOPBACK_ORIGINS,
        *(f"{scheme}://{allowed}:*" for allowed in allow_hosts for scheme in ("http", "https")),
    ]
    page = (
        None
        if suspensions is None
        else approvals_app(
            suspensions,
            approver_token=None if approver is None else approver.value,
            authenticate=http.approver_authenticate,
            agent_tokens=[token],
            allowed_hosts=hosts,
            allowed_origins=origins,
            secret_keys=replica.secret_keys if replica is not None else None,
            body_timeout_ms=body_timeout_ms,
        )
    )
    server = create_mcp(
        catalog=catalog,
        authenticate=bearer_tokens({token: LOCAL_PRINCIPAL}),
        name=name,
        allowed_hosts=hosts,
        allowed_origins=origins,
        # Without a ring the server seals under a key of this process, which is right for one replica.
        secret_keys=replica.secret_keys if replica is not None else None,
        page_approvals=page is not None,
        freeze_loaded=True,  # this process serves this one server for its life
        body_timeout_ms=body_timeout_ms,
    )
    sock = _bind(host, http.port)
    bound_port = sock.getsockname()[1]
    # A wildcard address listens on loopback too; that is the address a local client can use.
    url = _url({"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host), bound_port)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with server.running():
            # Printed only now: the socket already listens, and the MCP server is ready.
            print_banner(
                out,
                target=target,
                label=label,
                name=name,
                url=url,
                token=http.token,
                cwd=os.getcwd(),
                store=replica.store if replica is not None else None,
                approvals=None
                if page is None
                else ApproverLogin(
                    url.removesuffix(MCP_PATH) + APPROVALS_PATH, approver, http.approver_authenticate_name
                ),
            )
            yield

    routes = [Route(MCP_PATH, _AsgiEndpoint(server))]
    if page is not None:  # its own login, outside /mcp
        routes += [Route(APPROVALS_PATH, page), Route(f"{APPROVALS_PATH}/{{rest:path}}", page)]
    web_app = Starlette(routes=routes, lifespan=lifespan)
    front = Front(web_app, Health(replica.probe if replica is not None else None), body_timeout_s=limits.body_timeout_s)
    web = _Uvicorn(
        uvicorn.Config(
            front,
            # h11 whatever else is installed: the bounds on slow clients are written for its protocol.
            http=http_protocol(limits),
            # Accepted in one go before any is counted: the burst must fit in the files the cap leaves.
            backlog=accept_backlog(limits),
            lifespan="on",
            log_config=None,
            access_log=False,
            # uvicorn believes forwarded headers from loopback by default: any local client, or anyone
            # through a proxy on this machine that passes them on, could then claim any address to the
            # sign-in limit and the logs. Only the proxies the operator names are believed.
            proxy_headers=bool(http.trusted_proxies),
            forwarded_allow_ips=list(http.trusted_proxies),
            timeout_graceful_shutdown=_SHUTDOWN_BACKSTOP_SECONDS,
        )
    )
    stop = anyio.Event()

    def at_once() -> None:
        logger.info("stopping at once")
        front.cancel_in_flight()
        web.force_exit = True
        web.should_exit = True

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_on_signal, stop, at_once)

            async def stop_when_asked() -> None:
                await stop.wait()
                await _drain(front, server, http.drain_seconds)
                # Close the MCP streams before uvicorn stops: an open event stream would
                # hold its shutdown until the backstop ends.
                await server.close()
                web.should_exit = True

            tg.start_soon(stop_when_asked)
            # uvicorn exits the process (SystemExit) when the app's startup fails.
            with contextlib.suppress(SystemExit):
                await web.serve(sockets=[sock])
            if web.force_exit and web.started:
                # Stopped at once, uvicorn leaves the app's lifespan waiting for its end; end it, so it is
                # not cancelled as the loop closes, which uvicorn logs as an error with a traceback.
                with anyio.move_on_after(_SHUTDOWN_BACKSTOP_SECONDS):
                    await web.lifespan.shutdown()
            tg.cancel_scope.cancel()
    finally:
        sock.close()
        await server.close()
    if not web.started:
        # Raised here, outside the task group, so it is not wrapped in an exception group.
        raise ServeError("the server failed to start (see the log above)")


async def _drain(front: Front, server: McpServer, seconds: float) -> None:
    """Take no new work and give the requests in flight ``seconds`` to finish: near the end, hand
    off the runs that can pause, then cancel what still runs."""
    front.drain()
    server.drain()
    # Said once new work is refused, never before: tests and operators read it as the drain's start.
    logger.info("draining: new requests get 503; %d in flight get up to %s s to finish", front.in_flight, seconds)
    hand_off = min(HAND_OFF_SECONDS, seconds / 2)
    with anyio.move_on_after(seconds - hand_off):
        await front.drained()
    if front.in_flight:
        logger.info("handing off what still runs: %d request(s) pause at their next call", front.in_flight)
        server.hand_off()
    with anyio.move_on_after(hand_off):
        await front.drained()
    if front.in_flight:
        logger.warning("cancelling %d request(s) still running after %s s", front.in_flight, seconds)
        front.cancel_in_flight()
        with anyio.move_on_after(_SHUTDOWN_BACKSTOP_SECONDS):
            await front.drained()


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket, so the URL printed (with the real port when ``port`` is 0) is already reachable."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ServeError(f"cannot listen on {host}:{port}: {exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted sockets inherit it. A 2026-07-28 answer is a plain JSON response, written as
        # headers then body: without it the body waits for the client's delayed ACK, some 40 ms.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(
                f"cannot listen on {host}:{port}: the port is in use (by another server, or a mycelium serve "
                "still running); pass --port with another port, or --port 0 for a free one"
            ) from exc
        raise ServeError(f"cannot listen on {host}:{port}: {exc}") from exc
    return sock


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{MCP_PATH}"


class _AsgiEndpoint:
    """``server.asgi`` as a Starlette route endpoint.

    Starlette treats a function or bound method as a request handler; an object with
    ``__call__`` is mounted as a plain ASGI app, which is what ``server.asgi`` is.
    """

    def __init__(self, server: McpServer) -> None:
        self._server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._server.asgi(scope, receive, send)


class _Uvicorn(uvicorn.Server):
    """uvicorn's server without its signal handling: the CLI stops it, in order, itself."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
