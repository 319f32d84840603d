"""``_UpstreamSession``: one SDK client session to an upstream server, in a task of its own.

Snapshots acquired in one task and released in others share it; it counts them, tells
them when the server's tools changed or the session was lost, and closes once the last
lets go, waiting for its task (and a stdio child) to end. The task runs in the task group
of the runtime that opened the session (``AcquireContext.tasks``), which waits for it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import anyio
import mcp.types
from anyio.abc import TaskGroup
from mcp import Client
from mcp.client.session import IncomingMessage, MessageHandlerFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from ..._signals import AbortError, AbortSignal
from ._oversize import _oversized

_CLOSE_GRACE_S = 5.0  # a closing session may say goodbye (DELETE, stdin EOF) this long before it is cut


class _UpstreamSession:
    """One upstream session, owned by a task of its own, held by the snapshots listed on it.

    The SDK client is an async context manager holding task groups, which must be entered
    and left in one task. Snapshots are acquired in one task and released in others, so the
    client lives in a dedicated task of ``tasks`` that enters it, waits to be told to close,
    and leaves it. :meth:`close` always waits for that task to end, so no task or child
    process outlives the last snapshot (or a failed or cancelled acquisition).
    """

    def __init__(self, open_client: Callable[[MessageHandlerFnT], Any], tasks: TaskGroup) -> None:
        self._open_client = open_client
        self._tasks = tasks
        self._started = False
        self._scope = anyio.CancelScope()
        self._ready = anyio.Event()
        self._closing = anyio.Event()
        self._done = anyio.Event()
        self._client: Client | None = None
        self._error: BaseException | None = None
        self._holds = itertools.count()
        self._holders: dict[int, Callable[[], None]] = {}  # each holding snapshot's invalidate()
        self._lost = False

    @property
    def ready(self) -> bool:
        """Whether the session is initialized and open."""
        return self._client is not None

    @property
    def usable(self) -> bool:
        """Whether a new snapshot may use this session: not lost, not closing."""
        return not self._lost and not self._closing.is_set() and (not self._started or self._client is not None)

    def hold(self, invalidate: Callable[[], None]) -> int:
        """Count a snapshot in; a list change or a lost session calls its ``invalidate``."""
        key = next(self._holds)
        self._holders[key] = invalidate
        return key

    def drop(self, key: int) -> int:
        """Count a snapshot out; return how many still hold the session."""
        self._holders.pop(key, None)
        return len(self._holders)

    def lose(self) -> None:
        """Take the session out of use: every snapshot on it goes stale, and the next one connects again."""
        self._lost = True
        self._changed()

    def _changed(self) -> None:
        for invalidate in list(self._holders.values()):
            invalidate()

    async def client(self) -> Client:
        """The initialized client, starting the owning task the first time."""
        if not self._started:
            self._started = True
            self._tasks.start_soon(self._run, name="mycelium upstream MCP session")
        await self._ready.wait()
        if self._client is None:
            raise self._error or ConnectionError("the session ended before it was initialized")
        return self._client

    async def _run(self) -> None:
        try:
            with self._scope:
                async with self._open_client(self._on_message) as client:
                    self._client = client
                    self._ready.set()
                    await self._closing.wait()
        except Exception as exc:
            self._error = exc
        finally:
            if self._client is not None and not self._closing.is_set():
                self.lose()  # the session ended on its own
            self._client = None
            self._ready.set()
            self._done.set()

    async def _on_message(self, message: IncomingMessage) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self._changed()

    async def call(
        self, name: str, arguments: dict[str, Any], signal: AbortSignal, timeout_s: float | None
    ) -> mcp.types.CallToolResult:
        """``tools/call``; a stop on ``signal`` cancels it, which the SDK forwards as ``notifications/cancelled``."""
        client = self._client
        if client is None:
            raise ConnectionError("the upstream MCP session is closed")
        scope = anyio.CancelScope()
        stop_listening = signal.add_listener(lambda _reason: scope.cancel())
        try:
            with scope:
                return await client.call_tool(name, arguments, read_timeout_seconds=timeout_s)
        except MCPError as exc:
            # An answer too big to read closes the SDK's event stream, not the session.
            if exc.code == CONNECTION_CLOSED and not _oversized(exc):
                self.lose()
            raise
        finally:
            stop_listening()
        # Only the signal cancels the scope.
        raise AbortError(signal.reason)

    async def close(self) -> None:
        """Close the session (and end the stdio child); return once the owning task has ended."""
        self._closing.set()
        if not self._started:
            return
        with anyio.CancelScope(shield=True):
            if self._client is None:
                self._scope.cancel()  # still connecting: nothing to say goodbye to
            with anyio.move_on_after(_CLOSE_GRACE_S):
                await self._done.wait()
            self._scope.cancel()
            await self._done.wait()
