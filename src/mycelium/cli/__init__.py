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

This module holds the command itself and registers the verbs on it, in the order ``--help``
lists them; each verb family lives in its own module (``_serve``, ``_local``).
"""

from __future__ import annotations

from collections.abc import Sequence

import typer

from ._local import check, describe, exec_, search
from ._serve import serve

__all__ = ["cli", "main"]

cli = typer.Typer(
    name="mycelium",
    help="Mycelium: typed host operations for AI agents, through one sandboxed execute tool.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@cli.callback()
def _root() -> None:
    """Mycelium: typed host operations for AI agents, through one sandboxed execute tool."""


cli.command()(serve)
cli.command("exec")(exec_)
cli.command()(describe)
cli.command()(search)
cli.command()(check)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``mycelium`` command (``argv`` defaults to ``sys.argv[1:]``)."""
    cli(args=list(argv) if argv is not None else None, prog_name="mycelium")
