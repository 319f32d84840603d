"""Raw Streamable HTTP for the hostile tests: requests built by hand, answers read as they came.

The SDK client only sends well-formed traffic; these helpers let a test send exactly the
bytes and headers it means to (a missing token, a forged session id, a reply to an
elicitation) and read the status, headers and JSON-RPC messages of the answer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import pytest

PROTOCOL_VERSION = "2025-11-25"
"""The handshake revision these raw exchanges speak (the newest one)."""
ACCEPT = "application/json, text/event-stream"
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}
FORM_ELICITATION: dict[str, Any] = {"elicitation": {"form": {}}}
ANSWER_WITHIN_S = 10.0
"""A bound on every raw exchange: a server that never answers fails the test instead of hanging it."""


def headers(
    token: str | None = "token-alice",
    *,
    authorization: str | None = None,
    session: str | None = None,
    version: str | None = PROTOCOL_VERSION,
    **extra: str,
) -> dict[str, str]:
    """The headers of an ordinary client request; ``extra`` uses ``_`` for ``-`` in names.

    ``authorization`` is sent verbatim instead of ``Bearer <token>``; with neither, none is sent.
    """
    sent = {"accept": ACCEPT, "content-type": "application/json"}
    if authorization is not None:
        sent["authorization"] = authorization
    elif token is not None:
        sent["authorization"] = f"Bearer {token}"
    if session is not None:
        sent["mcp-session-id"] = session
    if version is not None:
        sent["mcp-protocol-version"] = version
    sent.update({name.replace("_", "-"): value for name, value in extra.items()})
    return sent


def initialize(request_id: int | str = 1, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """An ``initialize`` request for the pinned protocol version."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "raw-test-client", "version": "0"},
        },
    }


