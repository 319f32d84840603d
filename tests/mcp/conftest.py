"""The MCP suite's harness: a real server on 127.0.0.1 (uvicorn, ephemeral port) and the official SDK client.

``served(...)`` starts ``create_mcp`` over a ``create_mcp_catalog`` whose ``load`` reads a
mutable :class:`Authority` table, so a test can revoke grants between calls. The notes
module records every write, so a test can count what ran. The listening socket is bound
before the server starts, so a client may connect at once: nothing waits by sleeping.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel
from starlette.types import ASGIApp

from mycelium import ExecutionOptions, Module
from mycelium._access import Grant
from mycelium._discovery import SemanticRanker
from mycelium.mcp import (
    Admitted,
    Agent,
    ConnectionStore,
    McpAuthority,
    McpCatalog,
    McpServer,
    Member,
    Principal,
    Refused,
    SecretKeys,
    TeamKey,
    create_mcp,
    create_mcp_catalog,
)
from mycelium.sandbox.monty import MontySandbox
from mycelium.suspensions import Suspensions
from tests.support.loopback import serve_asgi

ALICE = Member("alice", "owner")
BOB = Agent("bob-agent")
CAROL = TeamKey("carol-key")
TOKENS: dict[str, Principal] = {"token-alice": ALICE, "token-bob": BOB, "token-carol": CAROL}
FORBIDDEN_TOKEN = "token-forbidden"


class Note(BaseModel):
    id: int
    text: str


@dataclass
class Host:
    """The host's state: notes, who may do what, and every write that ran."""

    notes: dict[int, str] = field(default_factory=lambda: {1: "first", 2: "second"})
    writes: list[tuple[str, int]] = field(default_factory=list)
    grants: dict[str, dict[str, Grant]] = field(default_factory=dict)
    revoked_tokens: set[str] = field(default_factory=set)
    loads: int = 0
    on_create: Callable[[], Awaitable[None]] | None = None
    on_delete: Callable[[], Awaitable[None]] | None = None
    module: Module = field(init=False)
    reports: Module = field(init=False)

    def __post_init__(self) -> None:
        notes = Module(id="test-notes", name="notes", description="The test host's notes")
        reports = Module(id="test-reports", name="reports", namespace=("apps",), description="Reports")

        @notes.operation(access="read")
        def search(text: str = "") -> list[Note]:
            """Notes whose text contains ``text``."""
            return [Note(id=i, text=t) for i, t in sorted(self.notes.items()) if text in t]

        @notes.operation(access="write")
        async def create(text: str) -> Note:
            """Create a note."""
            if self.on_create is not None:
                await self.on_create()
            new = max(self.notes, default=0) + 1
            self.notes[new] = text
            self.writes.append(("create", new))
            return Note(id=new, text=text)

        @notes.operation(access="write", confirm=True)
        async def delete(id: int) -> bool:
            """Delete a note (a person confirms each call)."""
            if self.on_delete is not None:
                await self.on_delete()
            self.writes.append(("delete", id))
            return self.notes.pop(id, None) is not None

        @reports.operation(access="read")
        def count() -> int:
            """How many notes there are."""
            return len(self.notes)

        self.module = notes
        self.reports = reports

    def hold_creates(self) -> tuple[anyio.Event, anyio.Event]:
        """Make ``notes.create`` wait: the first event is set once one starts, the second lets it finish."""
        started, release = anyio.Event(), anyio.Event()

        async def hold() -> None:
            started.set()
            await release.wait()

        self.on_create = hold
        return started, release

    def grant(self, principal: Principal, **grants: Grant) -> None:
        self.grants[repr(principal)] = {("test-" + key): value for key, value in grants.items()}

    def load(self, principal: Principal) -> McpAuthority:
        self.loads += 1
        return McpAuthority(
            grants=self.grants.get(repr(principal), {}),
            sources=[self.module, self.reports],
            instructions=f"Notes for {type(principal).__name__}.",
        )

    def authenticate(self, request: Any) -> Admitted | Refused:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or token in self.revoked_tokens:
            return Refused(401)
        if token == FORBIDDEN_TOKEN:
            return Refused(403)
        principal = TOKENS.get(token)
        return Refused(401) if principal is None else Admitted(principal)


@dataclass
class Served:
    url: str
    server: McpServer
    catalog: McpCatalog
    host: Host

    @asynccontextmanager
    async def client(
        self,
        token: str | None = "token-alice",
        *,
        elicitation: Callable[..., Awaitable[Any]] | None = None,
        headers: dict[str, str] | None = None,
        mode: str = "legacy",
    ) -> AsyncIterator[Client]:
        """An SDK client: over a connection of 2025-11-25 (``"legacy"``) or per request (``"2026-07-28"``)."""
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        async with httpx2.AsyncClient(headers=sent, timeout=30) as http:
            transport = streamable_http_client(self.url, http_client=http)
            options: dict[str, Any] = {"mode": mode}
            if elicitation is not None:
                options["elicitation_callback"] = elicitation
            async with Client(transport, **options) as client:
                yield client


@asynccontextmanager
async def served(
    host: Host | None = None,
    *,
    connections: ConnectionStore | None = None,
    max_connections: int = 8,
    max_connections_per_principal: int | None = None,
    execution: ExecutionOptions | None = None,
    sandbox: MontySandbox | None = None,
    semantic: SemanticRanker | None = None,
    suspensions: Suspensions | None = None,
    secret_keys: SecretKeys | None = None,
    page_approvals: bool = False,
    approval_wait_ms: int = 20_000,
    body_timeout_ms: int = 30_000,
    beside: Mapping[str, Any] | None = None,
    wrap: Callable[[ASGIApp], ASGIApp] | None = None,
) -> AsyncIterator[Served]:
    """The server at ``/mcp`` on loopback; ``beside`` maps path prefixes to other ASGI apps served on the
    same address (the approvals page, say); ``wrap`` puts an ASGI app of the test's in front of them all."""
    host = host or Host()
    async with AsyncExitStack() as stack:
        catalog = create_mcp_catalog(
            load=host.load,
            sandbox=sandbox or MontySandbox(),
            execution=execution,
            connections=connections,
            max_connections=max_connections,
            semantic=semantic,
            suspensions=suspensions,
        )
        await stack.enter_async_context(catalog)
        server = create_mcp(
            catalog=catalog,
            authenticate=host.authenticate,
            max_connections_per_principal=max_connections_per_principal,
            secret_keys=secret_keys,
            page_approvals=page_approvals,
            approval_wait_ms=approval_wait_ms,
            body_timeout_ms=body_timeout_ms,
        )
        app = _beside(server.asgi, beside or {})
        base = await stack.enter_async_context(serve_asgi(app if wrap is None else wrap(app)))
        yield Served(f"{base}/mcp", server, catalog, host)


def _beside(main: Any, others: Mapping[str, Any]) -> Any:
    """``main``, with each of ``others`` answering the HTTP requests under its path prefix."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        for prefix, other in others.items():
            if scope["type"] == "http" and (path == prefix or path.startswith(prefix + "/")):
                await other(scope, receive, send)
                return
        await main(scope, receive, send)

    return app


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
