"""Serve a Mycelium catalog over MCP: one ``execute`` tool, authenticated on every request.

``create_mcp(catalog=..., authenticate=...)`` builds the server; ``create_mcp_catalog``
builds the catalog for hosts that install apps as modules and capability sources;
``approvals_app`` is the page where a person decides what paused runs wait for.
"""

from ._approvals_page import approvals_app
from ._catalog import DEFAULT_MAX_CONNECTIONS, McpCatalog, create_mcp_catalog
from ._connections import ConnectionStore, MemoryConnections, PostgresConnections, SqliteConnections
from ._keys import SecretKeys
from ._principals import Admitted, Agent, Authenticate, Member, Principal, Refused, TeamKey, bearer_tokens
from ._provider import Load, McpAuthority, McpCatalogProvider, McpExecutionContext
from ._server import LOOPBACK_HOSTS, LOOPBACK_ORIGINS, PROTOCOL_VERSIONS, McpServer, create_mcp
from ._upstream import mcp_source

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "LOOPBACK_HOSTS",
    "LOOPBACK_ORIGINS",
    "PROTOCOL_VERSIONS",
    "Admitted",
    "Agent",
    "Authenticate",
    "ConnectionStore",
    "Load",
    "McpAuthority",
    "McpCatalog",
    "McpCatalogProvider",
    "McpExecutionContext",
    "McpServer",
    "Member",
    "MemoryConnections",
    "PostgresConnections",
    "Principal",
    "Refused",
    "SecretKeys",
    "SqliteConnections",
    "TeamKey",
    "approvals_app",
    "bearer_tokens",
    "create_mcp",
    "create_mcp_catalog",
    "mcp_source",
]
