"""What a verb serves or runs against: ``APP``, or an ``mcpServers`` config given with ``--config FILE``.

Every verb takes either one; :func:`choose_target` tells which was given, and a
:class:`Target` loads its catalog and says how to launch it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from ..mcp import McpCatalogProvider
from ..mcp._config import MAX_TIMEOUT_MS, McpConfigError, create_config_catalog, read_config
from ..mcp._upstream import DEFAULT_CONNECT_TIMEOUT_MS
from ._apps import AppError, load_catalog, parse_app

CONFIG_OPTION = typer.Option(
    "--config",
    metavar="FILE",
    help="An mcpServers JSON config (Claude Desktop's, Claude Code's .mcp.json, Cursor's mcp.json), "
    "instead of APP: one catalog of every MCP server it names, owned by you. A relative cwd in it is "
    "relative to the file's folder.",
    dir_okay=False,
    show_default=False,
)
CONNECT_TIMEOUT_ENV = "MYCELIUM_CONNECT_TIMEOUT"
CONNECT_TIMEOUT_OPTION = typer.Option(
    "--connect-timeout",
    metavar="SECONDS",
    envvar=CONNECT_TIMEOUT_ENV,
    show_envvar=True,
    min=0.001,
    max=MAX_TIMEOUT_MS / 1000,
    help=f"With --config: how long each server may take to start and list its tools (default "
    f"{DEFAULT_CONNECT_TIMEOUT_MS // 1000}), unless its entry sets connectTimeoutMs. A server that npx or uvx "
    "downloads on its first start may need a minute.",
    show_default=False,
)


@dataclass(frozen=True)
class Target:
    """What a verb serves or runs against: ``APP``, or an ``mcpServers`` config file."""

    app: str | None = None
    config: Path | None = None
    connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS
    """With ``config``: the bound on connecting to each server whose entry sets none."""

    async def load(self) -> tuple[McpCatalogProvider, str]:
        """The catalog, and how to name it to a person (no secret). Raises :class:`AppError`."""
        if self.config is None:
            assert self.app is not None
            return await load_catalog(self.app), self.app
        try:
            servers = read_config(self.config)
            catalog = create_config_catalog(servers, connect_timeout_ms=self.connect_timeout_ms)
        except McpConfigError as exc:
            raise AppError(f"{self.config}: {exc}") from None
        keys = [key if key.isprintable() else repr(key) for key in (server.key for server in servers)]
        count = f"{len(keys)} MCP server{'' if len(keys) == 1 else 's'}"
        return catalog, f"{count} from {self.config.name} ({', '.join(keys)})"

    def launch_args(self) -> list[str]:
        """The arguments that serve this target again from any folder."""
        if self.config is None:
            assert self.app is not None
            return [_app_for_launch(self.app)]
        bound = (
            []
            if self.connect_timeout_ms == DEFAULT_CONNECT_TIMEOUT_MS
            else ["--connect-timeout", f"{self.connect_timeout_ms / 1000:g}"]
        )
        return ["--config", str(self.config.resolve()), *bound]


def choose_target(
    app: str | None, config: Path | None, *rest: str | None, connect_timeout: float | None = None
) -> tuple[Target, tuple[str | None, ...]]:
    """``APP`` or ``--config FILE``, exactly one; with ``--config`` the arguments after APP move up one place.

    ``connect_timeout`` (seconds, ``--connect-timeout``) applies to a config's servers only.
    """
    if config is None:
        if app is None:
            raise typer.BadParameter("give APP, or --config FILE for an mcpServers config", param_hint="APP")
        if connect_timeout is not None:
            raise typer.BadParameter(
                "applies to the servers of --config FILE; an app sets its sources' connect_timeout_ms itself",
                param_hint="--connect-timeout",
            )
        return Target(app=app), rest
    if (rest[-1] if rest else app) is not None:
        raise typer.BadParameter("give APP or --config FILE, not both", param_hint="APP / --config")
    bound = DEFAULT_CONNECT_TIMEOUT_MS if connect_timeout is None else max(1, round(connect_timeout * 1000))
    return Target(config=config, connect_timeout_ms=bound), (app, *rest[:-1]) if rest else ()


def _app_for_launch(app: str) -> str:
    """``APP`` with a file target made absolute, so it works from any folder."""
    spec = parse_app(app)
    if spec.file is None:
        return app
    return f"{spec.file.resolve()}:{spec.attribute}"
