"""The HTTP side of serving MCP: what the server does to a request before and after the SDK.

The SDK's transport sees each request after these helpers: its body already read (and
bounded), its ``receive`` watched for the client leaving, its ``send`` watched so a
response the SDK leaves unfinished is finished here, never turned into a 500.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence

import anyio
from starlette.types import Message, Receive, Send

from .._signals import AbortController

__all__ = [
    "CLIENT_LEFT",
    "CONNECTION_ENDED",
    "LOOPBACK_HOSTS",
    "LOOPBACK_ORIGINS",
    "Answered",
    "allowed",
    "error_body",
    "message_id",
    "releasing",
    "request_id",
    "send_error",
    "stays_connected",
    "watch",
]

logger = logging.getLogger("mycelium.mcp")

NO_REPLAY = "this request cannot be served: event replay is not supported"
CONNECTION_ENDED = "this connection was closed while the request was being served; initialize a new connection"
"""What a request is told when its connection ended under it (a DELETE, an eviction, the server stopping)."""

CLIENT_LEFT = "the client closed the request's connection"
"""Why a request's run was aborted when its client disconnected."""

LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
"""The ``Host`` values accepted by default: loopback, any port."""
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
"""The ``Origin`` values accepted by default."""


def allowed(value: str | None, patterns: Sequence[str]) -> bool:
    """Whether a ``Host`` or ``Origin`` value is one of ``patterns``; ``"name:*"`` is ``name`` on any port
    (its default one included)."""
    if not value:
        return False
    for pattern in patterns:
        if value == pattern:
            return True
        if pattern.endswith(":*") and (value == pattern[:-2] or _port_of(value, pattern[:-1])):
            return True
    return False


def _port_of(value: str, prefix: str) -> bool:
    """Whether ``value`` is ``prefix`` and a port number: ``localhost:1.evil.example`` is not ``localhost:*``."""
    port = value[len(prefix) :]
    return value.startswith(prefix) and port.isascii() and port.isdigit() and len(port) <= 5


async def stays_connected() -> Message:
    """What a request the server makes for itself receives after its body: a client that never leaves."""
    while True:
        await anyio.sleep_forever()


def watch(receive: Receive, left: AbortController | None, *, first: bytes | None) -> Receive:
    """The request's ``receive``: ``first`` (the body already read) once, then the client's own messages.

    ``left`` is aborted when the client disconnects: the run serving the request stops, and
    a confirmation waiting on that client stops waiting.
    """
    pending = first

    async def watched() -> Message:
        nonlocal pending
        if pending is not None:
            message: Message = {"type": "http.request", "body": pending, "more_body": False}
            pending = None
            return message
        message = await receive()
        if message["type"] == "http.disconnect" and left is not None:
            left.abort(CLIENT_LEFT)
        return message

    return watched


def releasing(send: Send, release: Callable[[], None]) -> Send:
    """A ``send`` that calls ``release`` just before the response's last byte leaves.

    The client may send its next request the moment it has the answer, while the SDK is
    still unwinding: what the answer ends must be over before the client can see it.
    """

    async def releasing(message: Message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            release()
        await send(message)

    return releasing


class Answered:
    """A ``send`` that remembers how far the response got, to finish what the SDK left open.

    It lets one response through, whole, and nothing after it: the SDK may try to answer
    again once its answer went out (a 500 after a 202, when a DELETE closed the connection's
    streams in between), which the HTTP server would take for a broken app, and close the
    client's keep-alive connection over. A second answer begun while the first is still
    being sent is held back whole, its body too, so it is never read as the end of the
    first. What it holds back is logged for a developer.
    """

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.finished = False
        self._second = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start" and self.started:
            self._second = True
        if self.finished or self._second:
            logger.debug("dropped %s (status %s): this request was answered", message["type"], message.get("status"))
            return
        if message["type"] == "http.response.start":
            self.started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.finished = True
        await self._send(message)

    async def finish(self, status: int = 400, message: str = NO_REPLAY) -> None:
        """Make sure the client got a whole response: ``status`` with ``message`` if none began, else
        the end of the one that did.

        The SDK may return without answering (a GET asking to replay events, which this
        server does not keep) or stop midway (its connection closed by a DELETE or an
        eviction racing this request): either is a 4xx or a short stream, never a 500.
        """
        if not self.started:
            await send_error(self, status, message)
        elif not self.finished:
            self.finished = True
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})


def message_id(body: bytes | None) -> int | str | None:
    """The JSON-RPC id of the request in ``body``; ``None`` for a notification or anything unreadable.

    Only integer and string ids make a request; the SDK takes anything else for a notification.
    """
    if not body:
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # the SDK answers malformed JSON itself
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    identifier = message.get("id")
    if isinstance(identifier, bool) or not isinstance(identifier, int | str):
        return None
    return identifier


def request_id(body: bytes | None) -> str | None:
    """The key the SDK files a request's answer under (``str`` of its id), ``None`` if not a request.

    The SDK keys by ``str(id)``, so ``1`` and ``"1"`` are one slot there and must be one here.
    """
    identifier = message_id(body)
    return None if identifier is None else str(identifier)


def error_body(
    message: str, *, code: int = -32600, echo: int | str | None = None, data: dict[str, object] | None = None
) -> bytes:
    """A JSON-RPC error (``code``, invalid request by default) answering request ``echo`` (``None``: no
    request). It echoes nothing else of the request but what ``data`` holds."""
    error: dict[str, object] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": echo, "error": error}).encode()


async def send_error(
    send: Send,
    status: int,
    message: str,
    *,
    extra: list[tuple[bytes, bytes]] | None = None,
    code: int = -32600,
    echo: int | str | None = None,
    data: dict[str, object] | None = None,
) -> None:
    """Answer with :func:`error_body` and an HTTP status."""
    body = error_body(message, code=code, echo=echo, data=data)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
