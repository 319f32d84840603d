"""Mycelium: typed host operations for AI agents, through one sandboxed ``execute`` tool.

The public surface is re-exported here; nothing inside the package imports from this
module.
"""

from . import tracing
from .access import Access, AccessRefusal, ConfirmAnswer, ConfirmRequest, RefusedCall, defer, grant_as
from .bindings import OperationEvidence
from .context import CallContext, ExecuteIdentity, InvocationContext, Session
from .discovery import Catalog, CatalogEntry
from .errors import (
    DefinitionError,
    InvalidInput,
    LeaseReleased,
    MissingExecuteIdentity,
    MyceliumError,
    MyceliumSourceError,
    OperationFailed,
    RuntimeClosed,
    ToolError,
    UnknownOperation,
)
from .execute import ExecuteTool, PreparedExecute
from .failures import Failure, FailureEvidence, SandboxError
from .leases import Lease
from .modules import Module
from .operations import Operation, operation
from .options import AdmissionPolicy, ExecutionOptions
from .runtime import Runtime
from .shared_sandbox import SharedSandbox
from .signals import AbortController, AbortError, AbortSignal
from .sources import AcquireContext, Acquired, CapabilitySource, source
from .suspensions import (
    MemorySuspensions,
    PostgresSuspensions,
    SqliteSuspensions,
    StoredSuspension,
    Suspension,
    Suspensions,
    SuspensionStore,
)
from .tool_calls import ToolCall, ToolDefinition, ToolResult
from .tools import DirectTool, GatedTool, direct_tool
from .values import JsonValue

__all__ = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "Access",
    "AccessRefusal",
    "AcquireContext",
    "Acquired",
    "AdmissionPolicy",
    "CallContext",
    "CapabilitySource",
    "Catalog",
    "CatalogEntry",
    "ConfirmAnswer",
    "ConfirmRequest",
    "DefinitionError",
    "DirectTool",
    "ExecuteIdentity",
    "ExecuteTool",
    "ExecutionOptions",
    "Failure",
    "FailureEvidence",
    "GatedTool",
    "InvalidInput",
    "InvocationContext",
    "JsonValue",
    "Lease",
    "LeaseReleased",
    "MemorySuspensions",
    "MissingExecuteIdentity",
    "Module",
    "MyceliumError",
    "MyceliumSourceError",
    "Operation",
    "OperationEvidence",
    "OperationFailed",
    "PostgresSuspensions",
    "PreparedExecute",
    "RefusedCall",
    "Runtime",
    "RuntimeClosed",
    "SandboxError",
    "Session",
    "SharedSandbox",
    "SqliteSuspensions",
    "StoredSuspension",
    "Suspension",
    "SuspensionStore",
    "Suspensions",
    "ToolCall",
    "ToolDefinition",
    "ToolError",
    "ToolResult",
    "UnknownOperation",
    "defer",
    "direct_tool",
    "grant_as",
    "operation",
    "source",
    "tracing",
]
