"""A message from an upstream server past MAX_MESSAGE_BYTES is dropped before it is kept, on every transport.

Its call fails with advice the program can read (or, when the message does not show which
call it answered, waits for its deadline), the session goes on, and the next call works.
"""

from __future__ import annotations

import gzip
import logging
import sys
import tracemalloc
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mycelium import MyceliumSourceError, OperationEvidence, Runtime
from mycelium.mcp import mcp_source
from mycelium.mcp._upstream import MAX_MESSAGE_BYTES
from mycelium.mcp._upstream._stdio import stdio_transport
from mycelium.sandbox.monty import MontySandbox
from tests.support.loopback import serve_asgi

from .conftest import RAW_SERVER, children, http_served, raw_source, runtime
from .servers import Upstream

ADVICE = f"the server sent a message over {MAX_MESSAGE_BYTES} bytes, the most read from an MCP server"
FLOOD = 2 * MAX_MESSAGE_BYTES + 12_345


def flooding(shape: str, size: int = FLOOD) -> str:
    """A program that calls ``flood`` (catching what it raises), then ``echo`` on the same session."""
    return (
        f"try:\n    said = await up.flood(bytes={size}, shape={shape!r})\n"
        "except RuntimeError as e:\n    said = str(e)\n"
        "return [said, await up.echo(text='still here')]"
    )


@pytest.mark.parametrize("shape", ["python", "typescript"])
async def test_a_stdio_answer_past_the_bound_fails_its_call_with_advice_and_the_session_goes_on(
    shape: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mycelium")
    before = children()
    async with runtime(raw_source()) as rt, rt.lease() as lease:
        result = await lease.execute_tool.run(flooding(shape))
        assert len(children() - before) == 1  # the same child answered both calls
    said, after = result.value  # type: ignore[misc]
    advice = "it was dropped unread. Ask for less (a narrower query, a page, a limit)."
    assert said == f"up.flood failed: {ADVICE}; {advice}"
    assert after == "still here"
    (logged,) = [r.getMessage() for r in caplog.records if "dropped unread" in r.getMessage()]
    assert f"over the {MAX_MESSAGE_BYTES}-byte bound" in logged
    assert "the call it answered fails" in logged
    assert "xxx" not in logged  # sizes only, never what the server sent
    assert children() == before


@pytest.mark.parametrize("shape", ["notification", "request"])
async def test_a_message_of_the_servers_own_past_the_bound_is_dropped_and_the_call_gets_its_answer(shape: str) -> None:
    async with runtime(raw_source()) as rt, rt.lease() as lease:
        result = await lease.execute_tool.run(flooding(shape))
    # A request of the server's carries an id too: it is not taken for the call's answer.
    assert result.value == ["after the flood", "still here"]


async def test_an_answer_past_the_bound_that_hides_its_id_leaves_its_call_to_its_timeout_and_the_next_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="mycelium")
    errors: list[OperationEvidence] = []
    rt = Runtime(sources=[raw_source(call_timeout_ms=1_000)], sandbox=MontySandbox(), on_operation_error=errors.append)
    async with rt, rt.lease() as lease:
        result = await lease.execute_tool.run(flooding("hidden"))
    said, after = result.value  # type: ignore[misc]
    assert said.startswith("up.flood failed on the host (reference ref-")
    assert "timed out" in str(errors[0].exception)
    assert after == "still here"
    assert any("showed no call it answers" in r.getMessage() for r in caplog.records)


async def test_a_tools_list_past_the_bound_fails_the_acquisition_naming_the_bound() -> None:
    async with runtime(raw_source("huge_listing")) as rt:
        with pytest.raises(MyceliumSourceError) as caught:
            await rt.acquire()
    assert f"the server sent a message over {MAX_MESSAGE_BYTES} bytes" in str(caught.value.__cause__)


async def test_a_line_many_times_the_bound_is_dropped_without_the_host_holding_it() -> None:
    size = 10 * MAX_MESSAGE_BYTES
    async with Client(stdio_transport(sys.executable, [RAW_SERVER], None, None, "raw"), mode="legacy") as client:
        tracemalloc.start()
        try:
            with pytest.raises(MCPError, match=ADVICE.split(",")[0]):
                await client.call_tool("flood", {"bytes": size, "shape": "typescript"})
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        after = await client.call_tool("echo", {"text": "still here"})
    # At most the bound and a read's worth are held, never the line: a tenth of its size here.
    assert peak < MAX_MESSAGE_BYTES + 1_048_576
    assert after.content[0].text == "still here"  # type: ignore[union-attr]


async def test_an_http_json_body_past_the_bound_fails_its_call_with_advice_and_the_session_goes_on() -> None:
    async with http_served(Upstream(), json_response=True) as url, runtime(mcp_source("up", url=url)) as rt:
        async with rt.lease() as lease:
            program = (
                f"try:\n    await up.huge(chars={FLOOD})\nexcept RuntimeError as e:\n    said = str(e)\n"
                "return [said, await up.echo(text='still here')]"
            )
            result = await lease.execute_tool.run(program)
    said, after = result.value  # type: ignore[misc]
    assert said.startswith(f"up.huge failed: {ADVICE}")
    assert after == "still here"


class Compressing:
    """ASGI middleware that gzips every JSON body whatever the client asked for, and records what it asked."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.accepted: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.accepted.append(dict(scope["headers"]).get(b"accept-encoding", b"").decode())
        start: dict[str, Any] = {}
        body = bytearray()

        async def compress(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                if (b"content-type", b"application/json") not in message["headers"]:
                    await send(message)  # an event stream goes through as it comes
                    return
                start.update(message)
                return
            if not start or message["type"] != "http.response.body":
                await send(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body"):
                return
            packed = gzip.compress(bytes(body))
            headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
            headers += [(b"content-encoding", b"gzip"), (b"content-length", str(len(packed)).encode())]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": packed})

        await self.app(scope, receive, compress)


# Whatever the host's own headers ask for: a compressed body would be refused.
@pytest.mark.parametrize("headers", [{}, {"Accept-Encoding": "gzip, br"}])
async def test_a_server_that_compresses_though_asked_not_to_is_refused_saying_to_serve_uncompressed(
    headers: dict[str, str],
) -> None:
    app = Compressing(Upstream().server().streamable_http_app(host="127.0.0.1", json_response=True))
    async with serve_asgi(app) as base, runtime(mcp_source("up", url=f"{base}/mcp", headers=headers)) as rt:
        with pytest.raises(MyceliumSourceError) as caught:
            await rt.acquire()
    said = str(caught.value.__cause__)
    assert "the server compressed its answer (gzip) though asked not to" in said
    assert "serve this client uncompressed" in said
    assert set(app.accepted) == {"identity"}
