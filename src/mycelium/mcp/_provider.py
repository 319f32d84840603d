"""What an MCP server serves: the catalog protocol, a principal's authority, and one execution's context.

The server (``create_mcp``) talks to a :class:`McpCatalogProvider`. It records
connections (``open``/``resume``/``close``), reads the principal's current authority
(``refresh``), describes the ``execute`` tool and runs it. The server owns everything
that is the same for every host: authentication of each request, the connection table,
re-reading authority, and confirmation by elicitation. It hands each execution an
:class:`McpExecutionContext` whose ``access`` the provider must use for every call of
that execution, direct tools included (``runtime.lease(access=context.access)``).
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self, TypeAlias

from .._access import Access, Grant
from .._modules import Module
from .._signals import AbortSignal
from .._sources import CapabilitySource
from .._tool_calls import ToolCall, ToolDefinition, ToolResult
from ..suspensions import Suspensions
from ._principals import Principal

__all__ = ["Load", "McpAuthority", "McpCatalogProvider", "McpExecutionContext"]


@dataclass(frozen=True)
class McpAuthority:
    """What one principal may use right now.

    ``grants`` maps module ids (or grant keys) to ``"write"``, ``"read"`` or ``"none"``;
    a module it does not name is refused. ``sources`` are the modules and capability
    sources to offer; return the same objects for the same capabilities (runtimes are
    reused while they are the same objects). ``instructions`` become the server's
    instructions for this principal.
    """

    grants: Mapping[str, Grant]
    sources: Sequence[CapabilitySource | Module] = ()
    instructions: str = ""

    def __post_init__(self) -> None:
        # Access validates the grant values; here only the shapes a loader can get wrong.
        Access(grants=self.grants)
        object.__setattr__(self, "grants", dict(self.grants))
        if isinstance(self.sources, Module | CapabilitySource) or not isinstance(self.sources, Sequence):
            raise ValueError("McpAuthority.sources must be a sequence of Module or CapabilitySource")
        for item in self.sources:
            if not isinstance(item, Module | CapabilitySource):
                raise ValueError(f"McpAuthority.sources: {type(item).__name__} is not a Module or CapabilitySource")
        object.__setattr__(self, "sources", tuple(self.sources))
        if not isinstance(self.instructions, str):
            raise ValueError("McpAuthority.instructions must be a string")


Load: TypeAlias = Callable[[Principal], "McpAuthority | Awaitable[McpAuthority]"]


@dataclass(frozen=True)
class McpExecutionContext:
    """One execution's caller, as the server established it for this request.

    ``access`` carries the request's authority: grants read afresh for this execution,
    the re-authentication of the request before each operation call, and confirmation
    by elicitation. It holds request callbacks: use it for this execution only, never
    persist it.
    """

    principal: Principal
    connection_id: str | None
    """The MCP session id (``None`` over stdio)."""
    authority: McpAuthority
    access: Access = field(repr=False)
    tool_call_id: str | None = None
    pause: AbortSignal | None = field(default=None, repr=False)
    """The server's request that the run pause at its next operation call, as a replica that stops
    hands its runs off (2026-07-28 only). Pass it on: ``prepare(call).execute(pause=context.pause)``."""
    signal: AbortSignal | None = field(default=None, repr=False)
    """Aborted when the request's client disconnects, before its answer could be sent (``None`` over
    stdio). Pass it on: ``prepare(call).execute(signal=context.signal)``."""


class McpCatalogProvider(abc.ABC):
    """What ``create_mcp`` serves. Durable hosts derive from it over their own session owner.

    A provider runs inside ``async with provider:`` around the serving; by default entering
    and leaving do nothing, and a provider with work of its own (runtimes, stores) overrides
    them, as :class:`McpCatalog` does.
    """

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    @property
    @abc.abstractmethod
    def max_connections(self) -> int:
        """How many connections the server keeps open in memory (least recently used idle ones go first)."""
        ...

    @abc.abstractmethod
    async def open(
        self, connection_id: str, principal: Principal, *, bound: int, keep: Collection[str]
    ) -> list[str] | None:
        """Atomically record a new connection within ``bound`` open ones.

        The server has already made room among the connections it holds in memory and
        passes their ids as ``keep``; what may still be evicted are records it does not hold
        (left by an earlier process), least recently used first. Returns the ids evicted,
        or ``None`` when there is no room: nothing is recorded then.
        """
        ...

    @abc.abstractmethod
    async def resume(self, connection_id: str, principal: Principal) -> bool:
        """Whether ``connection_id`` is an open connection bound to ``principal`` (it becomes the most recent)."""
        ...

    @abc.abstractmethod
    async def touch(self, connection_id: str) -> None:
        """Mark the connection as just used."""
        ...

    @abc.abstractmethod
    async def close(self, connection_id: str) -> None:
        """Forget a connection (the client ended it, or the server evicted it). Idempotent."""
        ...

    @abc.abstractmethod
    async def refresh(self, principal: Principal) -> McpAuthority:
        """Read ``principal``'s current authority. Called before each execution and after each approval."""
        ...

    @abc.abstractmethod
    async def definition(self, principal: Principal, authority: McpAuthority) -> ToolDefinition:
        """The ``execute`` tool as ``principal`` is shown it."""
        ...

    @abc.abstractmethod
    async def execute(self, call: ToolCall, context: McpExecutionContext) -> ToolResult:
        """Run one ``execute`` call with ``context.access`` for every operation call it makes."""
        ...

    @property
    def suspensions(self) -> Suspensions | None:
        """Where runs paused for a person's approval wait, or ``None`` when this provider cannot pause runs.

        With suspensions, a program that reaches a ``confirm=True`` operation pauses into
        the store and frees its sandbox slot while the person decides; the answer resumes
        it (:meth:`resume_run`), on any replica sharing the store and the keys. Without, the
        run waits inside the request over the handshake revisions, and a confirmation is
        unavailable over 2026-07-28. ``None`` unless a provider overrides it.
        """
        return None

    async def resume_run(self, suspension_id: str, approved: bool | None, context: McpExecutionContext) -> ToolResult:
        """Continue the run paused as ``suspension_id`` with the person's decision, under ``context``.

        ``approved`` is ``None`` for a run a stopping replica handed off, which nobody decides.
        Called only when :attr:`suspensions` is set; a provider that sets it overrides this.
        """
        raise NotImplementedError(f"{type(self).__name__} keeps suspensions but does not resume them")
