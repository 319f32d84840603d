"""What answers in front of the MCP server over HTTP: ``GET /healthz``, and the drain when the replica stops.

``/healthz`` is for a load balancer and needs no token: it answers ``200 {"status":"ok"}``
or ``503 {"status":"unavailable"}`` and nothing more, and only at that exact path, so it
opens no way around authentication. Every other request goes to the app behind.

Draining is how a replica leaves without failing its clients: new work is answered 503
with ``Retry-After`` (so a client or a balancer tries another replica) and ``/healthz``
says unavailable at once, while the requests already running finish. What a request in
flight still needs gets through: the client's replies and notifications on its connection
(a confirmation's answer is one), the DELETE that ends a connection, and the retries of
2026-07-28 calls that carry a paused run's state. When the drain's time is up,
:meth:`Front.cancel_in_flight` cancels what still runs.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..mcp._bodies import DEFAULT_BODY_TIMEOUT_MS, BodyReader, Unread
from ..mcp._http import send_error
from ._console import logger

HEALTH_PATH = "/healthz"
HEALTH_TIMEOUT_SECONDS = 1.5
"""How long one check of the store may take before the replica counts as unavailable."""
HEALTH_FRESH_SECONDS = 1.0
"""How long a check's answer is reused: a flood of probes makes at most one query a second."""
RETRY_AFTER_SECONDS = 1
"""What a draining replica tells clients to wait before retrying (on whichever replica answers then)."""
_MAX_CONTINUATION_BYTES = 256 * 1024
"""The most a draining replica reads to tell a client's reply from new work: the server's own body limit."""

Probe = Callable[[], Awaitable[None]]
"""A cheap check of the shared store that raises (or does not return) when it does not answer."""


class Health:
    """Whether the store answers: one bounded check at a time, its answer reused for a second.

    Probes that arrive while a check runs wait for that check instead of starting their own.
    Without a probe (no shared store) the answer is always yes.
    """

    def __init__(
        self,
        probe: Probe | None,
        *,
        timeout_s: float = HEALTH_TIMEOUT_SECONDS,
        fresh_s: float = HEALTH_FRESH_SECONDS,
        clock: Callable[[], float] = anyio.current_time,
    ) -> None:
        self._probe = probe
        self._timeout_s = timeout_s
        self._fresh_s = fresh_s
        self._clock = clock
        self._checking = anyio.Lock()
        self._checked_at: float | None = None
        self._answers = True

    async def answers(self) -> bool:
        """Whether the store answered its latest check, made now unless one was made within the last second."""
        if self._probe is None:
            return True
        async with self._checking:
            if self._checked_at is not None and self._clock() - self._checked_at < self._fresh_s:
                return self._answers
            failure = await self._failure(self._probe)
            answers = failure is None
            # Said when it changes, not at every probe: a balancer asks every few seconds.
            if not answers and self._answers:
                logger.warning("the store stopped answering health checks: %s", failure)
            elif answers and not self._answers:
                logger.info("the store answers health checks again")
            self._answers = answers
            self._checked_at = self._clock()
            return answers

    async def _failure(self, probe: Probe) -> str | None:
        """Why the store did not answer one check, or ``None`` when it did."""
        try:
            with anyio.fail_after(self._timeout_s):
                await probe()
        except TimeoutError:
            return f"no answer within {self._timeout_s} s"
        except Exception as exc:
            # The type only: a driver's message may name hosts or users.
            return type(exc).__name__
        return None


