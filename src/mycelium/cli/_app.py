"""The ``mycelium`` typer app: the verbs in the order ``--help`` lists them, and ``main()``."""

from __future__ import annotations

from collections.abc import Sequence

import typer

from ._init import init
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
cli.command()(init)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``mycelium`` command (``argv`` defaults to ``sys.argv[1:]``)."""
    cli(args=list(argv) if argv is not None else None, prog_name="mycelium")