def call_execute(code: str, request_id: int | str = 2) -> dict[str, Any]:
    """A ``tools/call`` of ``execute`` running ``code``."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "execute", "arguments": {"code": code}},
    }


REQUEST_KINDS = ("initialize", "tools-call", "notification", "reply", "get-stream", "delete")
"""Every kind of HTTP request a client sends: each must be authenticated on its own."""


MODERN = "2026-07-28"


def modern_call(
    code: str,
    *,
    request_id: int | str = 1,
    capabilities: dict[str, Any] | None = FORM_ELICITATION,
    request_state: str | None = None,
    input_responses: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``tools/call`` of ``execute`` as 2026-07-28 sends it: everything about the client in ``_meta``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
    }
    params: dict[str, Any] = {"name": "execute", "arguments": {"code": code}, "_meta": meta}
    if request_state is not None:
        params["requestState"] = request_state
    if input_responses is not None:
        params["inputResponses"] = input_responses
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def modern_headers(token: str | None = "token-alice", **extra: str) -> dict[str, str]:
    """The headers of a ``tools/call`` of ``execute`` over 2026-07-28, which repeat the routing in the body."""
    return headers(token, version=MODERN, mcp_method="tools/call", mcp_name="execute", **extra)


def request_of(kind: str, session: str, code: str = "return await notes.search()") -> tuple[str, str | None, Any]:
    """(HTTP method, session id to present, JSON body) of one request of ``kind`` on ``session``.

    ``initialize`` opens a connection, so it presents no session id.
    """
    match kind:
        case "initialize":
            return "POST", None, initialize(1, FORM_ELICITATION)
        case "tools-call":
            return "POST", session, call_execute(code, 7)
        case "notification":
            return "POST", session, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}
        case "reply":  # the client's answer to a request of the server's
            return "POST", session, {"jsonrpc": "2.0", "id": 0, "result": {"action": "decline"}}
        case "get-stream":
            return "GET", session, None
        case "delete":
            return "DELETE", session, None
    raise ValueError(f"unknown request kind {kind!r}")


def messages(body: str) -> list[Any]:
    """The JSON-RPC messages of an answer: the ``data:`` lines of an event stream, or one JSON body."""
    stripped = body.strip()
    if not stripped:
        return []
    if stripped.startswith(("{", "[")):
        return [json.loads(stripped)]
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:") and line[5:].strip()]


@dataclass
class Answer:
    """What the server sent back: status, headers and body text."""

    status: int
    headers: httpx2.Headers
    text: str

    def messages(self) -> list[Any]:
        return messages(self.text)

    def result(self) -> Any:
        """The ``result`` of the one JSON-RPC response in this answer."""
        [response] = [message for message in self.messages() if "result" in message or "error" in message]
        assert "result" in response, response
        return response["result"]


async def send(
    http: httpx2.AsyncClient,
    method: str,
    url: str,
    *,
    sent: dict[str, str],
    body: Any = None,
    content: bytes | AsyncIterator[bytes] | None = None,
) -> Answer:
    """Send one request and read its whole answer; a GET event stream that opens is closed at once."""
    payload = content if content is not None else (None if body is None else json.dumps(body).encode())
    with anyio.fail_after(ANSWER_WITHIN_S):
        async with http.stream(method, url, headers=sent, content=payload) as response:
            streaming = method == "GET" and response.headers.get("content-type", "").startswith("text/event-stream")
            text = "" if streaming else (await response.aread()).decode("utf-8", "replace")
            return Answer(response.status_code, response.headers, text)


async def open_session(
    http: httpx2.AsyncClient, url: str, token: str = "token-alice", capabilities: dict[str, Any] | None = None
) -> str:
    """Initialize a connection by hand and return its session id."""
    opened = await send(http, "POST", url, sent=headers(token, version=None), body=initialize(1, capabilities))
    assert opened.status == 200, (opened.status, opened.text)
    session = opened.headers["mcp-session-id"]
    notified = await send(http, "POST", url, sent=headers(token, session=session), body=INITIALIZED)
    assert notified.status == 202, (notified.status, notified.text)
    return session


async def exchange(
    http: httpx2.AsyncClient,
    url: str,
    kind: str,
    session: str,
    *,
    token: str | None = "token-alice",
    authorization: str | None = None,
    version: str | None = PROTOCOL_VERSION,
    code: str = "return await notes.search()",
    **extra: str,
) -> Answer:
    """Send one request of ``kind`` (see :data:`REQUEST_KINDS`) with the credentials given."""
    method, presented, body = request_of(kind, session, code)
    sent = headers(token, authorization=authorization, session=presented, version=version, **extra)
    return await send(http, method, url, sent=sent, body=body)


async def request(
    http: httpx2.AsyncClient, url: str, token: str, session: str, method: str, request_id: int = 1
) -> Answer:
    """One request without params (``tools/list``, ``ping``) on a connection."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": method}
    return await send(http, "POST", url, sent=headers(token, session=session), body=body)


async def execute(http: httpx2.AsyncClient, url: str, token: str, session: str, code: str) -> tuple[int, Any]:
    """Run ``code`` on a connection: the status, and the tool result's text (JSON-decoded when it is JSON)."""
    answer = await send(http, "POST", url, sent=headers(token, session=session), body=call_execute(code))
    if answer.status != 200:
        return answer.status, answer.text
    text = answer.result()["content"][0]["text"]
    try:
        return answer.status, json.loads(text)
    except ValueError:
        return answer.status, text


@contextmanager
def capture_every_log(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Capture DEBUG and up from mycelium, the MCP SDK and uvicorn.

    Enter it once the server runs: uvicorn configures its loggers when it starts (they do
    not propagate, so the capturing handler is attached to them directly).
    """
    caplog.set_level(logging.DEBUG, logger="mycelium")
    caplog.set_level(logging.DEBUG, logger="mcp")
    uvicorn = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")]
    levels = [logger.level for logger in uvicorn]
    handled = [logger for logger in uvicorn if not logger.propagate]
    for logger in uvicorn:
        logger.setLevel(logging.DEBUG)
    for logger in handled:
        logger.addHandler(caplog.handler)
    try:
        yield
    finally:
        for logger in handled:
            logger.removeHandler(caplog.handler)
        for logger, level in zip(uvicorn, levels, strict=True):
            logger.setLevel(level)


def log_text(records: Iterable[logging.LogRecord]) -> str:
    """Every captured line as an operator would read it, tracebacks included."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return "\n".join(formatter.format(record) for record in records)
