"""The local verbs: ``exec``, ``describe``, ``search`` and ``check`` run against APP's catalog without serving it.

Each one loads the catalog as its local owner, does one thing and prints it: what it found
on stdout; a program's prints, and why the verb failed, on stderr. The exit codes are
:class:`~._exits.ExitCode`'s: ``BAD_USAGE`` for an APP that cannot be loaded or whose modules
cannot be installed, ``FAILED`` for work that failed after loading (for ``check``, a finding
that fails it).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, TypeVar

import anyio
import typer
from rich.console import Console
from rich.markup import escape

from .._checks import Finding, check_catalog
from .._exceptions import DefinitionError, MyceliumError, MyceliumSourceError
from .._execute import ToolResult
from .._modules import Module
from .._values import JsonValue, dumps_compact
from ..mcp import McpCatalog
from ..sandbox.monty import MontySandbox
from ._apps import DEFAULT_ATTRIBUTE, AppError
from ._console import logging_to, say, say_marked, show
from ._exits import ExitCode
from ._owned import LOCAL_PRINCIPAL
from ._owner import as_owner, run_program
from ._signals import waking_at_signals
from ._target import CONFIG_OPTION, CONNECT_TIMEOUT_OPTION, Target, choose_target

T = TypeVar("T")

APP_ARGUMENT = typer.Argument(
    metavar="APP",
    help=f"module:attribute or path/to/app.py[:attribute] (default attribute: {DEFAULT_ATTRIBUTE}). "
    "Leave it out with --config.",
    show_default=False,
)


def exec_(
    app: Annotated[str | None, APP_ARGUMENT] = None,
    file: Annotated[
        str | None,
        typer.Argument(metavar="FILE", help="A file holding the program, or - for stdin.", show_default=False),
    ] = None,
    config: Annotated[Path | None, CONFIG_OPTION] = None,
    connect_timeout: Annotated[float | None, CONNECT_TIMEOUT_OPTION] = None,
    code: Annotated[str | None, typer.Option("--code", "-c", help="The program itself.", show_default=False)] = None,
    approve: Annotated[
        bool, typer.Option(help="Approve every operation that asks a person first, without asking.")
    ] = False,
) -> None:
    """Run one program against APP and print its result (exit code 1 on failure, with its code).

    With --config FILE, the one argument is the program's FILE: exec --config FILE [FILE].
    """
    target, (file,) = choose_target(app, config, file, connect_timeout=connect_timeout)
    if (code is None) == (file is None):
        raise typer.BadParameter("give the program once: --code CODE, a FILE, or - for stdin", param_hint="FILE")
    if code is None:
        assert file is not None
        try:
            code = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise typer.BadParameter(f"cannot read {file}: {exc.__class__.__name__}", param_hint="FILE") from None
    program = code
    result = _run_local(lambda: run_program(target, program, approve=approve))
    show(result.value)


def describe(
    app: Annotated[str | None, APP_ARGUMENT] = None,
    path: Annotated[
        str | None,
        typer.Argument(
            metavar="PATH", help="An operation or namespace path; without it, the execute tool's description."
        ),
    ] = None,
    config: Annotated[Path | None, CONFIG_OPTION] = None,
    connect_timeout: Annotated[float | None, CONNECT_TIMEOUT_OPTION] = None,
) -> None:
    """Print the execute tool's description, or the stub of an operation or namespace.

    With --config FILE, the one argument is the PATH: describe --config FILE [PATH].
    """
    target, (path,) = choose_target(app, config, path, connect_timeout=connect_timeout)
    if path is None:
        say(_run_local(lambda: _description(target)).text)
    else:
        program = f"return await forage.describe({dumps_compact(path)})"
        say(str(_run_local(lambda: run_program(target, program, approve=False)).value))


def search(
    app: Annotated[str | None, APP_ARGUMENT] = None,
    query: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="QUERY...", help="What you need, in a few words: up to four phrasings of it.", show_default=False
        ),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=50, help="How many results.")] = 8,
    config: Annotated[Path | None, CONFIG_OPTION] = None,
    connect_timeout: Annotated[float | None, CONNECT_TIMEOUT_OPTION] = None,
) -> None:
    """Print the operations discovery ranks first for QUERY, best first (search --config FILE QUERY, too).

    Several QUERY arguments are phrasings of one need, searched together as a program's
    forage.search([...]) searches them.
    """
    phrasings = list(query or ())
    if config is not None and app is not None:  # with --config, every argument is a phrasing
        phrasings.insert(0, app)
        app = None
    target, _ = choose_target(app, config, connect_timeout=connect_timeout)
    if not phrasings:
        raise typer.BadParameter("say what you need", param_hint="QUERY")
    asked: JsonValue = phrasings[0] if len(phrasings) == 1 else [*phrasings]
    program = f"return await forage.search({dumps_compact(asked)}, limit={limit})"
    result = _run_local(lambda: run_program(target, program, approve=False))
    hits = [hit for hit in result.value if isinstance(hit, dict)] if isinstance(result.value, list) else []
    lines = [f"{hit.get('path')}  {hit.get('description') or ''}".rstrip() for hit in hits]
    say("\n".join(lines) or "(nothing found)")


def check(
    app: Annotated[str | None, APP_ARGUMENT] = None,
    strict: Annotated[bool, typer.Option(help="Fail (exit code 1) on warnings too, not only on errors.")] = False,
    config: Annotated[Path | None, CONFIG_OPTION] = None,
    connect_timeout: Annotated[float | None, CONNECT_TIMEOUT_OPTION] = None,
) -> None:
    """Report what in APP's catalog a model would stumble over: errors, warnings and notes.

    Errors: a module that cannot be installed (a name that clashes with a sandbox module or
    a builtin, a key that is also a prefix, a duplicate id) or a source that fails to acquire.
    Warnings: an operation without a description, a description over budget, parameters or
    an output without a type. Exit code 1 when there is an error (or, with --strict, a warning).
    """
    target, _ = choose_target(app, config, connect_timeout=connect_timeout)
    findings = _against_app(lambda: _findings(target))
    for finding in findings:
        colour = {"error": "bold red", "warning": "yellow", "note": "cyan"}[finding.severity]
        where, message = escape(finding.where), escape(finding.message)
        say_marked(f"[{colour}]{finding.severity}:[/] {where}: {message} \\[{finding.code}]")
    counts = {severity: sum(1 for f in findings if f.severity == severity) for severity in ("error", "warning")}
    say(f"{counts['error']} errors, {counts['warning']} warnings")
    if counts["error"] or (strict and counts["warning"]):
        raise typer.Exit(ExitCode.FAILED)


async def _description(target: Target) -> ToolResult:
    async with as_owner(target) as (catalog, authority):
        definition = await catalog.definition(LOCAL_PRINCIPAL, authority)
    return ToolResult(text=definition.description, is_error=False)


async def _findings(target: Target) -> list[Finding]:
    async with as_owner(target) as (catalog, authority):
        items = authority.sources
        # Checked as the catalog's own sandbox runs programs; a provider of another kind
        # is checked as the default sandbox (Monty) would run them.
        language = catalog.sandbox.language if isinstance(catalog, McpCatalog) else MontySandbox.language
        return await check_catalog(
            modules=[item for item in items if isinstance(item, Module)],
            sources=[item for item in items if not isinstance(item, Module)],
            language=language,
        )


def _run_local(work: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
    """Run one local verb's program: its prints go to stderr; a failure is its code and text, exit code 1."""
    result = _against_app(work)
    err = Console(stderr=True, soft_wrap=True)
    for line in result.logs:
        err.print(escape(line), highlight=False)
    if result.is_error:
        code = result.failure.code if result.failure is not None else "error"
        err.print(f"[bold red]{code}:[/] {escape(result.text)}")
        raise typer.Exit(ExitCode.FAILED)
    return result


def _against_app(work: Callable[[], Awaitable[T]]) -> T:
    """Run one local verb's work on APP.

    A bad APP, or one whose modules cannot be installed, is its reason on stderr and exit code
    2: nothing ran, and the app is what to fix. A source failing to acquire (an upstream
    server that does not start or answer) is one line and exit code 1: the work failed.
    """
    err = Console(stderr=True, soft_wrap=True)
    try:
        with logging_to(err, "warning"):
            # The default sandbox (Monty's pool) runs on asyncio only.
            return anyio.run(waking_at_signals, work, backend="asyncio")
    except (AppError, DefinitionError) as exc:
        err.print(f"[bold red]Error:[/] {escape(str(exc))}")
        raise typer.Exit(ExitCode.BAD_USAGE) from None
    except MyceliumError as exc:
        # A source's own account is shown only when it is one written to be shown (an upstream
        # server's, secrets removed); anything else it raised stays in the log.
        shown = exc.__cause__ if isinstance(exc.__cause__, MyceliumSourceError) else exc
        err.print(f"[bold red]Error:[/] {escape(str(shown))}")
        raise typer.Exit(ExitCode.FAILED) from None
