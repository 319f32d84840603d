"""Adapters that put a runtime's ``execute`` tool into agent frameworks.

Each adapter makes the same decisions, so an integrator does not have to: one lease per
agent run, released after it (also on failure and cancellation); the framework's tool
call id passed through as the execute's; the model reads :func:`model_output`; failures
the model can fix go to the framework's retry channel while retries last; and a
``confirm`` operation meets the framework's own human approval through suspend and
resume (see :mod:`mycelium.suspensions`), so the person approves the exact pending call and
nothing that already ran runs again.
"""

from __future__ import annotations

from .._text import printed
from .._tool_calls import ToolResult
from ..failures import MODEL_FIXABLE

__all__ = ["MODEL_FIXABLE", "model_output"]


def model_output(result: ToolResult) -> str:
    """What the model reads for one execute: the result's text, then what the program printed.

    The printed lines follow a blank line and a ``Printed:`` line, so a model can tell the
    value (or the failure) from the output; past :data:`~mycelium._text.MAX_PRINTED_CHARS`
    they are cut, with a line saying how much.
    """
    if not result.logs:
        return result.text
    return result.text + "\n\nPrinted:\n" + printed(result.logs)
