"""Mycelium: typed host operations for AI agents, through one sandboxed ``execute`` tool.

The public surface is re-exported here, and it is exactly ``__all__``; nothing inside the
package imports from this module. Installed as the distribution ``mycelium-codemode``.
"""

# First: it refuses to go on beside another distribution's ``mycelium`` (see _distribution).
from ._distribution import VERSION as __version__  # isort: skip
from ._access import Access, AccessRefusal, ConfirmAnswer, ConfirmRequest, RefusedCall, defer, grant_as
from ._bindings import OperationEvidence
from ._context import CallContext, ExecuteIdentity, InvocationContext, Session
from ._direct_tools import DirectTool, GatedTool, direct_tool
from ._discovery import Catalog, CatalogEntry
from ._exceptions import (
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
from ._execute import ExecuteTool, PreparedExecute
from ._leases import Lease
from ._modules import Module
from ._operations import Operation, operation
from ._options import AdmissionPolicy, ExecutionOptions
from ._runtime import Runtime
from ._shared_sandbox import SharedSandbox
from ._signals import AbortController, AbortError, AbortSignal
from ._sources import AcquireContext, Acquired, CapabilitySource, source
from ._tool_calls import ToolCall, ToolDefinition, ToolResult
from ._values import JsonValue
from .failures import Failure, FailureEvidence, SandboxError
from .suspensions import (
    MemorySuspensions,
    PostgresSuspensions,
    SqliteSuspensions,
    StoredSuspension,
    Suspension,
    Suspensions,
    SuspensionStore,
)

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
    "__version__",
    "defer",
    "direct_tool",
    "grant_as",
    "operation",
    "source",
]
