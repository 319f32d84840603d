"""A stdio MCP server written by hand (stdlib only), so a test controls every byte of every line it sends.

``python raw_server.py`` answers ``initialize``, ``tools/list`` and ``tools/call`` of two tools:
``echo(text)``, and ``flood(bytes, shape)``, which sends one line of about ``bytes`` bytes
before (or as) its answer. ``shape`` says what that line is:

- ``python``: the answer, ``id`` first (``{"jsonrpc", "id", "result"}``, the Python SDK's order);
- ``typescript``: the answer, ``id`` last (``{"result", "jsonrpc", "id"}``, the TypeScript SDK's);
- ``hidden``: the answer with its ``id`` in the middle, where a reader that keeps only the
  line's ends cannot see it;
- ``notification``: a ``notifications/message`` of that size, then a small answer;
- ``request``: a server-to-client request of that size carrying the same id as the call, then
  a small answer.

``python raw_server.py huge_listing`` answers ``tools/list`` with one line of 8 MiB instead.
The big part is written in pieces of 1 MiB, so the server never holds it whole.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

PIECE = 1_048_576
TOOLS = [
    {
        "name": "echo",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "flood",
        "inputSchema": {
            "type": "object",
            "properties": {"bytes": {"type": "integer"}, "shape": {"type": "string"}},
            "required": ["bytes", "shape"],
        },
    },
]


def dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def filler(size: int) -> Iterator[str]:
    """``size`` characters of ``x``, a piece at a time."""
    while size > 0:
        yield "x" * min(size, PIECE)
        size -= PIECE


def send(*parts: str | Iterator[str]) -> None:
    out = sys.stdout
    for part in parts:
        for piece in [part] if isinstance(part, str) else part:
            out.write(piece)
    out.write("\n")
    out.flush()


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def flood(request_id: int | str, size: int, shape: str) -> None:
    rid = dumps(request_id)
    big = filler(size)
    content = ('{"content":[{"type":"text","text":"', big, '"}]}')
    if shape == "python":
        send(f'{{"jsonrpc":"2.0","id":{rid},"result":', *content, "}")
    elif shape == "typescript":
        send('{"result":', *content, f',"jsonrpc":"2.0","id":{rid}}}')
    elif shape == "hidden":
        send('{"result":{"content":[]},"padding":"', big, f'","id":{rid},"more":"', "y" * 600, '","jsonrpc":"2.0"}')
    elif shape in ("notification", "request"):
        head = '{"jsonrpc":"2.0",' + (f'"id":{rid},' if shape == "request" else "")
        method = "sampling/createMessage" if shape == "request" else "notifications/message"
        send(head, f'"method":"{method}","params":{{"level":"info","data":"', big, '"}}')
        send(dumps({"jsonrpc": "2.0", "id": request_id, "result": text_result("after the flood")}))
    else:
        raise ValueError(shape)


def answer(message: dict[str, Any]) -> None:
    method, request_id = message.get("method"), message.get("id")
    if request_id is None or "method" not in message:
        return  # a notification, or the client's answer to a request of ours
    params = message.get("params") or {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"},
        }
    elif method == "tools/list" and sys.argv[1:] == ["huge_listing"]:
        send(f'{{"jsonrpc":"2.0","id":{dumps(request_id)},"result":{{"tools":[],"padding":"', filler(8 * PIECE), '"}}')
        return
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") == "flood":
        arguments = params["arguments"]
        flood(request_id, arguments["bytes"], arguments["shape"])
        return
    elif method == "tools/call":
        result = text_result(params["arguments"]["text"])
    else:
        result = {}
    send(dumps({"jsonrpc": "2.0", "id": request_id, "result": result}))


def main() -> None:
    for line in sys.stdin:
        answer(json.loads(line))


if __name__ == "__main__":
    main()
