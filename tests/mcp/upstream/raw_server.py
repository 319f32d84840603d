"""An MCP server written by hand (stdlib only), so a test or a bench controls every byte of every message it sends.

``python raw_server.py`` serves over stdio; ``python raw_server.py http`` serves Streamable
HTTP on 127.0.0.1 (each answer one JSON body, no session), printing ``port N`` first. It
answers ``initialize``, ``tools/list`` and ``tools/call`` of two tools: ``echo(text)``, and
``flood(bytes, shape)``, which sends one message of about ``bytes`` bytes before (or as) its
answer. ``shape`` says what that message is:

- ``python``: the answer, ``id`` first (``{"jsonrpc", "id", "result"}``, the Python SDK's order);
- ``typescript``: the answer, ``id`` last (``{"result", "jsonrpc", "id"}``, the TypeScript SDK's);
- ``hidden``: the answer with its ``id`` in the middle, where a reader that keeps only the
  line's ends cannot see it;
- ``notification``: a ``notifications/message`` of that size, then a small answer (stdio only);
- ``request``: a server-to-client request of that size carrying the same id as the call, then
  a small answer (stdio only).

``python raw_server.py huge_listing`` answers ``tools/list`` with one line of 8 MiB instead.
The big part is written in pieces of 1 MiB, so the server never holds it whole.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, BinaryIO

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


class Filler:
    """``size`` characters of ``x`` in a message, written a piece at a time."""

    def __init__(self, size: int) -> None:
        self.size = size

    def pieces(self) -> Iterator[bytes]:
        left = self.size
        while left > 0:
            yield b"x" * min(left, PIECE)
            left -= PIECE


Message = list[str | Filler]
"""One JSON-RPC message, in parts: its text, and the filler in it."""


def dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def size_of(message: Message) -> int:
    return sum(part.size if isinstance(part, Filler) else len(part.encode()) for part in message)


def write(out: BinaryIO, message: Message) -> None:
    for part in message:
        for piece in part.pieces() if isinstance(part, Filler) else [part.encode()]:
            out.write(piece)


def answered(request_id: int | str, result: dict[str, Any]) -> Message:
    return [dumps({"jsonrpc": "2.0", "id": request_id, "result": result})]


def flood(request_id: int | str, size: int, shape: str) -> list[Message]:
    rid = dumps(request_id)
    big = Filler(size)
    content: Message = ['{"content":[{"type":"text","text":"', big, '"}]}']
    if shape == "python":
        return [[f'{{"jsonrpc":"2.0","id":{rid},"result":', *content, "}"]]
    if shape == "typescript":
        return [['{"result":', *content, f',"jsonrpc":"2.0","id":{rid}}}']]
    if shape == "hidden":
        return [['{"result":{"content":[]},"padding":"', big, f'","id":{rid},"more":"{"y" * 600}","jsonrpc":"2.0"}}']]
    if shape in ("notification", "request"):
        head = '{"jsonrpc":"2.0",' + (f'"id":{rid},' if shape == "request" else "")
        method = "sampling/createMessage" if shape == "request" else "notifications/message"
        told = [head, f'"method":"{method}","params":{{"level":"info","data":"', big, '"}}']
        return [told, answered(request_id, {"content": [{"type": "text", "text": "after the flood"}]})]
    raise ValueError(shape)


def answers(message: dict[str, Any], listing: str) -> list[Message]:
    """The messages that answer ``message``: none for a notification or a reply of the client's."""
    method, request_id = message.get("method"), message.get("id")
    if request_id is None or method is None:
        return []
    params = message.get("params") or {}
    if method == "initialize":
        info = {"name": "raw", "version": "1"}
        return [
            answered(
                request_id,
                {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}}, "serverInfo": info},
            )
        ]
    if method == "tools/list" and listing == "huge_listing":
        return [
            [f'{{"jsonrpc":"2.0","id":{dumps(request_id)},"result":{{"tools":[],"padding":"', Filler(8 * PIECE), '"}}']
        ]
    if method == "tools/list":
        return [answered(request_id, {"tools": TOOLS})]
    if method == "tools/call" and params.get("name") == "flood":
        arguments = params["arguments"]
        return flood(request_id, arguments["bytes"], arguments["shape"])
    if method == "tools/call":
        return [answered(request_id, {"content": [{"type": "text", "text": params["arguments"]["text"]}]})]
    return [answered(request_id, {})]


def serve_stdio(listing: str) -> None:
    out = sys.stdout.buffer
    for line in sys.stdin:
        for message in answers(json.loads(line), listing):
            write(out, message)
            out.write(b"\n")
            out.flush()


class Handler(BaseHTTPRequestHandler):
    """One POST, one JSON body (or 202 for a notification); nothing else is served."""

    protocol_version = "HTTP/1.1"  # keep-alive, as a real server's

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        (reply, *_) = answers(message, "") or [None]
        if reply is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(size_of(reply)))
        self.end_headers()
        try:
            write(self.wfile, reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client stopped reading: it refused the body

    def do_GET(self) -> None:
        self.send_response(405)  # no stream of the server's own messages
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # its stderr is the bench's


def serve_http() -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), Handler) as server:
        print(f"port {server.server_address[1]}", flush=True)
        server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        serve_stdio(sys.argv[1] if sys.argv[1:] else "")
