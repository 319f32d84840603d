"""A ``tools/call`` result as the value the guest gets: structured content, or each block made a value.

No base64 data reaches the guest (a binary block shows its decoded size), a result past
:data:`MAX_RESULT_CHARS` is refused typed, and every secret is redacted.
"""

from __future__ import annotations

import json

import anyio.to_thread
import mcp.types

from ..._exceptions import MAX_ERROR_MESSAGE_CHARS, ToolError
from ._secrets import _Secrets

MAX_RESULT_CHARS = 500_000
"""The most JSON characters a call's result may have; a larger one is refused, typed."""
# A larger result is redacted off the event loop: when its JSON may show a secret, it is walked value by value.
_REDACTED_IN_PLACE_CHARS = 16_384


async def _result_value(result: mcp.types.CallToolResult, secrets: _Secrets, origin: str) -> object:
    if result.is_error:
        said = "\n".join(block.text for block in result.content if isinstance(block, mcp.types.TextContent))
        # The text may be a whole message long: only what the program is shown of it is redacted.
        raise ToolError(secrets.clipped(said, MAX_ERROR_MESSAGE_CHARS) or "the tool reported an error", origin=origin)
    if result.structured_content is not None:
        value: object = result.structured_content
    else:
        values = [_block_value(block) for block in result.content]
        value = values[0] if len(values) == 1 else (values or None)
    size = len(json.dumps(value, ensure_ascii=False))
    if size > MAX_RESULT_CHARS:
        raise ToolError(
            f"the result is {size} characters of JSON; the most an operation may return is {MAX_RESULT_CHARS}. "
            "Ask for less (a narrower query, a page, a limit)."
        )
    if size <= _REDACTED_IN_PLACE_CHARS:
        return secrets.value(value)
    return await anyio.to_thread.run_sync(secrets.value, value)


def _block_value(block: object) -> object:
    if isinstance(block, mcp.types.TextContent):
        return _maybe_json(block.text)
    if isinstance(block, mcp.types.ImageContent | mcp.types.AudioContent):
        return {"type": block.type, "mimeType": block.mime_type, "bytes": _decoded_size(block.data)}
    if isinstance(block, mcp.types.EmbeddedResource):
        resource = block.resource
        shown: dict[str, object] = {"type": "resource", "uri": resource.uri, "mimeType": resource.mime_type}
        if isinstance(resource, mcp.types.TextResourceContents):
            shown["text"] = resource.text
        else:
            shown["bytes"] = _decoded_size(resource.blob)
        return shown
    if isinstance(block, mcp.types.ResourceLink):
        return {"type": "resource_link", "uri": block.uri, "name": block.name, "mimeType": block.mime_type}
    return {"type": str(getattr(block, "type", "unknown"))}


def _maybe_json(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _decoded_size(data: str) -> int:
    """The size of base64 ``data`` once decoded, without decoding it."""
    stripped = data.rstrip("=")
    return len(stripped) * 3 // 4
