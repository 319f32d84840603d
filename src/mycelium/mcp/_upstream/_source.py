"""``McpSource``: acquiring an upstream server's tools, projected as the operations of one module.

An acquisition connects (or reuses the session still open), pages through ``tools/list``
within its bounds and turns each tool a host can check into an operation whose call goes
out on that session; the snapshot holds the session until it is released.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
import mcp.types
from mcp import Client
from mcp.client.session import MessageHandlerFnT
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ..._context import InvocationContext
from ..._exceptions import MAX_ERROR_MESSAGE_CHARS, DefinitionError, MyceliumSourceError, ToolError
from ..._language import LanguageFacts
from ..._modules import Module
from ..._operations import Operation, operation
from ..._signals import AbortSignal
from ..._sources import AcquireContext, Acquired
from ..._text import clip
from .._sdk import http_client
from ._bodies import bound_bodies
from ._errors import UpstreamError, _reason, _summary
from ._names import tool_paths
from ._oversize import _OVERSIZED_ADVICE, MAX_MESSAGE_BYTES, _oversized
from ._results import _result_value
from ._schemas import _host_checked
from ._secrets import _Secrets, _url_secrets, _without_userinfo
from ._session import _UpstreamSession
from ._stdio import stdio_transport

logger = logging.getLogger("mycelium")

MAX_TOOLS = 2_000
"""The most tools one server may list; a server listing more fails to acquire."""
MAX_LIST_PAGES = 200
"""The most ``tools/list`` pages read; a listing that goes on fails to acquire."""
MAX_DESCRIPTION_CHARS = 1_000
"""An operation's description (the tool's, plus its original name when renamed) is cut to this."""
MAX_SCHEMA_CHARS = 65_536
"""The most JSON characters of one tool's input and output schemas together; a larger tool is left out."""
MAX_LISTING_SCHEMA_CHARS = 4 * 1_048_576
"""The most JSON characters of every listed tool's schemas together; more fails the acquisition."""

_CLIENT_INFO = mcp.types.Implementation(name="mycelium", version="1")
_DOWNLOADING_LAUNCHERS = frozenset({"npx", "uvx", "bunx", "pnpx", "pipx", "deno", "docker"})
"""Commands that fetch a server before running it, so a first start can outlast any usual bound."""


def _launcher(command: str) -> str:
    """The program's bare name, for a command given by path or with a Windows suffix."""
    name = command.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name.removesuffix(".cmd").removesuffix(".exe")


