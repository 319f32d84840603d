"""The vocabulary every tool shares: a tool as a model sees it, a model's call of it, and what comes back.

The execute tool and the host's direct tools both answer a :class:`ToolCall` with a
:class:`ToolResult`; framework adapters and the MCP server turn those into their own
forms. A failed result's text is the model-facing message of its typed failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._text import new_reference
from ._values import JsonTooLarge, JsonValue, NotJson, dumps_compact, json_size
from .failures import CapabilityFailed, Failure, InvalidResult, ResultTooLarge
from .sandbox._boundary import sandbox_failure_message
from .suspensions import Suspension

__all__ = ["ToolCall", "ToolDefinition", "ToolResult", "bounded_json"]


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as a model is shown it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A model's call of a tool. ``arguments`` is a mapping or its JSON text."""

    id: str | None
    name: str
    arguments: Mapping[str, object] | str


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one tool call.

    ``text`` is what the model reads: the compact JSON of ``value`` on success, the safe
    failure message otherwise. ``reference`` ties a failure to the operator's evidence.
    A run paused for a person's decision is neither: ``suspension`` says which call
    waits (``text`` tells the model not to retry), and ``Runtime.resume`` continues it.
    """

    text: str
    is_error: bool
    value: JsonValue = None
    failure: Failure | None = None
    logs: tuple[str, ...] = ()
    reference: str | None = None
    suspension: Suspension | None = None

    @property
    def suspended(self) -> bool:
        """Whether the run paused for a decision instead of finishing."""
        return self.suspension is not None

    @classmethod
    def failed(cls, failure: Failure, *, logs: tuple[str, ...] = ()) -> ToolResult:
        """A failed result whose text is the model-facing message for ``failure``."""
        # A capability failure already has the reference the host's evidence carries.
        reference = failure.reference if isinstance(failure, CapabilityFailed) else new_reference()
        return cls(
            text=sandbox_failure_message(failure, reference),
            is_error=True,
            failure=failure,
            logs=logs,
            reference=reference,
        )


def bounded_json(value: object, limit: int) -> str | InvalidResult | ResultTooLarge:
    """The compact JSON text of ``value``, or the failure that keeps it out. Nothing is truncated.

    The value is measured before it is written, and measuring stops at ``limit``: a value
    that shares one sub-value a million times costs no more than the limit to refuse.
    """
    try:
        json_size(value, limit=limit)
    except JsonTooLarge as exc:
        return ResultTooLarge(size=exc.size, limit=limit)
    except NotJson as exc:
        return InvalidResult(reason=str(exc))
    return dumps_compact(value)  # type: ignore[arg-type]  # json_size proved it is JSON
