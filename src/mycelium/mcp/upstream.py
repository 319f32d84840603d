"""Upstream MCP servers as capability sources: every tool of a server, one typed operation each.

``mcp_source(id, url=...)`` (Streamable HTTP) or ``mcp_source(id, command=...)`` (stdio)
is a :class:`~mycelium.sources.CapabilitySource`. An acquisition opens a session with the
official SDK client (or reuses the one still open), initializes it (the 2025-11-25
handshake, which carries list changes and cancellation), pages through ``tools/list`` and
projects the tools as the operations of one module whose id is the source id:

- input schema: the tool's ``inputSchema``, checked on the host before a call leaves, but
  for its regular expressions (``pattern``, ``patternProperties``), which the server checks
  itself (a server's pattern run on the host could take time without bound); output schema:
  its ``outputSchema`` when it has one; description: its description, cut to
  :data:`MAX_DESCRIPTION_CHARS`. Schemas are checked off the event loop, and bounded
  (:data:`MAX_SCHEMA_CHARS` a tool: a larger one is left out, logged;
  :data:`MAX_LISTING_SCHEMA_CHARS` a listing). A ``$ref`` to a URL is never fetched.
- ``access="read"`` exactly when the tool is annotated ``readOnlyHint: true``, else
  ``"write"``; ``confirm=True`` where the host's ``confirm(tool)`` policy says so.
  Annotations are hints from a server the host may not trust: they only label operations,
  and grants stay the host's decision.
- Paths: see :func:`tool_paths`. A tool whose path is not exactly its name has its name
  written at the end of its description, so ``forage.describe`` shows it.

A server's ``notifications/tools/list_changed`` invalidates the snapshot: the next lease
lists again and sees a new revision, while a lease in flight keeps the tools it captured.
Snapshots share the session they were listed on; releasing the last of them closes it (and
ends the stdio child). A session that ends on its own invalidates its snapshots too, and the
next lease connects again.

Calls: ``tools/call`` with the decoded input. The result is ``structuredContent`` when the
server sends it; otherwise each content block becomes a value — text JSON-decoded when it
is JSON, else the text; an image or audio block ``{"type": "image" | "audio", "mimeType":
..., "bytes": <decoded size>}``; an embedded resource ``{"type": "resource", "uri": ...,
"mimeType": ..., "text": ...}`` (a blob gives ``"bytes"`` instead of ``"text"``); a resource
link ``{"type": "resource_link", "uri": ..., "name": ..., "mimeType": ...}``. No base64 data
reaches the guest. One block gives its value, several a list of them, none ``None``. A
result whose JSON passes :data:`MAX_RESULT_CHARS` is refused with a :class:`ToolError` the
program can read (ask for less); one past the HTTP transport's cap on an event (4 MiB) is a
host failure, and the session goes on. A stdio server's lines are not capped by the SDK.
``isError: true`` raises :class:`ToolError` with the server's text, marked as coming from
the server. Transport failures, timeouts and protocol errors are host failures: the program
sees a reference, the operator the evidence. Cancelling a call (the execute's deadline or
its caller) sends ``notifications/cancelled``.

Secrets: every header and ``env`` value (and a user, password or query value in the URL)
of at least :data:`MIN_SECRET_CHARS` characters, and each such word of it, is replaced by
``[redacted]`` in whatever this module builds from upstream text: descriptions, results,
error messages and log lines, schemas included; a tool whose very name holds one is left
out. Shorter values are not treated as secrets (``DEBUG=1``). Credentials in the URL are
sent as basic auth, so the URL holds none. Values in a stdio server's ``args`` are not
known to be secrets: pass tokens in ``env``. The SDK's own DEBUG logs record wire traffic
(what a server sends), and the HTTP client (``httpx2``) logs each request line, its URL
with the query, at INFO: a host that logs at INFO quiets ``httpx2`` (``mycelium serve``
does) or keeps tokens out of URLs.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import hashlib
import itertools
import json
import keyword
import logging
import unicodedata
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import mcp.types
from mcp import Client
from mcp.client.session import IncomingMessage, MessageHandlerFnT
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from ..context import InvocationContext
from ..errors import DefinitionError, ToolError
from ..modules import GUEST_BUILTINS, GUEST_MODULES, RESERVED_NAMES, Module, check_id
from ..operations import Operation, operation
from ..signals import AbortError, AbortSignal
from ..sources import AcquireContext, Acquired, CapabilitySource, MyceliumSourceError
from ..text import clip
from ._sdk import http_client

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_LIST_PAGES",
    "MAX_RESULT_CHARS",
    "MAX_TOOLS",
    "MIN_SECRET_CHARS",
    "McpSource",
    "mcp_source",
    "tool_paths",
]

logger = logging.getLogger("mycelium")

MAX_TOOLS = 2_000
"""The most tools one server may list; a server listing more fails to acquire."""
MAX_LIST_PAGES = 200
"""The most ``tools/list`` pages read; a listing that goes on fails to acquire."""
MAX_DESCRIPTION_CHARS = 1_000
"""An operation's description (the tool's, plus its original name when renamed) is cut to this."""
MAX_RESULT_CHARS = 500_000
"""The most JSON characters a call's result may have; a larger one is refused, typed."""
MAX_SCHEMA_CHARS = 65_536
"""The most JSON characters of one tool's input and output schemas together; a larger tool is left out."""
MAX_LISTING_SCHEMA_CHARS = 4 * 1_048_576
"""The most JSON characters of every listed tool's schemas together; more fails the acquisition."""
MIN_SECRET_CHARS = 8
"""Header and env values (and words of them) at least this long are redacted wherever they appear."""
MAX_SEGMENT_CHARS = 64
"""A path segment made from a tool name is cut to this (names cut alike then clash, and get suffixes)."""
MAX_SEGMENTS = 4
"""A tool name splits into at most this many path segments; the rest joins the last one."""