class McpSource:
    """The source :func:`mcp_source` builds. Its ``repr`` shows the id and transport, never a secret."""

    def __init__(
        self,
        id: str,
        *,
        url: str | None,
        headers: dict[str, str],
        command: str | None,
        args: tuple[str, ...],
        env: dict[str, str] | None,
        cwd: str | None,
        name: str,
        namespace: tuple[str, ...],
        confirm: Callable[[mcp.types.Tool], bool] | None,
        optional: bool,
        connect_timeout_s: float,
        call_timeout_s: float | None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self._id = id
        # Credentials in the URL travel as basic auth instead, so the URL the SDK logs holds none.
        self._url, self._auth = _without_userinfo(url)
        self._headers = headers
        self._command = command
        self._args = args
        self._env = env
        self._cwd = cwd
        self._name = name
        self._namespace = namespace
        self._confirm = confirm
        self._optional = optional
        self._connect_timeout_s = connect_timeout_s
        self._call_timeout_s = call_timeout_s
        self._secrets = _Secrets([*headers.values(), *(env or {}).values(), *_url_secrets(url), *secrets])
        self._origin = f"server {id!r}"
        self._lock = anyio.Lock()  # one acquisition at a time decides which session snapshots share
        self._live: _UpstreamSession | None = None

    @property
    def id(self) -> str:
        """The source id, which is also the id of the module it acquires."""
        return self._id

    @property
    def name(self) -> str:
        """The module's guest name."""
        return self._name

    def __repr__(self) -> str:
        transport = "http" if self._url is not None else "stdio"
        return f"mcp_source(id={self._id!r}, transport={transport!r})"

    async def acquire(self, context: AcquireContext) -> Acquired:
        """Project the server's current tools; the snapshot holds the session they were listed on.

        Snapshots share one session while it lives: after a list change the next snapshot lists
        again on it (a stdio server keeps its process and its state), and the session closes
        with the last snapshot holding it. A session that ended is replaced by a new one.
        """
        async with self._lock:
            session = self._live
            if session is None or not session.usable:
                session = self._live = _UpstreamSession(self._open, context.tasks)
            hold = session.hold(context.invalidate)
            try:
                tools, server = await self._list(session, context.signal)
                # Checking every schema is CPU work that grows with the listing: off the event loop.
                project = functools.partial(self._project, tools, server, session, context.language)
                module, version = await anyio.to_thread.run_sync(project)
            except BaseException as exc:
                session.lose()  # the next acquisition starts afresh
                await self._let_go(session, hold)
                if not isinstance(exc, Exception):
                    raise
                error = exc if isinstance(exc, MyceliumSourceError) else self._failure(f"it raised {_summary(exc)}")
                if not self._optional:
                    if error is exc:
                        raise
                    raise error from exc
                logger.warning("optional MCP server %r is skipped for this revision: %s", self._id, _reason(error))
                context.invalidate()  # try again at the next lease
                return Acquired(version="unavailable", modules=(), release=_nothing)
        return Acquired(version=version, modules=[module], release=functools.partial(self._let_go, session, hold))

    async def _let_go(self, session: _UpstreamSession, hold: int) -> None:
        if session.drop(hold) == 0:
            if self._live is session:
                self._live = None
            await session.close()

    async def _list(
        self, session: _UpstreamSession, signal: AbortSignal
    ) -> tuple[list[mcp.types.Tool], mcp.types.Implementation | None]:
        """Connect (unless the session is up), then list the tools: bounded by connect_timeout_ms and ``signal``."""
        phase = "listing tools" if session.ready else "connecting and initializing"
        scope = anyio.CancelScope(deadline=anyio.current_time() + self._connect_timeout_s)
        stop_listening = signal.add_listener(lambda _reason: scope.cancel())
        try:
            with scope:
                client = await session.client()
                phase = "listing tools"
                tools = await self._list_tools(client)
                return tools, client.server_info
        finally:
            stop_listening()
        # Only a cancelled scope gets here: the signal, or the deadline.
        if signal.aborted:
            raise self._failure(f"the acquisition was cancelled while {phase}")
        timeout_ms = round(self._connect_timeout_s * 1000)
        raise self._failure(f"no answer within connect_timeout_ms={timeout_ms} while {phase}; {self._advice()}")

    def _advice(self) -> str:
        """What to do about a server that did not answer in time: a launcher may still be downloading it."""
        raise_bound = (
            "raise the bound (connect_timeout_ms; in an mcpServers config, the entry's connectTimeoutMs "
            "or mycelium's --connect-timeout SECONDS)"
        )
        if self._command is not None and _launcher(self._command) in _DOWNLOADING_LAUNCHERS:
            return (
                f"{_launcher(self._command)} may still be downloading the server on its first start: retry in a "
                f"minute, install the package beforehand, or {raise_bound}"
            )
        return f"check that the server starts and answers, then retry, or {raise_bound}"

    async def _list_tools(self, client: Client) -> list[mcp.types.Tool]:
        tools: list[mcp.types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            if len(tools) > MAX_TOOLS:
                raise self._failure(f"it lists more than {MAX_TOOLS} tools (the limit)")
            cursor = page.next_cursor
            if cursor is None:
                return tools
        raise self._failure(f"its tools/list did not end within {MAX_LIST_PAGES} pages")

    def _project(
        self,
        tools: list[mcp.types.Tool],
        server: mcp.types.Implementation | None,
        session: _UpstreamSession,
        language: LanguageFacts,
    ) -> tuple[Module, str]:
        counts = collections.Counter(tool.name for tool in tools)
        twice = sorted(name for name, count in counts.items() if count > 1)
        if twice:
            raise self._failure(f"it lists the tool {self._shown(twice[0])} more than once")
        try:
            paths = tool_paths(counts, language)
        except ValueError as exc:
            raise self._failure(self._secrets.text(str(exc))) from None
        sizes = {tool.name: len(json.dumps([tool.input_schema, tool.output_schema], default=str)) for tool in tools}
        if sum(sizes.values()) > MAX_LISTING_SCHEMA_CHARS:
            raise self._failure(f"its tools' schemas pass {MAX_LISTING_SCHEMA_CHARS} JSON characters (the limit)")
        operations: dict[str, Operation] = {}
        fingerprint: list[object] = []
        for tool in sorted(tools, key=lambda tool: tool.name):
            path = ".".join(paths[tool.name])
            try:
                if self._secrets.text(tool.name) != tool.name:
                    raise DefinitionError("its name holds a secret value of this server's configuration")
                if sizes[tool.name] > MAX_SCHEMA_CHARS:
                    raise DefinitionError(f"its schemas pass {MAX_SCHEMA_CHARS} JSON characters")
                projected = self._operation(tool, path, session)
            except DefinitionError as exc:
                # One tool the host cannot check does not take the server's other tools with it.
                logger.warning(
                    "MCP server %r: tool %s is left out: %s",
                    self._id,
                    self._shown(tool.name),
                    self._secrets.clipped(str(exc), 300),
                )
                continue
            operations[path] = projected
            fingerprint.append(
                {
                    "name": tool.name,
                    "path": path,
                    "description": projected.description,
                    "input": tool.input_schema,
                    "output": tool.output_schema,
                    "labels": [projected.access, projected.confirm],
                }
            )
        described = self._server_description(server)
        module = Module(
            id=self._id, name=self._name, namespace=self._namespace, operations=operations, description=described
        )
        digest = hashlib.sha256(json.dumps([described, fingerprint], sort_keys=True, default=str).encode()).hexdigest()
        return module, f"tools-{digest[:16]}"

    def _operation(self, tool: mcp.types.Tool, path: str, session: _UpstreamSession) -> Operation:
        described = tool.description or tool.title or (tool.annotations and tool.annotations.title) or ""
        text = self._secrets.clipped(described, MAX_DESCRIPTION_CHARS)
        if path != tool.name:
            named = f"(MCP tool {self._shown(tool.name)})"
            text = f"{clip(text, MAX_DESCRIPTION_CHARS - len(named) - 2)}\n\n{named}" if text else named
        read_only = tool.annotations is not None and tool.annotations.read_only_hint is True
        name = tool.name
        secrets = self._secrets
        origin = self._origin
        timeout_s = self._call_timeout_s

        async def call(arguments: dict[str, Any], context: InvocationContext) -> object:
            try:
                result = await session.call(name, arguments, context.signal, timeout_s)
            except MCPError as exc:
                if _oversized(exc):
                    raise ToolError(_OVERSIZED_ADVICE) from None
                # The server's words may echo what it was given: only the redacted text goes on (to the logs).
                said = f"the server answered with error {exc.code}: {exc}"
                raise UpstreamError(secrets.clipped(said, MAX_ERROR_MESSAGE_CHARS)) from None
            return await _result_value(result, secrets, origin)

        return operation(
            input=_host_checked(secrets.value(tool.input_schema)),
            output=_host_checked(secrets.value(tool.output_schema)) if tool.output_schema is not None else None,
            execute=call,
            access="read" if read_only else "write",
            confirm=bool(self._confirm(tool)) if self._confirm is not None else False,
            description=clip(text, MAX_DESCRIPTION_CHARS) or None,
        )

    def _server_description(self, server: mcp.types.Implementation | None) -> str:
        said = f"Tools of the MCP server {self._id!r}"
        if server is not None:
            title = self._secrets.clipped(server.title or server.name, 120)
            said += f" ({title})"
        return said

    @asynccontextmanager
    async def _open(self, on_message: MessageHandlerFnT) -> AsyncIterator[Client]:
        """Open the SDK client: the transport, then the handshake. Runs in the session's own task."""
        async with AsyncExitStack() as stack:
            server: Any
            if self._url is not None:
                http = await stack.enter_async_context(bound_bodies(http_client(self._headers, self._auth)))
                server = streamable_http_client(self._url, http_client=http, max_sse_event_size=MAX_MESSAGE_BYTES)
            elif sys.platform == "win32":
                # The SDK's own client there, which finds a launcher's .cmd; its lines are not bounded.
                server = StdioServerParameters(
                    command=self._command or "", args=list(self._args), env=self._env, cwd=self._cwd
                )
            else:
                assert self._command is not None
                server = stdio_transport(self._command, self._args, self._env, self._cwd, label=self._id)
            client = Client(server, mode="legacy", cache=None, message_handler=on_message, client_info=_CLIENT_INFO)
            yield await stack.enter_async_context(client)

    def _failure(self, message: str) -> MyceliumSourceError:
        return MyceliumSourceError(self._id, "acquire", self._secrets.text(message))

    def _shown(self, tool_name: str) -> str:
        return repr(self._secrets.clipped(tool_name, 80))


async def _nothing() -> None:
    return None
