"""Upstream MCP servers for the tests, written with the official SDK's low-level ``Server``.

``Upstream(profile)`` holds one server's tools and what it saw (calls, cancellations), so an
in-process HTTP test reads it directly. The same profiles run over stdio as a script:
``python servers.py PROFILE`` (``hang``: read stdin and never answer ``initialize``).

Profiles: ``basic`` (one tool per behaviour a test needs), ``names`` (hostile names),
``many`` (1,000 tools, paged), ``too_many`` (2,001 tools), ``endless`` (a listing that
never ends).
"""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

HOSTILE_NAMES = (
    "",
    "x" * 500,
    "日本語ツール",
    "résumé",
    "class",
    "print",
    "json",
    "os.path.join",
    "a/b/c",
    "list-issues",
    "list_issues",
    "issues",
    "issues.list",
    "a..b",
    "1st",
    "__init__",
    "/",
    "ﬁle",
)
PAGE_SIZE = 100
ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
ADD_OUTPUT = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}
NOTHING = {"type": "object", "properties": {}}


def tool(name: str, schema: dict[str, Any] = NOTHING, **fields: Any) -> types.Tool:
    return types.Tool(name=name, input_schema=schema, **fields)


def canary_number() -> int:
    """The ``CANARY_NUMBER`` env value as a number (the digits a server is given as a secret)."""
    return int(os.environ.get("CANARY_NUMBER", "0"))


def numbers(form: str) -> types.CallToolResult:
    """``CANARY_NUMBER`` sent back in every form a JSON number, a key or a text can take."""
    n, written = canary_number(), os.environ.get("CANARY_NUMBER", "0")
    if form in ("error", "long_error"):
        said = f"quota {abs(n):.13e} exceeded" + (" and so on" * 300_000 if form == "long_error" else "")
        return types.CallToolResult(content=[types.TextContent(text=said)], is_error=True)
    if form == "text":
        words = f"code {abs(n) / 10**20!r} and {written}"
        return text(f'{{"exponent": {n:.13e}, "negative": -{abs(n)}, "words": "{words}", "grouped": "{abs(n):,}"}}')
    structured = {
        "int": n,
        "negative": -n,
        "float": float(n),
        "tiny": n / 10**20,
        "inside": int(f"1{abs(n)}9"),
        written: "a key",
        "nested": [[{"n": n}]],
        "small": 12,
        "flag": True,
        "pi": 3.14159,
    }
    return types.CallToolResult(content=[types.TextContent(text="numbers")], structured_content=structured)


def basic_tools() -> list[types.Tool]:
    read_only = types.ToolAnnotations(read_only_hint=True)
    return [
        tool("echo", ECHO_SCHEMA, description="Echo the text back.", annotations=read_only),
        tool(
            "add",
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
            description="Add two integers.",
            output_schema=ADD_OUTPUT,
            annotations=read_only,
        ),
        tool(
            "delete_everything",
            description="Delete every record.",
            annotations=types.ToolAnnotations(destructive_hint=True),
        ),
        tool(
            "hinted_false",
            description="Says it is not read-only.",
            annotations=types.ToolAnnotations(read_only_hint=False),
        ),
        tool("fail", ECHO_SCHEMA, description="Report an error in the result (isError)."),
        tool("protocol_error", description="Answer with a JSON-RPC error."),
        tool("slow", description="Wait until cancelled."),
        tool("cancelled", description="How many calls were cancelled so far.", annotations=read_only),
        tool("media", description="One block of every content type."),
        tool("texts", description="Several text blocks."),
        tool("empty", description="No content at all."),
        tool("huge", {"type": "object", "properties": {"chars": {"type": "integer"}}}, description="A long text."),
        tool("deep", description="Text that is deeply nested JSON."),
        tool("whoami", description=f"Shows its configuration ({os.environ.get('CANARY_ENV', 'none')})."),
        tool(
            "numbers",
            {
                "type": "object",
                "properties": {"form": {"type": "string"}, "limit": {"type": "integer", "default": canary_number()}},
            },
            description=f"Sends CANARY_NUMBER back as numbers; counts to {canary_number():.13e}.",
        ),
        tool("change_tools", description="Add a tool and tell the client the list changed."),
        tool("crash", description="End the server process at once."),
        tool(
            "broken",
            {"type": "object", "properties": {"x": {"type": 5}}},
            description="Its input schema is not a schema.",
        ),
    ]


