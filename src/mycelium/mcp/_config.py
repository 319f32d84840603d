"""The ``mcpServers`` config desktop agents use, as one catalog of upstream MCP servers.

A user points Mycelium at the config they already have (Claude Desktop's
``claude_desktop_config.json``, Claude Code's ``.mcp.json``, Cursor's ``mcp.json``) and
gets one ``execute`` tool over every server in it::

    {"mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
        "tracker": {"type": "http", "url": "https://tracker.example/mcp",
                    "headers": {"Authorization": "Bearer ${TRACKER_TOKEN}"},
                    "confirmDestructive": true}}}

Each entry becomes one :func:`~mycelium.mcp.mcp_source` whose id is the entry's
key (its guest name is derived from the key). Fields:

- stdio: ``command`` (required), ``args`` (strings), ``env`` (added to the child's
  environment), ``cwd`` (relative to the config file's folder).
- Streamable HTTP: ``url`` (http or https) and ``headers``.
- ``type``: optional; ``"stdio"``, ``"http"``, ``"streamable-http"`` or ``"streamableHttp"``,
  and it must agree with the fields given. The older HTTP+SSE transport (``"sse"``) is refused.
- ``${NAME}`` and ``${NAME:-default}`` in any string value are replaced from the environment,
  as Claude Code does, so secrets can stay out of the file.
- ``disabled: true`` (Cline, Windsurf) leaves the server out; ``description``, ``timeout``,
  ``autoApprove`` and ``alwaysAllow`` belong to other agents and are ignored (``timeout`` is
  their per-call bound, in seconds for some and milliseconds for others, so it cannot be read
  as ours). Any other field is refused, so a misspelt one never silently does nothing.
- Mycelium's own: ``confirmDestructive: true`` asks a person before every tool that may be
  destructive (MCP's default for a tool not marked ``readOnlyHint`` or ``destructiveHint: false``);
  ``optional: true`` lets the others serve when this server fails to start (logged);
  ``connectTimeoutMs`` bounds starting, initializing and listing this server (a server that
  ``npx`` downloads on its first start may need a minute), ``callTimeoutMs`` each call of its tools.

Who may do what: the config's owner, the person running ``mycelium serve --config``, gets
write grants on every server in it. A tool's ``readOnlyHint`` only labels its access; the
annotations are hints from servers the host may not trust, so grants stay the host's
decision (build your own catalog with :func:`config_sources` to grant less).

Secrets: ``env`` and ``headers`` values (and ``args``, ``url``, which often carry tokens too)
never appear in an error, a ``repr`` or a log: errors name the server key and the field.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import mcp_types

from .._discovery import SemanticRanker
from .._sources import CapabilitySource
from .._values import DuplicateKey, unique_keys
from ..sandbox import Sandbox
from ..sandbox.isolated import IsolatedSandbox
from ._catalog import McpCatalog, create_mcp_catalog
from ._principals import Principal
from ._provider import McpAuthority
from ._upstream import DEFAULT_CONNECT_TIMEOUT_MS, mcp_source

__all__ = [
    "McpConfigError",
    "UpstreamConfig",
    "config_sources",
    "create_config_catalog",
    "parse_config",
    "read_config",
]

_STDIO_TYPES = frozenset({"stdio"})
_HTTP_TYPES = frozenset({"http", "streamable-http", "streamableHttp"})
_STDIO_FIELDS = ("command", "args", "env", "cwd")
_HTTP_FIELDS = ("url", "headers")
_OUR_FIELDS = ("type", "confirmDestructive", "optional", "disabled", "connectTimeoutMs", "callTimeoutMs")
_OTHER_AGENTS_FIELDS = frozenset({"description", "timeout", "autoApprove", "alwaysAllow"})
_KNOWN_FIELDS = frozenset({*_STDIO_FIELDS, *_HTTP_FIELDS, *_OUR_FIELDS}) | _OTHER_AGENTS_FIELDS
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_SHOWN_KEY = 80
MAX_TIMEOUT_MS = 3_600_000
"""The longest ``connectTimeoutMs`` or ``callTimeoutMs`` an entry may set: an hour."""


class McpConfigError(ValueError):
    """The config cannot be served; the message names the server key and field, never a secret value."""


@dataclass(frozen=True, repr=False)
class UpstreamConfig:
    """One validated ``mcpServers`` entry: a stdio command or a Streamable HTTP URL."""

    key: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    confirm_destructive: bool = False
    optional: bool = False
    connect_timeout_ms: int | None = None
    """This server's own bound on connecting and listing; ``None`` takes the catalog's default."""
    call_timeout_ms: int | None = None
    secrets: tuple[str, ...] = ()
    """Every value taken from the environment through ``${NAME}``: kept out of everything, as env values are."""

    def __repr__(self) -> str:
        # args, env, url and headers may all hold secrets.
        transport = "stdio" if self.command is not None else "http"
        return f"UpstreamConfig(key={self.key!r}, transport={transport!r})"


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _shown(key: str) -> str:
    """A key from the file, quoted and bounded: it is printed, so it may not carry control characters."""
    return repr(key if len(key) <= _SHOWN_KEY else key[:_SHOWN_KEY] + "…")


class _Entry:
    """Reads one server's fields, naming the server and the field in every error."""

    def __init__(self, key: str, raw: Mapping[str, object], environ: Mapping[str, str]) -> None:
        self.key, self.raw, self.environ = key, raw, environ
        self.substituted: list[str] = []  # values from the environment: secrets wherever they land

    def error(self, where: str, problem: str) -> McpConfigError:
        return McpConfigError(f"server {_shown(self.key)}: {where} {problem}")

    def expand(self, where: str, text: str) -> str:
        def replace(found: re.Match[str]) -> str:
            name, default = found.group(1), found.group(2)
            value = self.environ.get(name)
            if value is None or (value == "" and default is not None):
                if default is None:
                    raise self.error(where, f"refers to ${{{name}}}, which is not set in the environment")
                return default
            self.substituted.append(value)
            return value

        return _VARIABLE.sub(replace, text)

    def string(self, where: str, value: object) -> str:
        if not isinstance(value, str):
            raise self.error(where, f"must be a string, not {_json_type(value)}")
        expanded = self.expand(where, value)
        if "\x00" in expanded:
            raise self.error(where, "must not contain a NUL character")
        return expanded

    def flag(self, name: str) -> bool:
        value = self.raw.get(name, False)
        if not isinstance(value, bool):
            raise self.error(name, f"must be true or false, not {_json_type(value)}")
        return value

    def milliseconds(self, name: str) -> int | None:
        value = self.raw.get(name)
        if value is None:
            return None
        if type(value) is not int or not 0 < value <= MAX_TIMEOUT_MS:
            raise self.error(name, f"must be a whole number of milliseconds from 1 to {MAX_TIMEOUT_MS}")
        return value

    def strings(self, name: str) -> tuple[str, ...]:
        value = self.raw.get(name, [])
        if not isinstance(value, list):
            raise self.error(name, f"must be an array of strings, not {_json_type(value)}")
        return tuple(self.string(f"{name}[{index}]", item) for index, item in enumerate(value))

    def table(self, name: str) -> dict[str, str]:
        value = self.raw.get(name, {})
        if not isinstance(value, dict):
            raise self.error(name, f"must be an object of strings, not {_json_type(value)}")
        return {item: self.string(f"{name}[{_shown(item)}]", text) for item, text in value.items()}


