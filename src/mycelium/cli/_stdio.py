"""Serving over stdio: the catalog, to the one client that launched the process.

The client is the local owner. A server made for stdio has no HTTP caller to admit, so its
authentication refuses any that came.
"""

from __future__ import annotations

import anyio

from ..mcp import McpCatalogProvider, McpServer, Refused, create_mcp
from ._console import logger
from ._owned import LOCAL_PRINCIPAL
from ._signals import stop_on_signal


async def serve_stdio(catalog: McpCatalogProvider, *, name: str) -> None:
    """Serve ``catalog`` on stdin and stdout until the client leaves or a signal stops it."""

    def refuse_http(_: object) -> Refused:
        return Refused(401)

    server: McpServer = create_mcp(catalog=catalog, authenticate=refuse_http, name=name)
    try:
        async with anyio.create_task_group() as tg:
            stop = anyio.Event()
            tg.start_soon(stop_on_signal, stop, tg.cancel_scope.cancel)

            async def cancel_when_asked() -> None:
                await stop.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(cancel_when_asked)
            logger.info("serving over stdio as %s", LOCAL_PRINCIPAL)
            await server.serve_stdio(LOCAL_PRINCIPAL)
            tg.cancel_scope.cancel()
    finally:
        await server.close()