_MAX_SSE_EVENT_BYTES = 4 * 1_048_576  # above MAX_RESULT_CHARS, so an oversized result is refused typed
_CLOSE_GRACE_S = 5.0  # a closing session may say goodbye (DELETE, stdin EOF) this long before it is cut
_SUFFIX_LENGTHS = (0, 8, 16, 64)  # hash characters tried in turn to keep clashing paths apart
_REDACTED = "[redacted]"
_CLIENT_INFO = mcp.types.Implementation(name="mycelium", version="1")


def mcp_source(
    id: str,
    *,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    command: str | None = None,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    name: str | None = None,
    namespace: Sequence[str] = (),
    confirm: Callable[[mcp.types.Tool], bool] | None = None,
    optional: bool = False,
    connect_timeout_ms: int = 10_000,
    call_timeout_ms: int | None = None,
    secrets: Sequence[str] = (),
) -> CapabilitySource:
    """A capability source over one MCP server: its tools as the operations of one module.

    Give exactly one of ``url`` (Streamable HTTP, with ``headers``) or ``command`` (stdio,
    with ``args``, ``env`` added to a minimal inherited environment, and ``cwd``). The
    module's id is ``id``; its guest name is ``name`` (default: ``id`` made an identifier),
    placed under ``namespace``. ``confirm(tool)`` returning true asks a person before each
    call of that tool. ``connect_timeout_ms`` bounds connecting, initializing and listing;
    ``call_timeout_ms`` (default: none) bounds each call on top of the execute's deadline.

    A server that fails to acquire fails the lease with :class:`MyceliumSourceError` naming
    it; with ``optional=True`` it is logged (warning, no secrets) and contributes no tools
    to that revision, and the next lease tries again. ``secrets`` are more values to keep
    out of everything, as header and ``env`` values are (a token given in ``args``, say).
    """
    check_id("source", id)
    if (url is None) == (command is None):
        raise DefinitionError(f"mcp_source {id!r}: give exactly one of url= (HTTP) or command= (stdio)")
    if url is not None and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        raise DefinitionError(f"mcp_source {id!r}: url must be an http:// or https:// URL")
    if command is not None and (not isinstance(command, str) or not command):
        raise DefinitionError(f"mcp_source {id!r}: command must be a non-empty string")
    if url is not None and (args or env is not None or cwd is not None):
        raise DefinitionError(f"mcp_source {id!r}: args, env and cwd are for a stdio command, not a url")
    if command is not None and headers is not None:
        raise DefinitionError(f"mcp_source {id!r}: headers are for a url, not a stdio command")
    if isinstance(args, str) or not all(isinstance(arg, str) for arg in args):
        raise DefinitionError(f"mcp_source {id!r}: args must be a sequence of strings")
    for label, mapping in (("headers", headers), ("env", env)):
        if mapping is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
            # Never show the mapping: its values are secrets.
            raise DefinitionError(f"mcp_source {id!r}: {label} must map strings to strings")
    if isinstance(secrets, str) or not all(isinstance(value, str) for value in secrets):
        raise DefinitionError(f"mcp_source {id!r}: secrets must be a sequence of strings")
    if confirm is not None and not callable(confirm):
        raise DefinitionError(f"mcp_source {id!r}: confirm must be callable")
    if type(optional) is not bool:
        raise DefinitionError(f"mcp_source {id!r}: optional must be True or False")
    for label, value in (("connect_timeout_ms", connect_timeout_ms), ("call_timeout_ms", call_timeout_ms)):
        if value is not None and (type(value) is not int or value <= 0):
            raise DefinitionError(f"mcp_source {id!r}: {label} must be a positive number of milliseconds")
    if name is None:
        name = _guest_name(id, has_namespace=bool(namespace))
    Module(id=id, name=name, namespace=namespace)  # checks the name and namespace now, not at the first lease
    return McpSource(
        id,
        url=url,
        headers=dict(headers or {}),
        command=command,
        args=tuple(args),
        env=None if env is None else dict(env),
        cwd=cwd,
        name=name,
        namespace=tuple(namespace),
        confirm=confirm,
        optional=optional,
        connect_timeout_s=connect_timeout_ms / 1000,
        call_timeout_s=None if call_timeout_ms is None else call_timeout_ms / 1000,
        secrets=tuple(secrets),
    )


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
        self._live: _Connection | None = None

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
            connection = self._live
            if connection is None or not connection.usable:
                connection = self._live = _Connection(self._open)
            hold = connection.hold(context.invalidate)
            try:
                tools, server = await self._list(connection, context.signal)
                # Checking every schema is CPU work that grows with the listing: off the event loop.
                module, version = await anyio.to_thread.run_sync(self._project, tools, server, connection)
            except BaseException as exc:
                connection.lose()  # the next acquisition starts afresh
                await self._let_go(connection, hold)
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
        return Acquired(version=version, modules=[module], release=functools.partial(self._let_go, connection, hold))

    async def _let_go(self, connection: _Connection, hold: int) -> None:
        if connection.drop(hold) == 0:
            if self._live is connection:
                self._live = None
            await connection.close()

    async def _list(
        self, connection: _Connection, signal: AbortSignal
    ) -> tuple[list[mcp.types.Tool], mcp.types.Implementation | None]:
        """Connect (unless the session is up), then list the tools: bounded by connect_timeout_ms and ``signal``."""
        phase = "listing tools" if connection.ready else "connecting and initializing"
        scope = anyio.CancelScope(deadline=anyio.current_time() + self._connect_timeout_s)
        stop_listening = signal.add_listener(lambda _reason: scope.cancel())
        try:
            with scope:
                client = await connection.client()
                phase = "listing tools"
                tools = await self._list_tools(client)
                return tools, client.server_info
        finally:
            stop_listening()
        # Only a cancelled scope gets here: the signal, or the deadline.
        if signal.aborted:
            raise self._failure(f"the acquisition was cancelled while {phase}")
        timeout_ms = round(self._connect_timeout_s * 1000)
        raise self._failure(f"no answer within connect_timeout_ms={timeout_ms} while {phase}")

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
        self, tools: list[mcp.types.Tool], server: mcp.types.Implementation | None, connection: _Connection
    ) -> tuple[Module, str]:
        counts = collections.Counter(tool.name for tool in tools)
        twice = sorted(name for name, count in counts.items() if count > 1)
        if twice:
            raise self._failure(f"it lists the tool {self._shown(twice[0])} more than once")
        try:
            paths = tool_paths(counts)
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
                projected = self._operation(tool, path, connection)
            except DefinitionError as exc:
                # One tool the host cannot check does not take the server's other tools with it.
                logger.warning(
                    "MCP server %r: tool %s is left out: %s",
                    self._id,
                    self._shown(tool.name),
                    clip(self._secrets.text(str(exc)), 300),
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

    def _operation(self, tool: mcp.types.Tool, path: str, connection: _Connection) -> Operation:
        text = self._secrets.text(tool.description or tool.title or (tool.annotations and tool.annotations.title) or "")
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
                result = await connection.call(name, arguments, context.signal, timeout_s)
            except MCPError as exc:
                # The server's words may echo what it was given: only the redacted text goes on (to the logs).
                raise UpstreamError(secrets.text(f"the server answered with error {exc.code}: {exc}")) from None
            return _result_value(result, secrets, origin)

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
            title = clip(self._secrets.text(server.title or server.name), 120)
            said += f" ({title})"
        return said

    @asynccontextmanager
    async def _open(self, on_message: MessageHandlerFnT) -> AsyncIterator[Client]:
        """Open the SDK client: the transport, then the handshake. Runs in the connection's own task."""
        async with AsyncExitStack() as stack:
            server: Any
            if self._url is not None:
                http = await stack.enter_async_context(http_client(self._headers, self._auth))
                server = streamable_http_client(self._url, http_client=http, max_sse_event_size=_MAX_SSE_EVENT_BYTES)
            else:
                assert self._command is not None
                server = StdioServerParameters(
                    command=self._command, args=list(self._args), env=self._env, cwd=self._cwd
                )
            client = Client(server, mode="legacy", cache=None, message_handler=on_message, client_info=_CLIENT_INFO)
            yield await stack.enter_async_context(client)

    def _failure(self, message: str) -> MyceliumSourceError:
        return MyceliumSourceError(self._id, "acquire", self._secrets.text(message))

    def _shown(self, tool_name: str) -> str:
        return repr(clip(self._secrets.text(tool_name), 80))


class _Connection:
    """One upstream session, owned by a task of its own, held by the snapshots listed on it.

    The SDK client is an async context manager holding task groups, which must be entered
    and left in one task. Snapshots are acquired in one task and released in others, so the
    client lives in a dedicated task that enters it, waits to be told to close, and leaves
    it. :meth:`close` always waits for that task to end, so no task or child process
    outlives the last snapshot (or a failed or cancelled acquisition).
    """

    def __init__(self, open_client: Callable[[MessageHandlerFnT], Any]) -> None:
        self._open_client = open_client
        self._scope = anyio.CancelScope()
        self._ready = anyio.Event()
        self._closing = anyio.Event()
        self._done = anyio.Event()
        self._task: asyncio.Task[None] | None = None
        self._client: Client | None = None
        self._error: BaseException | None = None
        self._holds = itertools.count()
        self._holders: dict[int, Callable[[], None]] = {}  # each holding snapshot's invalidate()
        self._lost = False

    @property
    def ready(self) -> bool:
        """Whether the session is initialized and open."""
        return self._client is not None

    @property
    def usable(self) -> bool:
        """Whether a new snapshot may use this session: not lost, not closing."""
        return not self._lost and not self._closing.is_set() and (self._task is None or self._client is not None)

    def hold(self, invalidate: Callable[[], None]) -> int:
        """Count a snapshot in; a list change or a lost session calls its ``invalidate``."""
        key = next(self._holds)
        self._holders[key] = invalidate
        return key

    def drop(self, key: int) -> int:
        """Count a snapshot out; return how many still hold the session."""
        self._holders.pop(key, None)
        return len(self._holders)

    def lose(self) -> None:
        """Take the session out of use: every snapshot on it goes stale, and the next one connects again."""
        self._lost = True
        self._changed()

    def _changed(self) -> None:
        for invalidate in list(self._holders.values()):
            invalidate()

    async def client(self) -> Client:
        """The initialized client, starting the owning task the first time."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="mycelium upstream MCP session")
        await self._ready.wait()
        if self._client is None:
            raise self._error or ConnectionError("the session ended before it was initialized")
        return self._client

    async def _run(self) -> None:
        try:
            with self._scope:
                async with self._open_client(self._on_message) as client:
                    self._client = client
                    self._ready.set()
                    await self._closing.wait()
        except Exception as exc:
            self._error = exc
        finally:
            if self._client is not None and not self._closing.is_set():
                self.lose()  # the session ended on its own
            self._client = None
            self._ready.set()
            self._done.set()

    async def _on_message(self, message: IncomingMessage) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self._changed()

    async def call(
        self, name: str, arguments: dict[str, Any], signal: AbortSignal, timeout_s: float | None
    ) -> mcp.types.CallToolResult:
        """``tools/call``; a stop on ``signal`` cancels it, which the SDK forwards as ``notifications/cancelled``."""
        client = self._client
        if client is None:
            raise ConnectionError("the upstream MCP session is closed")
        scope = anyio.CancelScope()
        stop_listening = signal.add_listener(lambda _reason: scope.cancel())
        try:
            with scope:
                return await client.call_tool(name, arguments, read_timeout_seconds=timeout_s)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self.lose()
            raise
        finally:
            stop_listening()
        # Only the signal cancels the scope.
        raise AbortError(signal.reason)

    async def close(self) -> None:
        """Close the session (and end the stdio child); return once the owning task has ended."""
        self._closing.set()
        task = self._task
        if task is None:
            return
        with anyio.CancelScope(shield=True):
            if self._client is None:
                self._scope.cancel()  # still connecting: nothing to say goodbye to
            with anyio.move_on_after(_CLOSE_GRACE_S):
                await self._done.wait()
            self._scope.cancel()
            await self._done.wait()
            await asyncio.wait({task})


async def _nothing() -> None:
    return None


# --------------------------------------------------------------------------- names


def tool_paths(names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Map each tool name to its guest path, one to one, whatever order the names come in.

    A name splits at ``.`` and ``/`` into nested namespaces (empty parts dropped, at most
    :data:`MAX_SEGMENTS`); each part becomes an ASCII identifier (accents dropped, other
    characters ``_``, leading underscores dropped, ``tool`` for nothing, ``tool_`` before a
    digit, ``_`` after a keyword or after a namespace named like a sandbox module, cut to
    :data:`MAX_SEGMENT_CHARS`). Where two names would share a path, the one whose name *is*
    that path keeps it and the others end in ``_`` and a hash of their own name; a path that
    is also a namespace of another (``issues`` and ``issues.list``) gets the suffix too.
    Longer hashes settle what is left; if that cannot, :class:`ValueError` names the tool.
    A path therefore depends on the set of names only.
    """
    bases = {name: _base_path(name) for name in names}
    levels = dict.fromkeys(bases, 0)
    for _ in _SUFFIX_LENGTHS:
        paths = {name: _suffixed(bases[name], name, _SUFFIX_LENGTHS[levels[name]]) for name in bases}
        clashing = _clashing(paths)
        if not clashing:
            return paths
        for name in clashing:
            if levels[name] + 1 == len(_SUFFIX_LENGTHS):
                raise ValueError(f"the tool {clip(name, 80)!r} cannot be given a path of its own")
            levels[name] += 1
    raise AssertionError("unreachable: every round raises a level or returns")


def _base_path(name: str) -> tuple[str, ...]:
    parts = [part for part in name.replace("/", ".").split(".") if part]
    if len(parts) > MAX_SEGMENTS:
        parts = [*parts[: MAX_SEGMENTS - 1], "_".join(parts[MAX_SEGMENTS - 1 :])]
    segments = [_identifier(part) for part in parts] or ["tool"]
    # A namespace named like a sandbox module cannot be built (see modules.check_guest_names).
    return (*(s + "_" if s in GUEST_MODULES else s for s in segments[:-1]), segments[-1])


def _identifier(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text)
    kept = "".join(
        c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in folded if not unicodedata.combining(c)
    )
    kept = kept.lstrip("_") or "tool"
    if kept[0].isdigit():
        kept = "tool_" + kept
    if keyword.iskeyword(kept):
        kept += "_"
    return kept[:MAX_SEGMENT_CHARS]


def _suffixed(path: tuple[str, ...], name: str, length: int) -> tuple[str, ...]:
    if not length:
        return path
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:length]
    return (*path[:-1], f"{path[-1][: MAX_SEGMENT_CHARS - length - 1]}_{digest}")