def _server(key: str, raw: object, *, base: Path, environ: Mapping[str, str]) -> UpstreamConfig | None:
    """One entry, validated; ``None`` when it is disabled."""
    if not key:
        raise McpConfigError("mcpServers has a server with an empty key; name each server")
    if not isinstance(raw, dict):
        raise McpConfigError(f"server {_shown(key)}: its entry must be an object, not {_json_type(raw)}")
    entry = _Entry(key, raw, environ)
    unknown = sorted(set(raw) - _KNOWN_FIELDS)
    if unknown:
        raise entry.error(
            f"field {_shown(unknown[0])}",
            "is not one Mycelium reads (stdio: command, args, env, cwd; HTTP: url, headers; "
            "also type, confirmDestructive, optional, disabled, connectTimeoutMs, callTimeoutMs)",
        )
    if entry.flag("disabled"):
        return None
    kind = raw.get("type")
    if kind is not None and not isinstance(kind, str):
        raise entry.error("type", f"must be a string, not {_json_type(kind)}")
    if kind == "sse":
        raise entry.error(
            "type",
            "'sse' (the older HTTP+SSE transport) is not supported: Mycelium connects over "
            'Streamable HTTP or stdio; give the server\'s Streamable HTTP endpoint with "type": "http"',
        )
    if kind is not None and kind not in _STDIO_TYPES | _HTTP_TYPES:
        raise entry.error("type", f"{_shown(kind)} is not one of stdio, http, streamable-http")
    if "command" in raw and "url" in raw:
        raise entry.error("its entry", "has both command (stdio) and url (HTTP); give one")
    if "command" not in raw and "url" not in raw:
        raise entry.error("its entry", "needs a command (a stdio server) or a url (a Streamable HTTP server)")
    stdio = "command" in raw
    if kind is not None and (kind in _STDIO_TYPES) != stdio:
        raise entry.error("type", f"{_shown(kind)} does not match its {'command' if stdio else 'url'}")
    misplaced = [name for name in (_HTTP_FIELDS if stdio else _STDIO_FIELDS) if name in raw]
    if misplaced:
        raise entry.error(misplaced[0], f"does not apply to a {'stdio' if stdio else 'Streamable HTTP'} server")
    confirm_destructive, optional = entry.flag("confirmDestructive"), entry.flag("optional")
    connect_timeout_ms, call_timeout_ms = entry.milliseconds("connectTimeoutMs"), entry.milliseconds("callTimeoutMs")
    if stdio:
        command = entry.string("command", raw["command"])
        if not command.strip():
            raise entry.error("command", "must not be empty")
        env = entry.table("env")
        for name in env:
            if not name or "=" in name:
                raise entry.error(f"env[{_shown(name)}]", "is not an environment variable name")
        cwd = None
        if "cwd" in raw:
            folder = base / entry.string("cwd", raw["cwd"])
            if not folder.is_dir():
                # The text as written: an expanded ${NAME} may be a secret.
                raise entry.error("cwd", f"names no folder ({raw['cwd']!r} in the file)")
            cwd = str(folder)
        return UpstreamConfig(
            key,
            command=command,
            args=entry.strings("args"),
            env=env,
            cwd=cwd,
            confirm_destructive=confirm_destructive,
            optional=optional,
            connect_timeout_ms=connect_timeout_ms,
            call_timeout_ms=call_timeout_ms,
            secrets=tuple(entry.substituted),  # last: every field above has been expanded
        )
    url = entry.string("url", raw["url"])
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a malformed host or port
        valid = False
    if not valid:
        raise entry.error("url", "must be an http:// or https:// URL with a host")
    headers = entry.table("headers")
    for name, value in headers.items():
        if not _HEADER_NAME.match(name):
            raise entry.error(f"headers[{_shown(name)}]", "is not an HTTP header name")
        if "\r" in value or "\n" in value:
            raise entry.error(f"headers[{_shown(name)}]", "must not contain a line break")
    return UpstreamConfig(
        key,
        url=url,
        headers=headers,
        confirm_destructive=confirm_destructive,
        optional=optional,
        connect_timeout_ms=connect_timeout_ms,
        call_timeout_ms=call_timeout_ms,
        secrets=tuple(entry.substituted),
    )


