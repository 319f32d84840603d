"""The ``mycelium`` command: ``mycelium serve APP`` serves an app's catalog over MCP.

``APP`` names an :class:`~mycelium.mcp.McpCatalog`, or a zero-argument factory (sync or
async) returning one, as ``package.module:attribute`` or ``path/to/app.py:attribute``;
the attribute defaults to ``create_catalog``. Instead of ``APP``, every verb takes
``--config FILE``: the ``mcpServers`` JSON config desktop agents use (see
:mod:`mycelium.mcp.config`); its servers become one catalog, owned by the person running
the command. Over Streamable HTTP (the default) the
catalog is served at ``/mcp`` with uvicorn, behind a bearer token; over stdio it is
served to the one client that launched the process.

The local verbs run against the same catalog, as its local owner, without serving it:
``mycelium exec APP`` runs one program, ``mycelium describe APP [PATH]`` prints the
execute tool's description or an operation's stub, ``mycelium search APP QUERY`` prints
what discovery ranks first.
"""

from __future__ import annotations

import contextlib
import enum
import gc
import os
import secrets
import signal
import socket
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer
import uvicorn
from rich.console import Console
from rich.markup import escape
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..mcp import (
    LOOPBACK_HOSTS,
    LOOPBACK_ORIGINS,
    McpCatalogProvider,
    McpServer,
    Refused,
    bearer_tokens,
    create_mcp,
)
from ._apps import (
    DEFAULT_ATTRIBUTE,
    EXIT_BAD_APP,
    EXIT_FAILED,
    AppError,
    AppSpec,
    aclose_catalog,
    load_catalog,
    parse_app,
    resolve_catalog,
)
from ._console import logger, logging_to
from ._local import check, describe, exec_, search
from ._owner import LOCAL_PRINCIPAL
from ._target import CONFIG_OPTION, Target, choose_target

__all__ = [
    "DEFAULT_ATTRIBUTE",
    "AppError",
    "AppSpec",
    "ServeError",
    "Target",
    "cli",
    "load_catalog",
    "main",
    "parse_app",
    "resolve_catalog",
]

TOKEN_ENV = "MYCELIUM_TOKEN"
MCP_PATH = "/mcp"
GRACEFUL_SHUTDOWN_SECONDS = 10
"""How long a stop waits for requests still running before cancelling them."""


cli = typer.Typer(
    name="mycelium",
    help="Mycelium: typed host operations for AI agents, through one sandboxed execute tool.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class ServeError(Exception):
    """Serving failed (the port is taken, the server did not start); the message says why."""


class Transport(enum.StrEnum):
    """How ``mycelium serve`` talks to clients."""

    http = "http"
    stdio = "stdio"


# ---------------------------------------------------------------------------------------------
# Printing


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{MCP_PATH}"


def _launcher() -> list[str]:
    """How another program starts this command: the installed script, else ``python -m mycelium.cli``."""
    script = Path(sys.executable).parent / "mycelium"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "mycelium.cli"]


def _print_banner(
    out: Console, *, target: Target, label: str, name: str, url: str, token: str, token_source: str, cwd: str
) -> None:
    if token_source == "generated":
        shown, note = token, f"generated for this run; set {TOKEN_ENV} to choose one"
        header = f"Bearer {token}"
        shell_header = header
    else:
        # The operator chose this secret; keep it out of terminals and logs.
        placeholder = f"${TOKEN_ENV}" if token_source == "env" else "<token>"
        shown, note = "(not shown)", f"from {TOKEN_ENV}" if token_source == "env" else "from --token"
        header = f"Bearer <{TOKEN_ENV if token_source == 'env' else 'token'}>"
        shell_header = f"Bearer {placeholder}"
    out.print(f"[bold]Mycelium[/] is serving [bold]{escape(label)}[/] over MCP (Streamable HTTP)")
    out.print(f"  URL    {escape(url)}")
    out.print(f"  Token  {escape(shown)}  [dim]({escape(note)})[/]")
    out.print()
    out.print("[bold]MCP Inspector[/] (command line):")
    inspector = (
        f"npx -y @modelcontextprotocol/inspector --cli {url} "
        f'--header "Authorization: {shell_header}" --method tools/list'
    )
    out.print(f"  {escape(inspector)}", highlight=False)
    out.print()
    out.print("[bold]Agents that connect over HTTP[/] (e.g. Claude Code's .mcp.json, Cursor's mcp.json):")
    http_config = {"mcpServers": {name: {"type": "http", "url": url, "headers": {"Authorization": header}}}}
    out.print_json(data=http_config)
    out.print()
    out.print(
        "[bold]Desktop agents that launch servers[/] (e.g. Claude Desktop's claude_desktop_config.json), over stdio:"
    )
    launch = _launcher()
    stdio_config = {
        "mcpServers": {
            name: {
                "command": launch[0],
                "args": [*launch[1:], "serve", *target.launch_args(), "--transport", "stdio", "--cwd", cwd],
            }
        }
    }
    out.print_json(data=stdio_config)
    out.print()
    out.print("Press Ctrl-C to stop.")


