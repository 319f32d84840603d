"""A host of its own serving ``create_mcp`` and ``approvals_app``: a body that stops halfway is refused in time.

The server and the page bound the bodies they read themselves, whatever HTTP server runs them
(here a plain uvicorn, without the bounds ``mycelium serve`` adds on each request's head). Each
test sends part of a body on a raw socket (:mod:`tests.support.wire`) and waits for the answer
and the close, never for time to pass; time is checked only as "within the bound plus slack".
"""

from __future__ import annotations

import json
import time

from mycelium import Suspensions
from mycelium.mcp import approvals_app
from tests.support.wire import Wire, wire

from . import raw_http as raw
from .conftest import served

BOUND_MS = 300
SLACK_S = 5.0
"""What a loaded machine may add to the bound before the server acts on it."""


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].removesuffix("/mcp"))


async def half_sent(connection: Wire, path: str, headers: dict[str, str], body: bytes) -> None:
    """Send a request's head and the first half of its body, then stall."""
    lines = [f"POST {path} HTTP/1.1", f"host: {connection.host}", f"content-length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    await connection.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body[: len(body) // 2])


async def test_a_body_that_stops_halfway_gets_408_saying_what_to_do_and_its_connection_closes() -> None:
    async with served(body_timeout_ms=BOUND_MS) as s, wire(port_of(s.url)) as connection:
        began = time.monotonic()
        await half_sent(connection, "/mcp", raw.modern_headers(), json.dumps(raw.modern_call("return 1")).encode())
        answer = await connection.answer()
        assert await connection.closed()
        waited = time.monotonic() - began
    assert (answer.status, answer.headers["connection"]) == (408, "close")
    told = answer.json()["error"]["message"]
    assert told == "the request body did not arrive within 0.3 s; send the whole request at once"
    assert waited <= BOUND_MS / 1000 + SLACK_S


async def test_the_approvals_pages_form_that_stops_halfway_gets_408_and_its_connection_closes() -> None:
    page = approvals_app(Suspensions(), approver_token="approver-" + "p" * 32, body_timeout_ms=BOUND_MS)
    async with served(beside={"/approvals": page}) as s, wire(port_of(s.url)) as connection:
        form = {"content-type": "application/x-www-form-urlencoded"}
        await half_sent(connection, "/approvals/login", form, b"token=" + b"t" * 40)
        answer = await connection.answer()
        assert await connection.closed()
    assert (answer.status, answer.headers["connection"]) == (408, "close")
    assert "The form took too long to arrive: send it again." in answer.body.decode()
