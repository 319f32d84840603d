"""The MCP connections (handshake revisions) this process holds in memory, and the bound on them.

The catalog records every open connection (``mycelium.mcp._connections``, shared by replicas);
this table holds the ones whose transport lives in this process, least recently used first,
with what each is doing. Opening one more than the bound (or than its principal's share of
it) evicts the least recently used idle one, here and in the catalog; a connection running an
execute is never evicted. A connection the catalog records but this process does not hold is
resumed from the record, for its own principal.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Scope

from ._principals import Principal, principal_key
from ._provider import McpCatalogProvider
from ._sdk import discard_transport, held_transport, revive_transport

__all__ = ["HeldConnection", "HeldConnections"]

_TOUCH_EVERY_S = 1.0


@dataclass
class HeldConnection:
    """A connection this process holds: whose it is, and what it is doing."""

    principal: str
    resumed: bool
    """Resumed after this process lost it: no client capabilities were recorded."""
    running: int = 0
    touched: float = 0.0
    requests: set[str] = field(default_factory=set)
    """Ids (as the SDK keys them) not free for a new request: in flight, or abandoned by their client."""


class HeldConnections:
    """The connections this process holds, least recently used first, within the catalog's bound."""

    def __init__(
        self, catalog: McpCatalogProvider, manager: StreamableHTTPSessionManager, *, per_principal: int
    ) -> None:
        self._catalog = catalog
        self._manager = manager
        self._per_principal = per_principal
        self._held: OrderedDict[str, HeldConnection] = OrderedDict()
        self._admitting = anyio.Lock()

    def get(self, session_id: str) -> HeldConnection | None:
        """The held connection ``session_id``, if this process holds it."""
        return self._held.get(session_id)

    def __getitem__(self, session_id: str) -> HeldConnection:
        return self._held[session_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    async def open(self, session_id: str, principal: Principal) -> bool:
        """Hold the new connection ``session_id`` of ``principal``, evicting to make room; whether it fits."""
        async with self._admitting:
            key = principal_key(principal)
            if not await self._make_room(key, room_for=1):
                await self.discard(session_id)
                return False
            evicted = await self._catalog.open(
                session_id, principal, bound=self._catalog.max_connections, keep=list(self._held)
            )
            if evicted is None:
                await self.discard(session_id)
                return False
            for gone in evicted:
                await self.discard(gone)
            self._held[session_id] = HeldConnection(key, resumed=False)
            return True

    async def _make_room(self, opener: str, *, room_for: int, spare: str | None = None) -> bool:
        """Evict held idle connections until ``room_for`` more fit; whether they do.

        First the opener's own share: no principal holds more than its quota, so one that
        keeps connections busy (or opens them one after another) cannot lock others out.
        Then the bound, the opener's own least recently used idle connection first.
        """
        held_by_opener = [known for known, held in self._held.items() if held.principal == opener]
        while len([known for known in held_by_opener if known != spare]) + room_for > self._per_principal:
            if not await self._evict(held_by_opener, spare):
                return False
            held_by_opener = [known for known in held_by_opener if known in self._held]
        while len(self._held) + room_for > self._catalog.max_connections:
            if not await self._evict([*held_by_opener, *self._held], spare):  # both least recent first
                return False
        return True

    async def _evict(self, candidates: list[str], spare: str | None) -> bool:
        """Evict the first idle connection among ``candidates`` (in the order given); whether one was."""
        connections = self._held
        victim = next(
            (
                known
                for known in candidates
                if known != spare and known in connections and not connections[known].running
            ),
            None,
        )
        if victim is None:
            return False
        await self.end(victim)
        return True

    async def resume(
        self, session_id: str, principal: Principal, scope: Scope
    ) -> Literal["resumed", "unknown", "full"]:
        """Take a connection this process does not hold back into memory, if the catalog says it is open."""
        key = principal_key(principal)
        async with self._admitting:
            held = self._held.get(session_id)
            if held is not None and held_transport(self._manager, session_id) is not None:
                return "resumed" if held.principal == key else "unknown"
            if not await self._catalog.resume(session_id, principal):
                return "unknown"
            self._held[session_id] = HeldConnection(key, resumed=True)
            if not await revive_transport(self._manager, session_id, scope):
                self._held.pop(session_id, None)
                return "unknown"
            # Room is made only for a connection that is really back: a failed revival evicts nobody.
            if not await self._make_room(key, room_for=0, spare=session_id):
                await self.discard(session_id)
                return "full"
            return "resumed"

    async def touch(self, session_id: str, connection: HeldConnection) -> None:
        """Mark ``connection`` as the most recently used, here and (at most once a second) in the catalog."""
        self._held.move_to_end(session_id)
        now = anyio.current_time()
        if now - connection.touched >= _TOUCH_EVERY_S:  # a durable store is written at most once a second
            connection.touched = now
            await self._catalog.touch(session_id)

    async def discard(self, session_id: str) -> None:
        """Close the connection's transport in this process; the catalog keeps its record."""
        self._held.pop(session_id, None)
        await discard_transport(self._manager, session_id)

    async def end(self, session_id: str) -> None:
        """End the connection for good: its transport here and its record in the catalog."""
        await self.discard(session_id)
        await self._catalog.close(session_id)
