"""Upstream MCP servers as capability sources: every tool of a server, one typed operation each.

``mcp_source(id, url=...)`` (Streamable HTTP) or ``mcp_source(id, command=...)`` (stdio)
is a :class:`~mycelium.CapabilitySource`. An acquisition opens a session with the
official SDK client (or reuses the one still open), initializes it (the 2025-11-25
handshake, which carries list changes and cancellation), pages through ``tools/list`` and
projects the tools as the operations of one module whose id is the source id:

- input schema: the tool's ``inputSchema``, checked on the host before a call leaves, but
  for its regular expressions (``pattern``, ``patternProperties``), which the server checks
  itself (a server's pattern run on the host could take time without bound); output schema:
  its ``outputSchema`` when it has one; description: its description, cut to
  :data:`MAX_DESCRIPTION_CHARS`. Schemas are checked off the event loop, and bounded
  (:data:`MAX_SCHEMA_CHARS` a tool: a larger one is left out, logged;
  :data:`MAX_LISTING_SCHEMA_CHARS` a listing). A ``$ref`` to a URL is never fetched.
- ``access="read"`` exactly when the tool is annotated ``readOnlyHint: true``, else
  ``"write"``; ``confirm=True`` where the host's ``confirm(tool)`` policy says so.
  Annotations are hints from a server the host may not trust: they only label operations,
  and grants stay the host's decision.
- Paths: see :func:`tool_paths`. A tool whose path is not exactly its name has its name
  written at the end of its description, so ``forage.describe`` shows it.

A server's ``notifications/tools/list_changed`` invalidates the snapshot: the next lease
lists again and sees a new revision, while a lease in flight keeps the tools it captured.
Snapshots share the session they were listed on; releasing the last of them closes it (and
ends the stdio child). A session that ends on its own invalidates its snapshots too, and the
next lease connects again.

Calls: ``tools/call`` with the decoded input. The result is ``structuredContent`` when the
server sends it; otherwise each content block becomes a value — text JSON-decoded when it
is JSON, else the text; an image or audio block ``{"type": "image" | "audio", "mimeType":
..., "bytes": <decoded size>}``; an embedded resource ``{"type": "resource", "uri": ...,
"mimeType": ..., "text": ...}`` (a blob gives ``"bytes"`` instead of ``"text"``); a
resource link ``{"type": "resource_link", "uri": ..., "name": ..., "mimeType": ...}``. No
base64 data reaches the guest. One block gives its value, several a list of them, none
``None``. A result whose JSON passes :data:`MAX_RESULT_CHARS` is refused with a
:class:`ToolError` the program can read (ask for less). One message past
:data:`MAX_MESSAGE_BYTES` (a stdio line, an HTTP body, an event) is dropped before it is
kept whole, in time linear in its size, and the call it answered fails with the same
advice; the session goes on (see ``_stdio``, ``_bodies``, ``_oversize``; on Windows a
stdio server runs under the SDK's own client, whose lines are not bounded). The HTTP
client asks for uncompressed bodies and refuses a compressed one, whose inflated size
cannot be bounded before it is read. Waits are bounded by time: connecting and listing by
``connect_timeout_ms``, each call by the execute's deadline (and ``call_timeout_ms``).
``isError: true`` raises :class:`ToolError` with the server's text, cut to what a program
is shown, marked as coming from the server. Transport failures, timeouts and protocol
errors are host failures: the program sees a reference, the operator the evidence.
Cancelling a call (the execute's deadline or its caller) sends
``notifications/cancelled``.

Secrets: every header and ``env`` value (and a user, password or query value in the URL)
of at least :data:`MIN_SECRET_CHARS` characters, and each such word of it, is replaced by
``[redacted]`` in whatever this package builds from upstream text: descriptions, results,
error messages and log lines, schemas included; a tool whose very name holds one is left
out. Shorter values are not treated as secrets (``DEBUG=1``). Digits are compared as
digits, since a server may send them back as a number in another form: a JSON number, or
one written in text (grouped, with an exponent), that shows :data:`MIN_SECRET_CHARS`
consecutive digits of a secret's becomes ``"[redacted]"`` (see ``_secrets``). Redacting is
bounded in time as well: a text that is shown cut is redacted only as far as it is shown.
Credentials in the URL are sent as basic auth, so the URL holds none. Values in a stdio
server's ``args`` are not known to be secrets: pass tokens in ``env``. The SDK's own DEBUG
logs record wire traffic (what a server sends), and the HTTP client (``httpx2``) logs each
request line, its URL with the query, at INFO: a host that logs at INFO quiets ``httpx2``
(``mycelium serve`` does) or keeps tokens out of URLs.
"""

from ._definition import DEFAULT_CONNECT_TIMEOUT_MS, mcp_source
from ._errors import UpstreamError
from ._names import MAX_SEGMENT_CHARS, MAX_SEGMENTS, tool_paths
from ._oversize import MAX_MESSAGE_BYTES
from ._results import MAX_RESULT_CHARS
from ._secrets import MIN_SECRET_CHARS
from ._source import (
    MAX_DESCRIPTION_CHARS,
    MAX_LIST_PAGES,
    MAX_LISTING_SCHEMA_CHARS,
    MAX_SCHEMA_CHARS,
    MAX_TOOLS,
    McpSource,
)

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_MS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_LISTING_SCHEMA_CHARS",
    "MAX_LIST_PAGES",
    "MAX_MESSAGE_BYTES",
    "MAX_RESULT_CHARS",
    "MAX_SCHEMA_CHARS",
    "MAX_SEGMENTS",
    "MAX_SEGMENT_CHARS",
    "MAX_TOOLS",
    "MIN_SECRET_CHARS",
    "McpSource",
    "UpstreamError",
    "mcp_source",
    "tool_paths",
]
