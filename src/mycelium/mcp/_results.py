"""What one ``execute`` call answers over MCP: a tool result, or an input-required result to retry."""

from __future__ import annotations

import mcp_types as types

from .._execute import ToolResult
from .._text import printed
from ._approvals import AwaitingPerson
from ._elicitation import PausedRun, input_required

__all__ = ["answered", "failure", "tool_result"]


def tool_result(result: ToolResult) -> types.CallToolResult:
    """The MCP tool result of ``result``: its text, then what the program printed."""
    content = [types.TextContent(type="text", text=result.text)]
    if result.logs:
        content.append(types.TextContent(type="text", text=f"print output:\n{printed(result.logs)}"))
    return types.CallToolResult(content=content, is_error=result.is_error)


def failure(text: str) -> types.CallToolResult:
    """A tool result that failed with ``text``."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def answered(answer: ToolResult | AwaitingPerson) -> types.CallToolResult | types.InputRequiredResult:
    """A run that waits for a person on the page: the handle for the model, or the state its client retries."""
    if isinstance(answer, ToolResult):
        return tool_result(answer)
    return input_required(PausedRun.awaiting(answer))
