"""The ``mycelium`` typer app: the verbs in the order ``--help`` lists them, and ``main()``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

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


@cli.callback()
def _root() -> None:
    """Mycelium: typed host operations for AI agents, through one sandboxed execute tool."""


cli.command()(serve)
cli.command("exec")(exec_)
cli.command()(describe)
cli.command()(search)
cli.command()(check)
cli.command()(init)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``mycelium`` command (``argv`` defaults to ``sys.argv[1:]``)."""
    cli(args=list(argv) if argv is not None else None, prog_name="mycelium")
