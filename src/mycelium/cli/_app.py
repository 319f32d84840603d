"""The ``mycelium`` typer app: the verbs in the order ``--help`` lists them, ``--version``, and ``main()``.

Each verb's line in ``mycelium --help`` is its ``short_help``, written to be read whole: click
would otherwise cut the docstring's first sentence to the terminal's width with "...".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from .._distribution import DISTRIBUTION, installed_version
from ._exits import ExitCode
from ._init import init
from ._local import check, describe, exec_, search
from ._serve import serve

__all__ = ["cli", "main"]


class _Verbs(TyperGroup):
    """The verbs, with Ctrl-C ending any of them the same way: one word on stderr and exit code 130."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            typer.echo("Interrupted.", err=True)
            raise typer.Exit(ExitCode.INTERRUPTED) from None


cli = typer.Typer(
    name="mycelium",
    cls=_Verbs,
    help="Mycelium: typed host operations for AI agents, through one sandboxed execute tool.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(f"{DISTRIBUTION} {installed_version()}")
        raise typer.Exit(ExitCode.OK)


@cli.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the installed version and exit."),
    ] = False,
) -> None:
    """Mycelium: typed host operations for AI agents, through one sandboxed execute tool."""


cli.command(short_help="Serve APP (or an mcpServers config) over MCP.")(serve)
cli.command("exec", short_help="Run one program against APP; print its result.")(exec_)
cli.command(short_help="Print the execute description, or a stub.")(describe)
cli.command(short_help="Print the operations search ranks first for QUERY.")(search)
cli.command(short_help="Report what in APP a model would stumble over.")(check)
cli.command(short_help="Write a small app to start from, with its test.")(init)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``mycelium`` command (``argv`` defaults to ``sys.argv[1:]``)."""
    cli(args=list(argv) if argv is not None else None, prog_name="mycelium")
