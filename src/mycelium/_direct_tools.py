"""Direct tools: labelled tools a host offers a model next to ``execute``, behind the same checks.

A direct tool is one operation called by the model directly rather than from a program.
It has the same labels and goes through the same invocation path as a guest's call: the
access gate (grant, then person), input decoding, output encoding. Its grant is looked up
under ``grant_key`` (its name by default).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ._access import AccessRefusal
from ._bindings import Invoker
from ._context import InvocationContext
from ._exceptions import DefinitionError, InvalidInput, OperationFailed, ToolError
from ._graph import InstalledOperation, install_alone
from ._handed_out import HandedOut
from ._modules import check_id
from ._operations import AccessLabel, operation
from ._schemas import SchemaSpec
from ._signals import AbortController, AbortSignal
from ._tool_calls import ToolDefinition, ToolResult, bounded_json
from ._values import dumps_compact
from .failures import InvalidArguments
from .sandbox._boundary import failure_from_exception

__all__ = ["DirectTool", "GatedTool", "direct_tool"]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class DirectTool:
    """A direct tool as registered: its definition and the operation behind it."""

    definition: ToolDefinition
    target: InstalledOperation


def direct_tool(
    *,
    name: str,
    description: str,
    input: SchemaSpec = None,
    output: SchemaSpec = None,
    execute: Callable[..., Any],
    access: AccessLabel | None = None,
    confirm: bool = False,
    grant_key: str | None = None,
) -> DirectTool:
    """Define a direct tool. ``name`` is 1-64 letters, digits, ``_`` or ``-``, and not ``execute``.

    The other arguments are those of :func:`mycelium.operation`; ``grant_key`` is the key its
    grant is looked up under (default: ``name``).
    """
    if not isinstance(name, str) or not _TOOL_NAME.match(name) or name == "execute":
        raise DefinitionError(f"a direct tool's name must be 1-64 of [A-Za-z0-9_-] and not 'execute', got {name!r}")
    if not isinstance(description, str) or not description.strip():
        raise DefinitionError(f"direct tool {name!r} needs a description")
    op = operation(input=input, output=output, execute=execute, access=access, confirm=confirm, description=description)
    key = check_id("grant", grant_key) if grant_key is not None else name
    return DirectTool(
        definition=ToolDefinition(name=name, description=description, input_schema=op.input_schema),
        target=install_alone(name, key, op),
    )


class GatedTool(HandedOut):
    """A direct tool as one lease offers it: call it with the model's arguments. Get it from ``Lease.tools``."""

    _handed_out_by = "Lease.tools"
    definition: ToolDefinition
    """The tool as a model is shown it."""
    _target: InstalledOperation
    _invoker: Invoker
    _session_id: str | None
    _max_result_bytes: int
    _hold: Callable[[], AbstractContextManager[None]]

    @classmethod
    def _for_lease(
        cls,
        tool: DirectTool,
        *,
        invoker: Invoker,
        session_id: str | None,
        max_result_bytes: int,
        hold: Callable[[], AbstractContextManager[None]],
    ) -> GatedTool:
        return cls._made(
            definition=tool.definition,
            _target=tool.target,
            _invoker=invoker,
            _session_id=session_id,
            _max_result_bytes=max_result_bytes,
            _hold=hold,
        )

    async def call(
        self, arguments: Mapping[str, object] | str, tool_call_id: str | None = None, signal: AbortSignal | None = None
    ) -> ToolResult:
        """Run the tool. A refusal is an ordinary result holding the refusal's JSON form."""
        with self._hold():
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    return ToolResult.failed(
                        InvalidArguments("the arguments are not valid JSON", tool=self.definition.name)
                    )
            context = InvocationContext(
                execution_id=f"exec-{uuid.uuid4().hex}",
                tool_call_id=tool_call_id,
                session_id=self._session_id,
                operation_ordinal=None,
                module_id=self._target.module.id,
                operation=self._target.relative,
                signal=signal or AbortController().signal,
            )
            try:
                outcome = await self._invoker.invoke(self._target, arguments, context)
            except InvalidInput as exc:
                return ToolResult.failed(InvalidArguments(str(exc), tool=self.definition.name))
            except OperationFailed as exc:
                return ToolResult.failed(failure_from_exception(exc))
            except ToolError as exc:  # the operation's own message, written for the model
                return ToolResult(text=str(exc), is_error=True)
            if isinstance(outcome, AccessRefusal):
                value = outcome.to_json()
                return ToolResult(text=dumps_compact(value), is_error=False, value=value)  # type: ignore[arg-type]
            text = bounded_json(outcome, self._max_result_bytes)
            if not isinstance(text, str):
                return ToolResult.failed(text)
            return ToolResult(text=text, is_error=False, value=outcome)
