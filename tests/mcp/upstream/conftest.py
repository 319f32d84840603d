"""The upstream suite's harness: SDK servers over stdio (a child process) and Streamable HTTP (127.0.0.1).

``stdio_source`` and ``http_served`` give a source over the same server profile either way.
The HTTP server runs in the test's own event loop (uvicorn on a socket bound before it
starts, so nobody waits by sleeping), which lets a test read what the upstream saw.
Child processes are counted from ``/proc``: the suite runs on Linux.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mycelium import CapabilitySource, ExecutionOptions, Runtime
from mycelium.mcp import mcp_source
from mycelium.sandbox.monty import MontySandbox
from tests.support.loopback import serve_asgi

from .servers import Upstream

SERVERS = str(Path(__file__).with_name("servers.py"))
RAW_SERVER = str(Path(__file__).with_name("raw_server.py"))


def stdio_source(profile: str = "basic", source_id: str = "up", **options: Any) -> CapabilitySource:
    """A source over ``servers.py PROFILE`` run as a stdio child of this process."""
    return mcp_source(source_id, command=sys.executable, args=[SERVERS, profile], **options)


def raw_source(*args: str, **options: Any) -> CapabilitySource:
    """A source over ``raw_server.py`` (a server written by hand, which sends whatever lines a test asks for)."""
    return mcp_source("up", command=sys.executable, args=[RAW_SERVER, *args], **options)


@asynccontextmanager
async def http_served(upstream: Upstream, *, json_response: bool = False) -> AsyncIterator[str]:
    """Serve ``upstream`` over Streamable HTTP (answers as event streams, or JSON bodies); yield its endpoint URL."""
    async with serve_asgi(upstream.server().streamable_http_app(host="127.0.0.1", json_response=json_response)) as base:
        yield f"{base}/mcp"


def runtime(*sources: CapabilitySource, timeout_ms: int = 30_000) -> Runtime:
    return Runtime(sources=sources, sandbox=MontySandbox(), execution=ExecutionOptions(timeout_ms=timeout_ms))


def children() -> set[int]:
    """The live (not zombie) upstream server processes this process started, from /proc.

    Only ``servers.py`` and ``raw_server.py`` children count: the sandbox has worker processes of its own.
    """
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        # The command may hold spaces and parentheses: fields follow the last ')'.
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == os.getpid() and state != "Z" and {SERVERS.encode(), RAW_SERVER.encode()} & set(command):
            found.add(int(entry))
    return found


@asynccontextmanager
async def upstream(
    transport: str, profile: str = "basic", **options: Any
) -> AsyncIterator[tuple[CapabilitySource, Upstream | None]]:
    """A source over a ``profile`` server on ``transport``, and the server's state when it runs in-process (HTTP)."""
    if transport == "stdio":
        yield stdio_source(profile, **options), None
        return
    server = Upstream(profile)
    async with http_served(server) as url:
        yield mcp_source("up", url=url, **options), server


TRANSPORTS = ("stdio", "http")