def parse_config(
    document: object, *, base: Path | str = ".", environ: Mapping[str, str] | None = None
) -> tuple[UpstreamConfig, ...]:
    """Validate a decoded ``{"mcpServers": {...}}`` document; servers in key order, disabled ones left out.

    ``base`` is the folder a relative ``cwd`` is resolved from (the config file's);
    ``environ`` supplies ``${NAME}`` values (default: this process's environment).
    Other top-level keys (a desktop app's own settings) are ignored. Raises :class:`McpConfigError`.
    """
    if not isinstance(document, dict):
        raise McpConfigError(f"the config must be a JSON object, not {_json_type(document)}")
    if "mcpServers" not in document:
        raise McpConfigError('the config has no "mcpServers" object')
    servers = document["mcpServers"]
    if not isinstance(servers, dict):
        raise McpConfigError(f"mcpServers must be an object, not {_json_type(servers)}")
    folder = Path(base).resolve()
    variables = os.environ if environ is None else environ
    parsed = [_server(key, raw, base=folder, environ=variables) for key, raw in sorted(servers.items())]
    enabled = tuple(server for server in parsed if server is not None)
    if not enabled:
        raise McpConfigError("mcpServers names no server to serve" + (" (all are disabled)" if servers else ""))
    return enabled


def read_config(path: Path | str, *, environ: Mapping[str, str] | None = None) -> tuple[UpstreamConfig, ...]:
    """Read and validate an ``mcpServers`` JSON file; a relative ``cwd`` is relative to its folder.

    Errors do not repeat the file's name: the caller, who named it, says which file.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise McpConfigError("no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"cannot be read ({type(exc).__name__})") from None
    try:
        document = json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKey as exc:
        # json keeps the last one silently: two servers under one key would lose one unnoticed.
        raise McpConfigError(f"the key {_shown(exc.key)} appears twice in one object") from None
    except json.JSONDecodeError as exc:
        # The decoder's message names the position only, never the text around it.
        raise McpConfigError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return parse_config(document, base=file.resolve().parent, environ=environ)


def _may_destroy(tool: mcp_types.Tool) -> bool:
    """MCP's reading of a tool's hints: destructive unless marked read-only or explicitly not destructive."""
    hints = tool.annotations
    if hints is None:
        return True
    return hints.read_only_hint is not True and hints.destructive_hint is not False


def config_sources(
    servers: Sequence[UpstreamConfig], *, connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS
) -> list[CapabilitySource]:
    """One upstream source per server, with the server's key as its id (and its module's id).

    ``connect_timeout_ms`` bounds connecting and listing each server whose entry sets no
    ``connectTimeoutMs`` of its own.
    """
    sources = []
    for server in servers:
        confirm = _may_destroy if server.confirm_destructive else None
        bound = server.connect_timeout_ms or connect_timeout_ms
        try:
            if server.command is not None:
                made = mcp_source(
                    server.key,
                    command=server.command,
                    args=server.args,
                    env=server.env,
                    cwd=server.cwd,
                    confirm=confirm,
                    optional=server.optional,
                    connect_timeout_ms=bound,
                    call_timeout_ms=server.call_timeout_ms,
                    secrets=server.secrets,
                )
            else:
                made = mcp_source(
                    server.key,
                    url=server.url,
                    headers=server.headers,
                    confirm=confirm,
                    optional=server.optional,
                    connect_timeout_ms=bound,
                    call_timeout_ms=server.call_timeout_ms,
                    secrets=server.secrets,
                )
        except ValueError as exc:
            # A key the source refuses (too long, no identifier in it): said for the config's author.
            raise McpConfigError(f"server {_shown(server.key)}: {exc}") from None
        sources.append(made)
    return sources


def create_config_catalog(
    servers: Sequence[UpstreamConfig] | Path | str,
    *,
    sandbox: Sandbox | None = None,
    semantic: SemanticRanker | None = None,
    connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
) -> McpCatalog:
    """The catalog serving every server of a config (a path, or servers already read), owner-granted.

    Every principal the catalog is asked about gets write grants on every server: this is
    the catalog ``mycelium serve --config`` serves to its one token holder, the config's
    owner. ``sandbox`` defaults to an :class:`~mycelium.sandbox.isolated.IsolatedSandbox`;
    ``semantic`` adds ranking by meaning to search; ``connect_timeout_ms`` bounds connecting to
    each server whose entry sets no ``connectTimeoutMs``.
    """
    read = read_config(servers) if isinstance(servers, Path | str) else tuple(servers)
    authority = McpAuthority(
        grants={server.key: "write" for server in read},
        sources=config_sources(read, connect_timeout_ms=connect_timeout_ms),
    )

    def load(principal: Principal) -> McpAuthority:
        return authority

    return create_mcp_catalog(
        load=load, sandbox=sandbox if sandbox is not None else IsolatedSandbox(), semantic=semantic
    )
