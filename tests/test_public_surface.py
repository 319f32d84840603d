"""The public surface is exactly what is pinned here: a name added or removed changes this file too.

Each public module's ``__all__`` is compared with the list below, and every public-looking
attribute a module defines (not an imported submodule) must be in its ``__all__``. Everything
else lives in modules whose names start with an underscore.
"""

from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

import mycelium

PUBLIC: dict[str, list[str]] = {
    "mycelium": [
        "AbortController", "AbortError", "AbortSignal", "Access", "AccessRefusal", "AcquireContext", "Acquired",
        "AdmissionPolicy", "CallContext", "CapabilitySource", "Catalog", "CatalogEntry", "ConfirmAnswer",
        "ConfirmRequest", "DefinitionError", "DirectTool", "ExecuteIdentity", "ExecuteTool", "ExecutionOptions",
        "Failure", "FailureEvidence", "GatedTool", "InvalidInput", "InvocationContext", "JsonValue", "Lease",
        "LeaseReleased", "MemorySuspensions", "MissingExecuteIdentity", "Module", "MyceliumError",
        "MyceliumSourceError", "Operation", "OperationEvidence", "OperationFailed", "PostgresSuspensions",
        "PreparedExecute", "RefusedCall", "Runtime", "RuntimeClosed", "SandboxError", "Session", "SharedSandbox",
        "SqliteSuspensions", "StoredSuspension", "Suspension", "SuspensionStore", "Suspensions", "ToolCall",
        "ToolDefinition", "ToolError", "ToolResult", "UnknownOperation", "__version__", "defer", "direct_tool",
        "grant_as", "operation", "source",
    ],
    "mycelium.cli": ["cli", "main"],
    "mycelium.failures": [
        "ApprovalPending", "BadResponse", "Cancelled", "CapabilityFailed", "DeadlineExceeded", "Failure",
        "FailureEvidence", "GuestException", "InvalidArguments", "InvalidResult", "MODEL_FIXABLE", "ResultTooLarge",
        "ResumeRefusal", "SandboxBusy", "SandboxError", "SuspensionFailed", "SyntaxFailure", "TransportLost", "Unknown",
    ],
    "mycelium.integrations": ["MODEL_FIXABLE", "model_output"],
    "mycelium.integrations.langchain": ["Approval", "MyceliumTool", "mycelium_tool"],
    "mycelium.integrations.openai_agents": ["EXECUTE", "MyceliumTools", "RESUME"],
    "mycelium.integrations.pydantic_ai": ["MyceliumToolset"],
    "mycelium.mcp": [
        "Admitted", "Agent", "Authenticate", "ConnectionStore", "DEFAULT_MAX_CONNECTIONS", "LOOPBACK_HOSTS",
        "LOOPBACK_ORIGINS", "Load", "McpAuthority", "McpCatalog", "McpCatalogProvider", "McpExecutionContext",
        "McpServer", "Member", "MemoryConnections", "PROTOCOL_VERSIONS", "PostgresConnections", "Principal", "Refused",
        "SecretKeys", "SqliteConnections",
        "TeamKey", "approvals_app", "bearer_tokens", "create_mcp", "create_mcp_catalog", "mcp_source",
    ],
    "mycelium.sandbox": [
        "BindingCallback", "DecisionDeferred", "LanguageFacts", "Leaf", "NamespaceTree", "PendingCalls", "Sandbox",
        "SandboxError", "SandboxRequest", "Suspended", "UNENFORCED_LIMIT_NOTICES", "UnenforcedLimit", "Unrestorable",
        "guest_input", "namespace_tree", "positional_name", "sandbox_operation_path", "sandbox_provider_operation_name",
    ],
    "mycelium.sandbox.isolated": ["IsolatedSandbox"],
    "mycelium.sandbox.monty": ["MontySandbox", "WorkspaceResolver"],
    "mycelium.sandbox.wire": [
        "CallMessage", "CallResultMessage", "DoneMessage", "FailedMessage", "GuestError", "HostMessage", "LogMessage",
        "MAX_FAILURE_TEXT_CHARS", "MAX_NAME_CHARS", "MAX_SANDBOX_MESSAGE_BYTES", "MAX_WIRE_INT", "NamespaceInfo",
        "SANDBOX_FAILURE_CODES", "SandboxFailure", "SandboxMessage", "StartMessage", "decode_host_message",
        "decode_sandbox_message", "decode_untrusted", "encode_host_message", "encode_sandbox_message",
        "reported_failure", "start_message",
    ],
    "mycelium.semantic": [
        "DIMENSIONS", "MAX_QUERY_BYTES", "MAX_TEXT_BYTES", "SemanticIndex", "SemanticRanker", "WordLlamaIndex",
        "WordLlamaRanker", "load_wordllama",
    ],
    "mycelium.suspensions": [
        "MemorySuspensions", "PostgresSuspensions", "SqliteSuspensions", "StoreUnavailable", "StoredSuspension",
        "Suspension", "SuspensionLimitReached", "SuspensionStore", "Suspensions",
    ],
    "mycelium.testing": ["DirectSandbox", "RejectingSandbox", "direct_sandbox", "rejecting_sandbox"],
    "mycelium.tracing": ["active"],
}  # fmt: skip


def _public_modules() -> list[str]:
    """Every importable module of the package whose dotted name has no part starting with ``_``."""
    found = ["mycelium"]
    for info in pkgutil.walk_packages(mycelium.__path__, "mycelium."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return sorted(found)


def test_the_public_modules_are_exactly_the_pinned_ones() -> None:
    assert _public_modules() == sorted(PUBLIC)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_each_public_modules_all_is_exactly_the_pinned_list(name: str) -> None:
    module = importlib.import_module(name)
    assert sorted(module.__all__) == sorted(PUBLIC[name])
    assert len(set(module.__all__)) == len(module.__all__), "a name is listed twice"


# Modules that only gather names from private ones: everything public in them is meant to be.
NAMESPACES = {
    "mycelium",
    "mycelium.cli",
    "mycelium.mcp",
    "mycelium.sandbox",
    "mycelium.sandbox.isolated",
    "mycelium.sandbox.monty",
    "mycelium.suspensions",
    "mycelium.tracing",
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_name_in_all_exists_and_every_public_name_is_in_all(name: str) -> None:
    module = importlib.import_module(name)
    for exported in module.__all__:
        assert hasattr(module, exported), f"{name}.__all__ names {exported!r}, which it does not have"
    stray = sorted(
        attribute
        for attribute, value in vars(module).items()
        if not attribute.startswith("_")
        and not isinstance(value, types.ModuleType)
        and attribute not in module.__all__
        and attribute != "annotations"  # from __future__ import annotations
        and (name in NAMESPACES or getattr(value, "__module__", None) == name)
    )
    assert stray == [], f"{name} has public names outside __all__: {stray}"