# ---------------------------------------------------------------------------------------------
# Serving


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
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc}") from exc
    return sock


async def _stop_on_signal(stop: anyio.Event, second: Any) -> None:
    """Set ``stop`` at the first SIGINT/SIGTERM; call ``second()`` at the next one."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if not stop.is_set():
                logger.info("%s: stopping (again to stop at once)", signal.Signals(signum).name)
                stop.set()
            else:
                second()


@dataclass(frozen=True)
class _Http:
    """Where and how `serve` listens over HTTP."""

    host: str
    port: int
    token: str
    token_source: str
    """"generated", "env" or "option": whether the banner may show the token."""
    allow_hosts: Sequence[str]


async def _serve_http(
    catalog: McpCatalogProvider, *, target: Target, label: str, name: str, http: _Http, out: Console
) -> None:
    host, token, allow_hosts = http.host, http.token, http.allow_hosts
    server = create_mcp(
        catalog=catalog,
        authenticate=bearer_tokens({token: LOCAL_PRINCIPAL}),
        name=name,
        allowed_hosts=[*LOOPBACK_HOSTS, *(f"{allowed}:*" for allowed in allow_hosts)],
        allowed_origins=[
            *LOOPBACK_ORIGINS,
            *(f"{scheme}://{allowed}:*" for allowed in allow_hosts for scheme in ("http", "https")),
        ],
    )
    sock = _bind(host, http.port)
    bound_port = sock.getsockname()[1]
    # A wildcard address listens on loopback too; that is the address a local client can use.
    url = _url({"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host), bound_port)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with server.running():
            # What is loaded by now lives as long as the server: keep it out of every later
            # full collection, which otherwise walks the SDK's objects and stalls the loop.
            gc.freeze()
            # Printed only now: the socket already listens, and the MCP server is ready.
            _print_banner(
                out,
                target=target,
                label=label,
                name=name,
                url=url,
                token=token,
                token_source=http.token_source,
                cwd=os.getcwd(),
            )
            yield

    web_app = Starlette(routes=[Route(MCP_PATH, _AsgiEndpoint(server))], lifespan=lifespan)
    web = _Uvicorn(
        uvicorn.Config(
            web_app,
            lifespan="on",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        )
    )
    stop = anyio.Event()

    def force() -> None:
        web.force_exit = True

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_signal, stop, force)

            async def stop_when_asked() -> None:
                await stop.wait()
                # Close the MCP streams first: an open event stream would hold uvicorn's
                # shutdown until its grace period ends.
                await server.close()
                web.should_exit = True

            tg.start_soon(stop_when_asked)
            # uvicorn exits the process (SystemExit) when the app's startup fails.
            with contextlib.suppress(SystemExit):
                await web.serve(sockets=[sock])
            tg.cancel_scope.cancel()
    finally:
        sock.close()
        await server.close()
    if not web.started:
        # Raised here, outside the task group, so it is not wrapped in an exception group.
        raise ServeError("the server failed to start (see the log above)")


async def _serve_stdio(catalog: McpCatalogProvider, *, name: str) -> None:
    def refuse_http(_: object) -> Refused:
        return Refused(401)

    server: McpServer = create_mcp(catalog=catalog, authenticate=refuse_http, name=name)
    try:
        async with anyio.create_task_group() as tg:
            stop = anyio.Event()
            tg.start_soon(_stop_on_signal, stop, tg.cancel_scope.cancel)

            async def cancel_when_asked() -> None:
                await stop.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(cancel_when_asked)
            logger.info("serving over stdio as %s", LOCAL_PRINCIPAL)
            await server.serve_stdio(LOCAL_PRINCIPAL)
            tg.cancel_scope.cancel()
    finally:
        await server.close()


async def _serve(target: Target, *, transport: Transport, name: str, http: _Http, out: Console) -> None:
    # Whatever the app prints while loading must not reach stdout in stdio mode: it carries the protocol.
    redirect = contextlib.redirect_stdout(sys.stderr) if transport is Transport.stdio else contextlib.nullcontext()
    with redirect:
        catalog, label = await target.load()
    try:
        if transport is Transport.stdio:
            logger.info("serving %s", label)
            await _serve_stdio(catalog, name=name)
        else:
            await _serve_http(catalog, target=target, label=label, name=name, http=http, out=out)
    finally:
        with anyio.CancelScope(shield=True):
            await aclose_catalog(catalog)
    logger.info("stopped")


@cli.callback()
def _root() -> None:
    """Mycelium: typed host operations for AI agents, through one sandboxed execute tool."""


@cli.command()
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
            "is visible to other users. Without one, a token is generated and printed.",
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
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="A host name or address clients may reach the server by, besides loopback (HTTP; repeatable). "
            "Its Host and Origin headers are then accepted.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve APP's catalog, or every server in an mcpServers config, over MCP: Streamable HTTP at /mcp or stdio.

    With --config FILE, one execute tool serves all the MCP servers the config names (the
    format Claude Desktop, Claude Code and Cursor use); the person running this command owns
    them all. The config's secrets (env, headers) are never printed.
    """
    target, _ = choose_target(app, config)
    err = Console(stderr=True, soft_wrap=True)
    # In stdio mode stdout carries the protocol, so everything for people goes to stderr.
    out = err if transport is Transport.stdio else Console(soft_wrap=True)
    if log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise typer.BadParameter(f"{log_level!r} is not one of debug, info, warning, error", param_hint="--log-level")
    if cwd is not None:
        os.chdir(cwd)
    for allowed in allow_host or ():
        if not allowed or any(char.isspace() or char in "/@" for char in allowed):
            raise typer.BadParameter(f"{allowed!r} is not a host name or address", param_hint="--allow-host")
    if token is not None and not token.strip():
        raise typer.BadParameter("the token may not be empty", param_hint=f"--token / {TOKEN_ENV}")
    source = ctx.get_parameter_source("token")
    # typer bundles its own click, so the source is compared by name.
    from_env = source is not None and source.name == "ENVIRONMENT"
    token_source = "generated" if token is None else "env" if from_env else "option"
    if token is None:
        token = secrets.token_urlsafe(32)
    try:
        with logging_to(err, log_level):
            anyio.run(
                lambda: _serve(
                    target,
                    transport=transport,
                    name=name,
                    http=_Http(host, port, token, token_source, tuple(allow_host or ())),
                    out=out,
                ),
                backend="asyncio",
            )
    except AppError as exc:
        err.print(f"[bold red]Error:[/] {escape(str(exc))}")
        raise typer.Exit(EXIT_BAD_APP) from None
    except ServeError as exc:
        err.print(f"[bold red]Error:[/] {escape(str(exc))}")
        raise typer.Exit(EXIT_FAILED) from None
    except KeyboardInterrupt:
        # Ctrl-C before serving began (while the app was loading): nothing was served.
        err.print("Interrupted.")
        raise typer.Exit(130) from None


cli.command("exec")(exec_)
cli.command()(describe)
cli.command()(search)
cli.command()(check)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``mycelium`` command (``argv`` defaults to ``sys.argv[1:]``)."""
    cli(args=list(argv) if argv is not None else None, prog_name="mycelium")
