"""A tiny MCP server over stdio, written with the official SDK, for the `--config` tests (tests/cli/test_config.py).

It reports a digest of its token (never the token), its working folder, and has one tool of
each kind of annotation: read-only, destructive, and none at all.
"""

import hashlib
import os
from typing import TypedDict

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("tally")
tallies: dict[str, int] = {}


class Sum(TypedDict):
    sum: int


class Forgotten(TypedDict):
    forgotten: bool


class Count(TypedDict):
    count: int


class Digest(TypedDict):
    sha256: str


class Folder(TypedDict):
    path: str


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> Sum:
    """Add two whole numbers."""
    return {"sum": a + b}


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def forget(name: str) -> Forgotten:
    """Forget a named tally."""
    return {"forgotten": tallies.pop(name, None) is not None}


@server.tool()
def bump(name: str) -> Count:
    """Count one more for a named tally."""
    tallies[name] = tallies.get(name, 0) + 1
    return {"count": tallies[name]}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def token_digest() -> Digest:
    """The SHA-256 of the TALLY_TOKEN this server was started with, so a test sees it arrived without seeing it."""
    return {"sha256": hashlib.sha256(os.environ.get("TALLY_TOKEN", "").encode()).hexdigest()}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def folder() -> Folder:
    """The folder this server runs in."""
    return {"path": os.getcwd()}


if __name__ == "__main__":
    server.run("stdio")