class Upstream:
    """One upstream server's tools and what it has seen."""

    def __init__(self, profile: str = "basic") -> None:
        self.profile = profile
        self.tools = {
            "basic": basic_tools,
            "names": lambda: [tool(name, description=f"tool number {i}") for i, name in enumerate(HOSTILE_NAMES)],
            "many": lambda: [tool(f"tool_{i:04}", description=f"Tool {i}.") for i in range(1_000)],
            "too_many": lambda: [tool(f"tool_{i:04}") for i in range(2_001)],
            "endless": lambda: [tool("only")],
        }[profile]()
        self.calls: list[str] = []
        self.cancelled = 0
        self.slow_started = anyio.Event()
        self.slow_cancelled = anyio.Event()

    def server(self) -> Server[Any]:
        return Server("test-upstream", version="1", on_list_tools=self.list_tools, on_call_tool=self.call_tool)

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        if self.profile == "endless":
            return types.ListToolsResult(tools=self.tools, next_cursor=str(start + 1))
        page = self.tools[start : start + PAGE_SIZE]
        more = start + PAGE_SIZE < len(self.tools)
        return types.ListToolsResult(tools=page, next_cursor=str(start + PAGE_SIZE) if more else None)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name, arguments = params.name, params.arguments or {}
        self.calls.append(name)
        if self.profile != "basic":
            return text(name)
        if name == "echo":
            return text(arguments["text"])
        if name == "add":
            total = arguments["a"] + arguments["b"]
            return types.CallToolResult(content=[types.TextContent(text=str(total))], structured_content={"sum": total})
        if name == "fail":
            return types.CallToolResult(content=[types.TextContent(text=arguments["text"])], is_error=True)
        if name == "protocol_error":
            raise MCPError(code=-32603, message="the upstream broke")
        if name == "slow":
            self.slow_started.set()
            try:
                await anyio.sleep_forever()
            finally:
                self.cancelled += 1
                self.slow_cancelled.set()
        if name == "cancelled":
            return text(str(self.cancelled))
        if name == "media":
            return types.CallToolResult(content=media())
        if name == "texts":
            return types.CallToolResult(content=[types.TextContent(text=t) for t in ("1", "two", '{"a": [1, 2]}')])
        if name == "empty":
            return types.CallToolResult(content=[])
        if name == "huge":
            return text("y" * arguments.get("chars", 2_000_000))
        if name == "deep":
            return text("[" * 100_000 + "]" * 100_000)
        if name == "numbers":
            return numbers(arguments.get("form", "structured"))
        if name == "whoami":
            request = ctx.request
            header = request.headers.get("authorization", "") if request is not None else ""
            said = f"env={os.environ.get('CANARY_ENV', '')} header={header}"
            return types.CallToolResult(content=[types.TextContent(text=said)], structured_content={"said": said})
        if name == "change_tools":
            self.tools.append(tool("added_later", description="Appeared after a change."))
            # On the request's own stream, so it arrives before the answer whatever the transport.
            await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
            return text("changed")
        if name == "crash":
            os._exit(3)
        return text(f"called {name}")


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=value)])


def media() -> list[types.ContentBlock]:
    ten_bytes = base64.b64encode(bytes(range(10))).decode()
    return [
        types.TextContent(text="caption"),
        types.ImageContent(data=ten_bytes, mime_type="image/png"),
        types.AudioContent(data=base64.b64encode(b"abcd").decode(), mime_type="audio/wav"),
        types.EmbeddedResource(
            resource=types.TextResourceContents(uri="file:///a.txt", mime_type="text/plain", text="A")
        ),
        types.EmbeddedResource(resource=types.BlobResourceContents(uri="file:///b.bin", blob=ten_bytes)),
        types.ResourceLink(uri="file:///c.txt", name="c", mime_type="text/plain"),
    ]


async def serve_stdio(profile: str) -> None:
    from mcp.server.stdio import stdio_server

    if profile == "hang":
        # Read what the client sends and never answer, not even initialize.
        stdin = anyio.wrap_file(sys.stdin)
        async for _line in stdin:
            pass
        return
    server = Upstream(profile).server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve_stdio, sys.argv[1])