class Front:
    """The ASGI app uvicorn serves: ``/healthz`` here, everything else to ``app``, and the drain.

    Requests other than event streams (GET) are tracked while they run, each in a cancel
    scope of its own, so a drain knows when the last one finished and can cancel those
    still running at its deadline. An event stream never ends by itself; the server closes
    it after the drain. While draining, a body read to tell a reply from new work must arrive
    within ``body_timeout_s``, as the server's own must.
    """

    def __init__(self, app: ASGIApp, health: Health, *, body_timeout_s: float = DEFAULT_BODY_TIMEOUT_MS / 1000) -> None:
        self._app = app
        self._health = health
        self._bodies = BodyReader(max_bytes=_MAX_CONTINUATION_BYTES, timeout_s=body_timeout_s)
        self._draining = False
        self._running: set[anyio.CancelScope] = set()
        self._idle = anyio.Event()

    @property
    def draining(self) -> bool:
        """Whether the replica has stopped taking new work."""
        return self._draining

    @property
    def in_flight(self) -> int:
        """How many tracked requests are running."""
        return len(self._running)

    def drain(self) -> None:
        """Stop taking new work: from now on new requests get 503 and ``/healthz`` says unavailable."""
        self._draining = True
        if not self._running:
            self._idle.set()

    async def drained(self) -> None:
        """Return once the replica drains and no tracked request is running."""
        await self._idle.wait()

    def cancel_in_flight(self) -> None:
        """Cancel every tracked request: one that had not begun its answer gets 503, the others end unfinished."""
        for running in self._running:
            running.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if scope["path"] == HEALTH_PATH:
            await self._answer_health(scope, send)
            return
        if self._draining:
            continuing = await _continuation(scope, receive, self._bodies)
            if isinstance(continuing, Unread):
                await continuing.answer(send)
                return
            if continuing is None:
                await _unavailable(send)
                return
            receive = continuing
        if scope["method"] == "GET":
            await self._app(scope, receive, send)
            return
        await self._tracked(scope, receive, send)

    async def _tracked(self, scope: Scope, receive: Receive, send: Send) -> None:
        answering = False

        async def watched_send(message: Message) -> None:
            nonlocal answering
            if message["type"] == "http.response.start":
                answering = True
            await send(message)

        running = anyio.CancelScope()
        self._running.add(running)
        try:
            with running:
                await self._app(scope, receive, watched_send)
        finally:
            self._running.discard(running)
            if self._draining and not self._running:
                self._idle.set()
        if running.cancelled_caught and not answering:
            await _unavailable(send)

    async def _answer_health(self, scope: Scope, send: Send) -> None:
        if scope["method"] != "GET":
            await _respond(send, 405, b"", [(b"allow", b"GET")])
            return
        up = not self._draining and await self._health.answers()
        # Checked again: a drain that began while the store was asked is said at once.
        if up and not self._draining:
            await _respond(send, 200, _STATUS_OK, _NO_STORE)
        else:
            await _respond(send, 503, _STATUS_UNAVAILABLE, _NO_STORE)


_STATUS_OK = json.dumps({"status": "ok"}, separators=(",", ":")).encode()
_STATUS_UNAVAILABLE = json.dumps({"status": "unavailable"}, separators=(",", ":")).encode()
_NO_STORE = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _unavailable(send: Send) -> None:
    # Connection: close, so a client's next request opens a new connection, which a balancer
    # sends to another replica.
    await send_error(
        send,
        503,
        "this server is stopping; retry the request",
        extra=[(b"retry-after", str(RETRY_AFTER_SECONDS).encode()), (b"connection", b"close")],
    )


async def _continuation(scope: Scope, receive: Receive, bodies: BodyReader) -> Receive | Unread | None:
    """How to read the request again if it only continues work in flight, else ``None``; why its body
    was not read (too large, too slow), if so.

    A DELETE ends a connection. A POST continues when every JSON-RPC message in its body is a
    reply, a notification, or the retry of a call that carries the state of a paused run
    (``requestState``, 2026-07-28): a request (a method with an id) would start new work. The
    server decides what a retry gets from a draining replica (see ``McpServer.drain``).
    """
    if scope["method"] == "DELETE":
        return receive
    if scope["method"] != "POST":
        return None
    body = await bodies.read(scope, receive)
    if isinstance(body, Unread):
        return body
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    messages = parsed if isinstance(parsed, list) else [parsed]
    if not messages or not all(isinstance(each, dict) and _continues(each) for each in messages):
        return None
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _continues(message: dict[str, object]) -> bool:
    """Whether one JSON-RPC message continues work in flight rather than starting new work."""
    if "method" not in message or "id" not in message:
        return True  # a reply or a notification
    params = message.get("params")
    return message["method"] == "tools/call" and isinstance(params, dict) and "requestState" in params