def _clashing(paths: Mapping[str, tuple[str, ...]]) -> set[str]:
    """The names that must move: sharing a path with another (bar the one named exactly so), or a prefix of one."""
    by_path: dict[tuple[str, ...], list[str]] = {}
    for name, path in paths.items():
        by_path.setdefault(path, []).append(name)
    clashing: set[str] = set()
    for path, sharing in by_path.items():
        if len(sharing) > 1:
            exact = [name for name in sharing if name == ".".join(path)]
            clashing.update(name for name in sharing if name not in exact[:1] or len(exact) > 1)
    prefixes = {path[:end] for path in paths.values() for end in range(1, len(path))}
    clashing.update(name for name, path in paths.items() if path in prefixes)
    return clashing


def _guest_name(id: str, *, has_namespace: bool) -> str:
    name = _identifier(id)
    if name in RESERVED_NAMES or name in GUEST_MODULES or (not has_namespace and name in GUEST_BUILTINS):
        name += "_"
    return name


# --------------------------------------------------------------------------- results


def _result_value(result: mcp.types.CallToolResult, secrets: _Secrets, origin: str) -> object:
    if result.is_error:
        said = "\n".join(block.text for block in result.content if isinstance(block, mcp.types.TextContent))
        raise ToolError(secrets.text(said) or "the tool reported an error", origin=origin)
    if result.structured_content is not None:
        value: object = result.structured_content
    else:
        values = [_block_value(block) for block in result.content]
        value = values[0] if len(values) == 1 else (values or None)
    size = len(json.dumps(value, ensure_ascii=False))
    if size > MAX_RESULT_CHARS:
        raise ToolError(
            f"the result is {size} characters of JSON; the most an operation may return is {MAX_RESULT_CHARS}. "
            "Ask for less (a narrower query, a page, a limit)."
        )
    return secrets.value(value)


