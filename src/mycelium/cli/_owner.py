"""The local owner: who the command's caller is in the catalog, and running a program as them.

Whoever runs ``mycelium`` owns the catalog it loads: over HTTP the holder of the token it
prints, over stdio the client that launched it, in the local verbs the person at the terminal.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import typer

from .._access import Access, ConfirmRequest
from .._execute import ToolCall, ToolResult
from .._values import dumps_compact
from ..mcp import McpAuthority, McpCatalogProvider, McpExecutionContext
from ._owned import LOCAL_PRINCIPAL
from ._target import Target


@contextlib.asynccontextmanager
async def as_owner(target: Target) -> AsyncIterator[tuple[McpCatalogProvider, McpAuthority]]:
    """The target's catalog and the local owner's authority in it, closed when done. Raises :class:`AppError`."""
    catalog, _ = await target.load()
    async with catalog:
        yield catalog, await catalog.refresh(LOCAL_PRINCIPAL)


async def run_program(target: Target, code: str, *, approve: bool) -> ToolResult:
    """Run ``code`` as one execute against the target's catalog, as the local owner.

    A ``confirm=True`` operation is approved when ``approve`` is true, asked on the
    terminal when there is one, and refused otherwise. Raises :class:`AppError`.
    """
    async with as_owner(target) as (catalog, authority):
        access = Access(explicit=True, grants=authority.grants, confirm=_confirmer(approve))
        context = McpExecutionContext(LOCAL_PRINCIPAL, None, authority, access)
        return await catalog.execute(ToolCall(id=None, name="execute", arguments={"code": code}), context)


def _confirmer(approve: bool) -> Any:
    async def confirm(request: ConfirmRequest) -> bool | None:
        if approve:
            return True
        if not sys.stdin.isatty():
            return None  # nobody to ask: the call is refused, never run unasked
        question = f"Allow {request.path} with {dumps_compact(request.arguments)}?"  # type: ignore[arg-type]
        return await anyio.to_thread.run_sync(lambda: typer.confirm(question, default=False, err=True))

    return confirm
