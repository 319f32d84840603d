"""The ``mycelium`` command: ``mycelium serve APP`` serves an app's catalog over MCP.

``APP`` names an :class:`~mycelium.mcp.McpCatalog`, or a zero-argument factory (sync or
async) returning one, as ``package.module:attribute`` or ``path/to/app.py:attribute``;
the attribute defaults to ``create_catalog``. Instead of ``APP``, every verb takes
``--config FILE``: the ``mcpServers`` JSON config desktop agents use (see
:mod:`mycelium.mcp._config`); its servers become one catalog, owned by the person running
the command. Over Streamable HTTP (the default) the
catalog is served at ``/mcp`` with uvicorn, behind a bearer token; over stdio it is
served to the one client that launched the process.

The local verbs run against the same catalog, as its local owner, without serving it:
``mycelium exec APP`` runs one program, ``mycelium describe APP [PATH]`` prints the
execute tool's description or an operation's stub, ``mycelium search APP QUERY`` prints
what discovery ranks first.

This module holds the command itself and registers the verbs on it, in the order ``--help``
lists them; each verb family lives in its own module (``_serve``, ``_local``).
"""

from ._app import cli, main

__all__ = ["cli", "main"]
