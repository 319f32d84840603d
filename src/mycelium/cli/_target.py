"""What a verb serves or runs against: ``APP``, or an ``mcpServers`` config given with ``--config FILE``.

Every verb takes either one; :func:`choose_target` tells which was given, and a
:class:`Target` loads its catalog and says how to launch it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from ..mcp import McpCatalogProvider
from ..mcp._config import McpConfigError, create_config_catalog, read_config
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


@dataclass(frozen=True)
class Target:
    """What a verb serves or runs against: ``APP``, or an ``mcpServers`` config file."""

    app: str | None = None
    config: Path | None = None

    async def load(self) -> tuple[McpCatalogProvider, str]:
        """The catalog, and how to name it to a person (no secret). Raises :class:`AppError`."""
        if self.config is None:
            assert self.app is not None
            return await load_catalog(self.app), self.app
        try:
            servers = read_config(self.config)
            catalog = create_config_catalog(servers)
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
        return ["--config", str(self.config.resolve())]


def choose_target(app: str | None, config: Path | None, *rest: str | None) -> tuple[Target, tuple[str | None, ...]]:
    """``APP`` or ``--config FILE``, exactly one; with ``--config`` the arguments after APP move up one place."""
    if config is None:
        if app is None:
            raise typer.BadParameter("give APP, or --config FILE for an mcpServers config", param_hint="APP")
        return Target(app=app), rest
    if (rest[-1] if rest else app) is not None:
        raise typer.BadParameter("give APP or --config FILE, not both", param_hint="APP / --config")
    return Target(config=config), (app, *rest[:-1]) if rest else ()


def _app_for_launch(app: str) -> str:
    """``APP`` with a file target made absolute, so it works from any folder."""
    spec = parse_app(app)
    if spec.file is None:
        return app
    return f"{spec.file.resolve()}:{spec.attribute}"