def _block_value(block: object) -> object:
    if isinstance(block, mcp.types.TextContent):
        return _maybe_json(block.text)
    if isinstance(block, mcp.types.ImageContent | mcp.types.AudioContent):
        return {"type": block.type, "mimeType": block.mime_type, "bytes": _decoded_size(block.data)}
    if isinstance(block, mcp.types.EmbeddedResource):
        resource = block.resource
        shown: dict[str, object] = {"type": "resource", "uri": resource.uri, "mimeType": resource.mime_type}
        if isinstance(resource, mcp.types.TextResourceContents):
            shown["text"] = resource.text
        else:
            shown["bytes"] = _decoded_size(resource.blob)
        return shown
    if isinstance(block, mcp.types.ResourceLink):
        return {"type": "resource_link", "uri": block.uri, "name": block.name, "mimeType": block.mime_type}
    return {"type": str(getattr(block, "type", "unknown"))}


def _maybe_json(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _decoded_size(data: str) -> int:
    """The size of base64 ``data`` once decoded, without decoding it."""
    stripped = data.rstrip("=")
    return len(stripped) * 3 // 4


# --------------------------------------------------------------------------- secrets and failures


class _Secrets:
    """Values that must not show: replaced wherever this module writes upstream or exception text."""

    def __init__(self, values: Iterable[str]) -> None:
        found = {part for value in values for part in (value, *value.split()) if len(part) >= MIN_SECRET_CHARS}
        self._values = sorted(found, key=len, reverse=True)  # longest first: a value before its words

    def text(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, _REDACTED)
        return text

    def value(self, value: object) -> object:
        if not self._values:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {self.text(str(key)): self.value(item) for key, item in value.items()}
        return value


class UpstreamError(Exception):
    """A protocol error from an upstream server, its text redacted: a host failure (the model sees a reference)."""


# Keywords whose value maps names (of properties, definitions) to schemas, not keywords to values.
_NAMING = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})


