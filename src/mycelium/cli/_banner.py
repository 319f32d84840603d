"""What ``mycelium serve`` prints once it serves over HTTP: where, with which token, and how to connect.

It is printed for a person to copy from: the URL, an MCP Inspector command, and the config
snippets for agents that connect over HTTP and for those that launch the server over stdio.
A token the operator chose is never shown, only where it came from; one serve keeps is
shown with the file it is kept in.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ._target import Target
from ._tokens import Secret

TOKEN_ENV = "MYCELIUM_TOKEN"
"""Where ``serve --token`` is read from when it is not given; the banner names it, never its value."""
APPROVER_TOKEN_ENV = "MYCELIUM_APPROVER_TOKEN"
"""Where ``serve --approver-token`` is read from; the banner names it, never its value."""
INSPECTOR_VERSION = "2.12.0"
"""The MCP Inspector the banner's commands are written for, and the one the tests run them with
(``tests/thirdparty/npm-packages.txt`` pins the same): an unpinned ``npx`` may pick an older one
whose command line has no ``--header``."""
INSPECTOR_NODE = "22.19"
"""The oldest Node.js that Inspector declares it runs on (its ``engines``)."""


@dataclass(frozen=True)
class ApproverLogin:
    """How a person signs in to the approvals page at ``url``: the approver token, the app's own check
    (named by ``authenticate``), or both."""

    url: str
    token: Secret | None
    authenticate: str | None = None


def print_banner(
    out: Console,
    *,
    target: Target,
    label: str,
    name: str,
    url: str,
    token: Secret,
    cwd: str,
    store: str | None = None,
    approvals: ApproverLogin | None = None,
) -> None:
    """Print how to reach the server at ``url``; a token the operator chose is not shown.

    ``store`` names the store this replica shares (its password already masked), if any;
    ``approvals`` how a person signs in to the approvals page.
    """
    if token.chosen:
        # The operator chose this secret; keep it out of terminals and logs.
        header = f"Bearer <{TOKEN_ENV if token.source == 'env' else 'token'}>"
        shell_header = f"Bearer ${TOKEN_ENV}" if token.source == "env" else header
    else:
        header = shell_header = f"Bearer {token.value}"
    out.print(f"[bold]Mycelium[/] is serving [bold]{escape(label)}[/] over MCP (Streamable HTTP)")
    out.print(f"  URL    {escape(url)}")
    out.print(f"  Token  {_told(token, TOKEN_ENV, '--token')}")
    if store is not None:
        out.print(f"  Store  {escape(store)}  [dim](connections and paused runs, shared with every replica)[/]")
    if approvals is not None:
        out.print(f"  Approvals  {escape(approvals.url)}  {_approver_login(approvals)}")
    out.print()
    launch = [*_launcher(), "serve", *target.launch_args(), "--transport", "stdio", "--cwd", cwd]
    inspector = f"npx -y @modelcontextprotocol/inspector@{INSPECTOR_VERSION} --cli"
    over_http = f'{inspector} {shlex.quote(url)} --header "Authorization: {shell_header}"'
    out.print(f"[bold]MCP Inspector {INSPECTOR_VERSION}[/] (command line; needs Node.js {INSPECTOR_NODE} or newer):")
    for told, command in (
        ("List the tool", f"{over_http} --method tools/list"),
        ("Run a program", f"{over_http} {_FIRST_CALL}"),
        # The Inspector takes every option it knows, the server's too, until a `--`.
        ("Over stdio", f"{inspector} {_FIRST_CALL} -- {shlex.join(launch)}"),
    ):
        out.print(f"  [dim]{told}:[/]  {escape(command)}", highlight=False)
    out.print()
    out.print("[bold]Agents that connect over HTTP[/] (e.g. Claude Code's .mcp.json, Cursor's mcp.json):")
    http_config = {"mcpServers": {name: {"type": "http", "url": url, "headers": {"Authorization": header}}}}
    out.print_json(data=http_config)
    out.print()
    out.print(
        "[bold]Desktop agents that launch servers[/] (e.g. Claude Desktop's claude_desktop_config.json), over stdio:"
    )
    stdio_config = {"mcpServers": {name: {"command": launch[0], "args": launch[1:]}}}
    out.print_json(data=stdio_config)
    out.print()
    out.print("Press Ctrl-C to stop.")


_FIRST_CALL = """--method tools/call --tool-name execute --tool-args-json '{"code": "return 1 + 1"}'"""


def _told(secret: Secret, env: str, option: str, what: str = "") -> str:
    """A secret as the banner shows it: its value and where it is kept, or only where the operator set it."""
    named = f"{what}, " if what else ""
    if secret.chosen:
        origin = env if secret.source == "env" else option
        return f"(not shown)  [dim]({named}from {origin})[/]"
    kept = "generated and kept" if secret.source == "generated" else "kept"
    return (
        f"{escape(secret.value)}  [dim]({named}{kept} in {escape(str(secret.file))}; delete the file for a new one, "
        f"or set {env})[/]"
    )


def _approver_login(login: ApproverLogin) -> str:
    """How the banner says a person signs in to the approvals page: the approver token, the app's own check, or both."""
    told = []
    if login.token is not None:
        told.append(_told(login.token, APPROVER_TOKEN_ENV, "--approver-token", "approver token"))
    if login.authenticate is not None:
        told.append(f"[dim](approvers signed in by {escape(login.authenticate)})[/]")
    return "  ".join(told)


def _launcher() -> list[str]:
    """How another program starts this command: the installed script, else ``python -m mycelium.cli``."""
    script = Path(sys.executable).parent / "mycelium"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "mycelium.cli"]
