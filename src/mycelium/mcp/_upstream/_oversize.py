"""How big one message from an upstream server may be, and how a call whose answer was bigger is told.

The bound holds on every transport before a message is kept whole: a stdio line
(:mod:`._lines`), an HTTP body (:mod:`._bodies`) and a server-sent event (the SDK's own
``max_sse_event_size``). Each transport fails the call such an answer was for with an
``MCPError`` whose message holds the same words (or, for an event, the HTTP client's
own); :func:`_oversized` tells those apart from a server's own errors, and the program
is told to ask for less, as for a result past ``MAX_RESULT_CHARS``.
"""

from __future__ import annotations

from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import INTERNAL_ERROR, ErrorData, JSONRPCError

MAX_MESSAGE_BYTES = 4 * 1_048_576
"""The most bytes of one message from an upstream server: a stdio line, an HTTP body, a server-sent event.

Above :data:`~mycelium.mcp._upstream.MAX_RESULT_CHARS` with room for the JSON-RPC envelope,
escapes and a result sent twice (``structuredContent`` and its text), so a result the
host would accept arrives whole and one past the result bound is refused with its size.
"""

_SAID = f"the server sent a message over {MAX_MESSAGE_BYTES} bytes"
_SSE_SAID = f"exceeded the {MAX_MESSAGE_BYTES} byte limit"  # httpx2's words for an event past max_event_size
_OVERSIZED_ADVICE = (
    f"{_SAID}, the most read from an MCP server; it was dropped unread. "
    "Ask for less (a narrower query, a page, a limit)."
)
"""What the program reads when a call's answer was past :data:`MAX_MESSAGE_BYTES`."""


def _oversized(error: MCPError) -> bool:
    """Whether ``error`` is a transport's refusal of an answer past :data:`MAX_MESSAGE_BYTES`.

    A server could send these words itself: the program then reads this host's advice, never
    the server's text, so a look-alike gains it nothing.
    """
    return _SAID in error.message or _SSE_SAID in error.message


def _refusal(request_id: int | str) -> SessionMessage:
    """The error answer that fails the call ``request_id`` in place of the message too big to read."""
    return SessionMessage(
        JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INTERNAL_ERROR, message=_SAID))
    )
