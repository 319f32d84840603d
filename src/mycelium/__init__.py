"""Mycelium: typed host operations for AI agents, through one sandboxed ``execute`` tool.

The public surface is re-exported here; nothing inside the package imports from this
module.
"""

from .bindings import OperationError
from .context import CallContext, ExecuteIdentity, InvocationContext, Session
from .discovery import Catalog, CatalogEntry
from .errors import (
    DefinitionError,
    InvalidInput,
    LeaseReleased,
    MissingExecuteIdentity,
    MyceliumError,
    OperationFailed,
    RuntimeClosed,
    UnknownOperation,
)
from .execute import ExecuteTool, ExecutionOptions, PreparedExecute, ToolCall, ToolDefinition, ToolResult
from .failures import Failure, SandboxError
from .modules import Module
from .operations import Operation, operation
from .runtime import Lease, Runtime
from .signals import AbortController, AbortError, AbortSignal
from .values import JsonValue

__all__ = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "CallContext",
    "Catalog",
    "CatalogEntry",
    "DefinitionError",
    "ExecuteIdentity",
    "ExecuteTool",
    "ExecutionOptions",
    "Failure",
    "InvalidInput",
    "InvocationContext",
    "JsonValue",
    "Lease",
    "LeaseReleased",
    "MissingExecuteIdentity",
    "Module",
    "MyceliumError",
    "Operation",
    "OperationError",
    "OperationFailed",
    "PreparedExecute",
    "Runtime",
    "RuntimeClosed",
    "SandboxError",
    "Session",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "UnknownOperation",
    "operation",
]
