"""The ``serve`` verb: its options and their checks, and serving the target over the transport chosen.

Over Streamable HTTP (the default) the catalog is served at ``/mcp`` behind a bearer token;
over stdio to the one client that launched the process. With ``--store`` the process is one
replica of many: its connection records and paused runs live in the shared store, sealed
under the deployment's key ring. Tokens the operator does not choose are kept in the data
folder (see :mod:`._tokens`). Either way, a bad APP, store URL, key ring or token file is
one line and exit code 2, serving that fails (a store that does not answer included) one line and
exit code 1, Ctrl-C while APP loads 130.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import ipaddress
import os
import sys
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console
from rich.markup import escape

from ..mcp import McpCatalog, McpCatalogProvider
from ..mcp._bodies import DEFAULT_BODY_TIMEOUT_MS
from ._apps import DEFAULT_ATTRIBUTE, AppError, load_approver_authenticate
from ._banner import APPROVER_TOKEN_ENV, TOKEN_ENV
from ._console import LogFormat, logger, logging_to
from ._evidence import EvidenceFiles
from ._exits import ExitCode
from ._http import DEFAULT_DRAIN_SECONDS, HttpOptions, Replica, ServeError, serve_http
from ._otlp import OTLP_ENDPOINT_ENV, OtlpUnavailable, exporting_spans, traces_url
from ._signals import waking_at_signals
from ._sockets import (
    HEADER_TIMEOUT_SECONDS,
    MAX_IDLE_PER_ADDRESS,
    SEND_TIMEOUT_SECONDS,
    ClientLimits,
    default_max_connections,
    default_max_idle_connections,
)
from ._stdio import serve_stdio
from ._store import STORE_ENV, SharedStore, StoreError, StoreUnreachable
from ._target import CONFIG_OPTION, CONNECT_TIMEOUT_OPTION, Target, choose_target
from ._tokens import (
    APPROVER_TOKEN_FILE,
    DATA_DIR_ENV,
    DEFAULT_DATA_DIR,
    TOKEN_FILE,
    Secret,
    TokenFileError,
    kept_token,
)


class Transport(enum.StrEnum):
    """How ``mycelium serve`` talks to clients."""

    http = "http"
    stdio = "stdio"


def serve(
    ctx: typer.Context,
    app: Annotated[
        str | None,
        typer.Argument(
            metavar="APP",
            help=f"module:attribute or path/to/app.py[:attribute] (default attribute: {DEFAULT_ATTRIBUTE}), "
            "naming an McpCatalog or a zero-argument factory (sync or async) returning one. "
            "Leave it out with --config.",
            show_default=False,
        ),
    ] = None,
    config: Annotated[Path | None, CONFIG_OPTION] = None,
    connect_timeout: Annotated[float | None, CONNECT_TIMEOUT_OPTION] = None,
    host: Annotated[str, typer.Option(help="Interface to listen on (HTTP).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (HTTP); 0 picks a free one.")] = 8000,
    transport: Annotated[
        Transport, typer.Option(help="http: Streamable HTTP at /mcp. stdio: for clients that launch the server.")
    ] = Transport.http,
    token: Annotated[
        str | None,
        typer.Option(
            envvar=TOKEN_ENV,
            show_envvar=True,
            help="Bearer token clients must send (HTTP). Prefer the environment variable: a command line "
            "is visible to other users. Without one, the token kept in --data-dir is used (generated and "
            "printed the first time), so client configurations survive a restart.",
            show_default=False,
        ),
    ] = None,
    name: Annotated[str, typer.Option(help="Server name announced to clients.")] = "mycelium",
    cwd: Annotated[
        Path | None,
        typer.Option(
            help="Change to this folder first (for clients that launch the server from elsewhere).",
            file_okay=False,
            exists=True,
        ),
    ] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error (logs go to stderr).")] = "info",
    log_format: Annotated[
        LogFormat, typer.Option(help="text: lines for people. json: one object a line, for a log shipper.")
    ] = LogFormat.text,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(
            envvar=OTLP_ENDPOINT_ENV,
            show_envvar=True,
            metavar="URL",
            help="Send OpenTelemetry spans by OTLP over HTTP to the collector at this base URL (spans go to "
            "/v1/traces under it), as service --name. Needs the otlp extra.",
            show_default=False,
        ),
    ] = None,
    evidence_dir: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            file_okay=False,
            help="Write the operator's evidence of each failure (a host error's exception and traceback, "
            "a failed run) to DIR/<reference>.json, readable by you alone; the newest 1,000 are kept.",
            show_default=False,
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="A host name or address clients may reach the server by, besides loopback (HTTP; repeatable). "
            "Its Host and Origin headers are then accepted.",
            show_default=False,
        ),
    ] = None,
    trusted_proxy: Annotated[
        list[str] | None,
        typer.Option(
            metavar="ADDRESS",
            help="The IP address or network of a proxy in front of the server whose X-Forwarded-For and "
            "X-Forwarded-Proto are believed (HTTP; repeatable): the client address the sign-in limit counts "
            "and the logs name, and whether the request came over HTTPS. From anyone else they are ignored.",
            show_default=False,
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            envvar=STORE_ENV,
            show_envvar=True,
            metavar="URL",
            help="Share connection records and paused runs with every replica using the same store: "
            "postgresql://... or sqlite:///path (or a plain path). Needs the key ring in MYCELIUM_SECRET_KEY "
            "or MYCELIUM_SECRET_KEY_FILE. Without it, they stay in this process.",
            show_default=False,
        ),
    ] = None,
    approver_token: Annotated[
        str | None,
        typer.Option(
            envvar=APPROVER_TOKEN_ENV,
            show_envvar=True,
            help="The login of the approvals page at /approvals (HTTP, when the app pauses runs for approval), "
            "where a person approves or declines what waits. Never the agents' token. Without one, the one "
            "kept in --data-dir is used (generated and printed the first time), unless --approver-auth is given.",
            show_default=False,
        ),
    ] = None,
    approver_auth: Annotated[
        str | None,
        typer.Option(
            "--approver-auth",
            metavar="MODULE:ATTR",
            help="The app's own check of who may approve on /approvals: a function (sync or async) given the "
            "HTTP request (its headers and cookies) returning mycelium.mcp.Admitted(Member(...)) or Refused(). "
            "No approver token is kept or generated then; --approver-token still works beside it.",
            show_default=False,
        ),
    ] = None,
    data_dir: Annotated[
        Path,
        typer.Option(
            envvar=DATA_DIR_ENV,
            show_envvar=True,
            file_okay=False,
            help=f"Where the tokens serve generates are kept, owner-only, across restarts (HTTP): {TOKEN_FILE} "
            f"and {APPROVER_TOKEN_FILE}. Relative to --cwd. Nothing is written for a token you choose.",
        ),
    ] = DEFAULT_DATA_DIR,
    drain_seconds: Annotated[
        int,
        typer.Option(
            min=0,
            max=86_400,
            help="On SIGTERM or Ctrl-C, how long requests in flight get to finish while new ones get 503 "
            "(HTTP); those still running then are cancelled. A second signal stops at once.",
        ),
    ] = DEFAULT_DRAIN_SECONDS,
    header_timeout: Annotated[
        float,
        typer.Option(
            min=0.1,
            max=3600,
            metavar="SECONDS",
            help="How long a connection waiting for a request may take to send that request's whole head "
            "(HTTP); then it is closed, with a 408 if part of a request had come.",
        ),
    ] = HEADER_TIMEOUT_SECONDS,
    body_timeout: Annotated[
        float,
        typer.Option(
            min=0.1,
            max=3600,
            metavar="SECONDS",
            help="How long a request's body may take to arrive whole (HTTP, at /mcp and /approvals); then it "
            "gets 408 and its connection is closed.",
        ),
    ] = DEFAULT_BODY_TIMEOUT_MS / 1000,
    max_idle_per_address: Annotated[
        int,
        typer.Option(
            min=1,
            max=65_536,
            help="How many connections one client address (an IPv6 one by its /64) may keep waiting for a "
            "request (HTTP); when one more waits, the one that waited longest is closed. Behind a proxy, at "
            "least the proxy's pool of idle connections.",
        ),
    ] = MAX_IDLE_PER_ADDRESS,
    max_idle_connections: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1_000_000,
            show_default="half the open-file limit, 64 to 16,384",
            help="How many connections the whole server keeps waiting for a request, whatever their addresses "
            "(HTTP); when one more waits, the one that waited longest is closed.",
        ),
    ] = None,
    max_connections: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1_000_000,
            show_default="three quarters of the open-file limit, 128 to 49,152",
            help="How many connections the server holds at once, busy or idle (HTTP); one more is reset as it "
            "is accepted. Keep it under the open-file limit.",
        ),
    ] = None,
    send_timeout: Annotated[
        float,
        typer.Option(
            min=0.1,
            max=3600,
            metavar="SECONDS",
            help="How long a client may leave the server's answers unread, its connection's buffers full, before "
            "the connection is dropped (HTTP).",
        ),
    ] = SEND_TIMEOUT_SECONDS,
) -> None:
    """Serve APP's catalog, or every server in an mcpServers config, over MCP: Streamable HTTP at /mcp or stdio.

    With --config FILE, one execute tool serves all the MCP servers the config names (the
    format Claude Desktop, Claude Code and Cursor use); the person running this command owns
    them all. The config's secrets (env, headers) are never printed.
    """
    target, _ = choose_target(app, config, connect_timeout=connect_timeout)
    err = Console(stderr=True, soft_wrap=True)
    # In stdio mode stdout carries the protocol, so everything for people goes to stderr.
    out = err if transport is Transport.stdio else Console(soft_wrap=True)
    if log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise typer.BadParameter(f"{log_level!r} is not one of debug, info, warning, error", param_hint="--log-level")
    otlp_endpoint = otlp_endpoint or None  # an empty variable is an unset one
    if otlp_endpoint is not None:
        try:
            traces_url(otlp_endpoint)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint=f"--otlp-endpoint / {OTLP_ENDPOINT_ENV}") from None
    if cwd is not None:
        os.chdir(cwd)
    data_dir = data_dir.absolute()  # the banner says where the tokens are kept, wherever it is read from
    for allowed in allow_host or ():
        if not allowed or any(char.isspace() or char in "/@" for char in allowed):
            raise typer.BadParameter(f"{allowed!r} is not a host name or address", param_hint="--allow-host")
    proxies = tuple(_proxy(each) for each in trusted_proxy or ())
    if token is not None and not token.strip():
        raise typer.BadParameter("the token may not be empty", param_hint=f"--token / {TOKEN_ENV}")
    if approver_token is not None and not approver_token.strip():
        raise typer.BadParameter("the approver token may not be empty", param_hint="--approver-token")
    if approver_token is not None and token is not None and approver_token.strip() == token.strip():
        raise typer.BadParameter(
            "the approver token must differ from the agents' token: an agent must never approve its own calls",
            param_hint=f"--approver-token / {APPROVER_TOKEN_ENV}",
        )
    try:
        evidence = EvidenceFiles(evidence_dir) if evidence_dir is not None else None
    except OSError as exc:
        raise typer.BadParameter(f"cannot write evidence there: {exc.strerror}", param_hint="--evidence-dir") from None
    chosen_approver = _chosen(ctx, "approver_token", approver_token)
    try:
        shared = SharedStore.configure(store) if store is not None else None
        http = None
        if transport is Transport.http:  # over stdio no token is asked for: nothing is read or kept
            http = HttpOptions(
                host,
                port,
                _chosen(ctx, "token", token) or kept_token(data_dir / TOKEN_FILE),
                tuple(allow_host or ()),
                (lambda: chosen_approver or kept_token(data_dir / APPROVER_TOKEN_FILE))
                if chosen_approver is not None or approver_auth is None
                else None,
                drain_seconds,
                trusted_proxies=proxies,
                limits=ClientLimits(
                    header_timeout,
                    body_timeout,
                    max_idle_per_address,
                    send_timeout,
                    max_idle_connections or default_max_idle_connections(),
                    max_connections or default_max_connections(),
                ),
            )
        spans = exporting_spans(otlp_endpoint, name) if otlp_endpoint else contextlib.nullcontext()
        with logging_to(err, log_level, log_format), spans:
            anyio.run(
                lambda: _serve_target(
                    target,
                    approver_auth=approver_auth,
                    transport=transport,
                    name=name,
                    http=http,
                    out=out,
                    shared=shared,
                    evidence=evidence,
                ),
                # uvicorn and the default sandbox (Monty's pool) run on asyncio only.
                backend="asyncio",
            )
    except (AppError, StoreError, OtlpUnavailable, TokenFileError) as exc:
        err.print(f"[bold red]Error:[/] {escape(str(exc))}")
        raise typer.Exit(ExitCode.BAD_USAGE) from None
    except (ServeError, StoreUnreachable) as exc:
        err.print(f"[bold red]Error:[/] {escape(str(exc))}")
        raise typer.Exit(ExitCode.FAILED) from None
    finally:
        if evidence is not None:
            evidence.close()


async def _serve_target(
    target: Target,
    *,
    approver_auth: str | None = None,
    transport: Transport,
    name: str,
    http: HttpOptions | None,
    out: Console,
    shared: SharedStore | None,
    evidence: EvidenceFiles | None = None,
) -> None:
    # Whatever the app prints while loading must not reach stdout in stdio mode: it carries the protocol.
    redirect = contextlib.redirect_stdout(sys.stderr) if transport is Transport.stdio else contextlib.nullcontext()
    with redirect:
        catalog, label = await waking_at_signals(target.load)
    if evidence is not None:
        _observe(catalog, evidence)
    if approver_auth is not None and http is not None:
        try:
            check = load_approver_authenticate(approver_auth)
        except AppError:
            await _close_unentered(catalog)
            raise
        http = dataclasses.replace(http, approver_authenticate=check, approver_authenticate_name=approver_auth)
    replica = None
    if shared is not None:
        try:
            probe = await shared.share(catalog)
        except BaseException:
            await _close_unentered(catalog)
            raise
        replica = Replica(shared.ring, probe, shared.url.shown)
        logger.info("sharing connections and paused runs in %s", shared.url.shown)
    async with catalog:
        if http is None:
            logger.info("serving %s", label)
            await serve_stdio(catalog, name=name)
        else:
            await serve_http(catalog, target=target, label=label, name=name, http=http, out=out, replica=replica)
    logger.info("stopped")


def _proxy(value: str) -> str:
    """``value`` as uvicorn's list of trusted proxies takes it: an address or a network, checked here."""
    try:
        return str(ipaddress.ip_network(value.strip(), strict=False))
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not an IP address or network (such as 127.0.0.1 or 10.0.0.0/8)", param_hint="--trusted-proxy"
        ) from None


def _chosen(ctx: typer.Context, parameter: str, value: str | None) -> Secret | None:
    """The secret the operator gave as ``parameter``, saying whether through the environment; ``None`` if not."""
    if value is None:
        return None
    source = ctx.get_parameter_source(parameter)
    # typer bundles its own click, so the source is compared by name.
    return Secret(value.strip(), "env" if source is not None and source.name == "ENVIRONMENT" else "option")


def _observe(catalog: McpCatalogProvider, evidence: EvidenceFiles) -> None:
    """Hand every failure's evidence to ``evidence``; a catalog that cannot take observers is not served."""
    if not isinstance(catalog, McpCatalog):
        raise AppError(
            f"--evidence-dir needs an McpCatalog, and the app's catalog is a {type(catalog).__name__}: "
            "give its runtimes on_operation_error and on_sandbox_failure yourself"
        )
    catalog.observe(on_operation_error=evidence.operation_failed, on_sandbox_failure=evidence.execute_failed)


async def _close_unentered(catalog: McpCatalogProvider) -> None:
    """Close a catalog that will not be served: its sandbox and stores, which it may have opened when built."""
    if isinstance(catalog, McpCatalog):
        with anyio.CancelScope(shield=True):
            await catalog.aclose()
