"""The exception hierarchy: what Mycelium raises to hosts and, in safe form, to guests.

Every one is a :class:`MyceliumError`. Every message here is safe to show a model: none
carries host exception text, a traceback or a path. Host-side evidence travels separately
(:class:`~mycelium.OperationEvidence`). A failed execute is not an exception: it is a
result holding one of the typed failures of :mod:`mycelium.failures`.
"""

from __future__ import annotations

from typing import Literal

from ._text import clip

__all__ = [
    "DefinitionError",
    "InvalidInput",
    "LeaseReleased",
    "MissingExecuteIdentity",
    "MyceliumError",
    "MyceliumSourceError",
    "OperationFailed",
    "RuntimeClosed",
    "ToolError",
    "UnknownOperation",
]


class MyceliumError(Exception):
    """Base class of the errors Mycelium raises."""


class DefinitionError(MyceliumError, ValueError):
    """An operation, module or graph was defined wrongly; raised when it is defined or installed.

    ``module_id`` names the module at fault when there is one.
    """

    def __init__(self, message: str, *, module_id: str | None = None) -> None:
        self.module_id = module_id
        super().__init__(message)


class InvalidInput(MyceliumError, ValueError):
    """The caller's input did not match the operation's input schema.

    This is the caller's (the model's) fault: the message lists each field error and is
    safe to show it. It never wraps a host failure.
    """

    def __init__(self, path: str, errors: list[str]) -> None:
        self.path = path
        self.errors = tuple(errors)
        super().__init__(_bounded_message(f"Invalid input for {path}", errors))


class OperationFailed(MyceliumError):
    """An operation failed on the host side (it raised, or its output broke its schema).

    The message names the operation and a reference, and nothing else: the host finds
    the exception itself under the same reference through ``Runtime(on_operation_error=...)``.
    """

    def __init__(self, *, module: str, operation: str, path: str, reference: str) -> None:
        self.module = module
        self.operation = operation
        self.path = path
        self.reference = reference
        super().__init__(f"{path} failed on the host (reference {reference}).")


class ToolError(MyceliumError):
    """An operation's own failure, written for its caller: raise it with a message the model can act on.

    Any other exception an operation raises is a host failure, and its caller sees only a
    reference. This one's message reaches the caller (a guest program gets a
    ``RuntimeError``), cut to :data:`MAX_ERROR_MESSAGE_CHARS`, with the operation's path in
    front. Nothing else of the host goes with it, so build the message only from what the
    caller may read. ``origin`` says who wrote the message when it is not the host (an
    upstream MCP server, say): the caller is told it comes from there.
    """

    def __init__(self, message: str, *, origin: str | None = None, path: str | None = None) -> None:
        self.message = clip(str(message), MAX_ERROR_MESSAGE_CHARS)
        self.origin = origin
        self.path = path
        said = f"{path} failed" if path else "the operation failed"
        if origin:
            said += f"; {clip(origin, MAX_ERROR_ITEM_CHARS)} says"
        super().__init__(f"{said}: {self.message}")


class LeaseReleased(MyceliumError):
    """The lease was already released; acquire a new one."""


class RuntimeClosed(MyceliumError):
    """The runtime is closing or closed and hands out no more leases."""


class UnknownOperation(MyceliumError, LookupError):
    """No installed module or operation matches what was asked for."""


class MissingExecuteIdentity(MyceliumError):
    """An operation that requires execute identity was called without a tool call id or an ordinal."""


class MyceliumSourceError(MyceliumError):
    """A source failed to acquire or to release. ``__cause__`` holds what it raised."""

    def __init__(self, source_id: str, phase: Literal["acquire", "release"], message: str) -> None:
        self.source_id = source_id
        self.phase = phase
        super().__init__(f"source {source_id!r} failed to {phase}: {message}")


MAX_ERROR_MESSAGE_CHARS = 2_000
MAX_ERROR_ITEM_CHARS = 300


def _bounded_message(head: str, items: list[str]) -> str:
    """Join ``items`` under ``head``, keeping the whole message within ``MAX_ERROR_MESSAGE_CHARS``."""
    lines = [f"{clip(head, MAX_ERROR_ITEM_CHARS)}:"]
    used = len(lines[0])
    for shown, item in enumerate(items):
        line = f"- {clip(item, MAX_ERROR_ITEM_CHARS)}"
        if used + 1 + len(line) > MAX_ERROR_MESSAGE_CHARS - 40:
            lines.append(f"... and {len(items) - shown} more errors")
            break
        lines.append(line)
        used += 1 + len(line)
    return "\n".join(lines)
