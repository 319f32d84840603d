"""The execute tool: its arguments, its supervision, its run and resume, and its model-facing description."""

from .._tool_calls import ToolCall, ToolDefinition, ToolResult, bounded_json
from ._description import EXECUTE_INPUT_SCHEMA, execute_definition, execute_description, inline_stubs
from ._services import ExecuteServices
from ._tool import ExecuteTool, PreparedExecute
from ._view import RevisionView

__all__ = [
    "EXECUTE_INPUT_SCHEMA",
    "ExecuteServices",
    "ExecuteTool",
    "PreparedExecute",
    "RevisionView",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "bounded_json",
    "execute_definition",
    "execute_description",
    "inline_stubs",
]
