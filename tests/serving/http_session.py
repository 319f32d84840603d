"""Raw Streamable HTTP for tests that need what an SDK client hides: session ids, restarts, dropped connections."""

from __future__ import annotations

import json
from typing import Any

import httpx2

PROTOCOL = "2025-11-25"
ACCEPT = "application/json, text/event-stream"


def headers(token: str | None, session_id: str | None = None) -> dict[str, str]:
    sent = {"Accept": ACCEPT, "Content-Type": "application/json", "MCP-Protocol-Version": PROTOCOL}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    if session_id is not None:
        sent["Mcp-Session-Id"] = session_id
    return sent


def messages(response: httpx2.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response, whether it came as JSON or as an SSE stream."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return [response.json()]
    return [
        json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()
    ]


def initialize_request(*, elicitation: bool = False) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"elicitation": {"form": {}}} if elicitation else {}
    params = {"protocolVersion": PROTOCOL, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "0"}}
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}


async def initialize(http: httpx2.AsyncClient, url: str, token: str, *, elicitation: bool = False) -> str:
    """Open a connection the way a client does; return its session id."""
    response = await http.post(url, json=initialize_request(elicitation=elicitation), headers=headers(token))
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=note, headers=headers(token, session_id))).status_code == 202
    return session_id


async def call(
    http: httpx2.AsyncClient, url: str, token: str, session_id: str, method: str, params: dict[str, Any], id: int = 1
) -> tuple[int, dict[str, Any] | None]:
    """One request on a connection: the HTTP status and the JSON-RPC reply, if one came."""
    body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
    response = await http.post(url, json=body, headers=headers(token, session_id))
    replies = [message for message in messages(response) if message.get("id") == id]
    return response.status_code, replies[0] if replies else None


async def execute(http: httpx2.AsyncClient, url: str, token: str, session_id: str, code: str) -> tuple[int, Any]:
    """Run ``code`` on a connection: the HTTP status and the tool result's first text, JSON-decoded when it is JSON."""
    params = {"name": "execute", "arguments": {"code": code}}
    status, reply = await call(http, url, token, session_id, "tools/call", params)
    if reply is None or "result" not in reply:
        return status, reply
    text = reply["result"]["content"][0]["text"]
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text
