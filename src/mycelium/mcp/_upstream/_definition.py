"""``mcp_source``: an upstream server's definition, checked when it is made, as a :class:`McpSource`.

Every argument is checked here, before any lease, so a host learns of a mistake where it
wrote it; a message never shows a header or ``env`` mapping, whose values are secrets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import mcp.types

from ..._exceptions import DefinitionError
from ..._modules import Module, check_id
from ..._sources import CapabilitySource
from ...sandbox.monty._language import MONTY_LANGUAGE
from ._names import _guest_name
from ._source import McpSource

DEFAULT_CONNECT_TIMEOUT_MS = 10_000
"""How long connecting, initializing and listing one server may take unless told otherwise."""


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
    connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
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
        # Named for the default sandbox's language: a host with another sandbox may pass name=.
        name = _guest_name(id, has_namespace=bool(namespace), language=MONTY_LANGUAGE)
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