def _host_checked(schema: object, *, names: bool = False) -> Any:
    """``schema`` without its regular expressions (``pattern``, ``patternProperties``): the server checks those.

    A server's pattern checked on the host could take time without bound (``^(a|a)+$`` over a
    guest's string), on the event loop; every other keyword is checked before the call leaves.
    """
    if isinstance(schema, list):
        return [_host_checked(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if names:  # property or definition names, each naming a schema: a property may be called "pattern"
        return {key: _host_checked(value) for key, value in schema.items()}
    return {
        key: _host_checked(value, names=key in _NAMING)
        for key, value in schema.items()
        if key != "patternProperties" and not (key == "pattern" and isinstance(value, str))
    }


def _url_secrets(url: str | None) -> list[str]:
    if url is None:
        return []
    parts = urllib.parse.urlsplit(url)
    query = [value for _key, value in urllib.parse.parse_qsl(parts.query)]
    return [value for value in (parts.password, parts.username, *query) if value]


def _without_userinfo(url: str | None) -> tuple[str | None, httpx2.BasicAuth | None]:
    if url is None:
        return None, None
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.netloc.rpartition("@")[2]
    auth = httpx2.BasicAuth(urllib.parse.unquote(parts.username or ""), urllib.parse.unquote(parts.password or ""))
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), auth


def _summary(exc: BaseException) -> str:
    """What an exception says, leaf by leaf (exception groups flattened), bounded."""
    leaves: list[BaseException] = []
    pending = [exc]
    while pending and len(leaves) < 4:
        current = pending.pop(0)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        else:
            leaves.append(current)
    said = "; ".join(
        f"{type(leaf).__name__}: {clip(str(leaf), 200)}" if str(leaf) else type(leaf).__name__ for leaf in leaves
    )
    return said or type(exc).__name__


def _reason(error: MyceliumSourceError) -> str:
    return str(error).split(": ", 1)[-1]
