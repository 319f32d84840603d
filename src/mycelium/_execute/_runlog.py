"""The run log: one line per execute on the ``mycelium.runs`` logger, however the execute was reached.

Direct library use, MCP over HTTP and stdio all end in the same executor, so the line is
written there, once per call of ``PreparedExecute.execute`` or ``ExecuteTool.resume``:
a success, a pause, a failure, and a call refused before anything started. It carries
identities, counts, sizes and the outcome, never the program's code, its arguments, its
result or what it printed. The fields are also attributes of the record (see
:data:`RUN_FIELDS`), so a structured formatter can write them as keys.

A success or a pause is logged at INFO, and so is a failure that is the program's own
mistake; any other failure at WARNING, with its host-side cause when that is not already
logged with its operation's error.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio

from .._text import clip
from .._tool_calls import ToolResult
from ..failures import MODEL_FIXABLE, CapabilityFailed, SandboxError, SuspensionFailed

__all__ = ["RUN_FIELDS", "RUN_LOGGER", "RunLine", "logged", "outcome_code"]

RUN_LOGGER = "mycelium.runs"
"""The logger every execute's line goes to: a child of ``mycelium``, so a handler there sees it too."""
RUN_FIELDS = (
    "outcome",
    "reason",
    "reference",
    "execution_id",
    "tool_call_id",
    "principal",
    "resumed",
    "calls",
    "result_bytes",
    "printed_bytes",
    "duration_ms",
)
"""The attributes a run line's record carries, in the order the text line gives them."""

logger = logging.getLogger(RUN_LOGGER)

# A tool call id is the client's to choose and a requester the host's: both are bounded and
# quoted, so no value can flood a log or forge a line of its own.
_MAX_VALUE_CHARS = 128


@dataclass
class RunLine:
    """What one call of the executor logs when it ends; filled in as the call goes."""

    principal: str | None
    """Whom the session acts for (``Session.requester``; the principal over MCP)."""
    tool_call_id: str | None
    resumed: bool = False
    """Whether the call continues a paused run."""
    started: float = field(default_factory=anyio.current_time)
    execution_id: str | None = None
    calls: int = 0
    """Operation calls the program placed during this call (a resumed run counts from where it paused)."""
    result: ToolResult | None = None
    cause: BaseException | None = None
    """A failure's host-side cause, when the line is the place it is logged."""

    def ran(self, execution_id: str | None, tool_call_id: str | None, calls: int) -> None:
        """Count one part of the run: ``calls`` placed under ``execution_id`` (a resumed run's own ids)."""
        self.execution_id = execution_id
        self.tool_call_id = self.tool_call_id or tool_call_id
        self.calls += calls

    def failed(self, execution_id: str | None, result: ToolResult, cause: BaseException | None) -> None:
        """The call ends with this failed ``result``, which is its evidence's too."""
        self.execution_id = execution_id
        self.result = result
        failure = result.failure
        # A host failure's traceback is already in its operation's own log, under the same reference.
        self.cause = None if isinstance(cause, SandboxError) or isinstance(failure, CapabilityFailed) else cause

    def answered(self, result: ToolResult) -> ToolResult:
        """The call ends with ``result``; returned as it is."""
        self.result = result
        return result


@contextmanager
def logged(line: RunLine) -> Iterator[RunLine]:
    """Write ``line`` when the block ends, however it ends (a cancelled call is logged as cancelled)."""
    try:
        yield line
    finally:
        _write(line)


def outcome_code(result: ToolResult) -> str:
    """``ok``, ``suspended`` or the failure's code."""
    if result.failure is not None:
        return result.failure.code
    return "suspended" if result.suspended else "ok"


def _write(line: RunLine) -> None:
    result = line.result
    # No result: the call was cancelled (or raised) before it had one.
    outcome = outcome_code(result) if result is not None else "cancelled"
    level = logging.INFO if result is None or result.failure is None or outcome in MODEL_FIXABLE else logging.WARNING
    if not logger.isEnabledFor(level):
        return
    failure = result.failure if result is not None else None
    fields: dict[str, object] = {
        "outcome": outcome,
        # A paused run refused its resume: which of a few fixed reasons (tampered, already-resumed, ...).
        "reason": failure.reason if isinstance(failure, SuspensionFailed) else None,
        "reference": result.reference if result is not None else None,
        "execution_id": line.execution_id,
        "tool_call_id": None if line.tool_call_id is None else clip(line.tool_call_id, _MAX_VALUE_CHARS),
        "principal": None if line.principal is None else clip(line.principal, _MAX_VALUE_CHARS),
        "resumed": line.resumed,
        "calls": line.calls,
        "result_bytes": len(result.text.encode("utf-8", "surrogatepass")) if result is not None else 0,
        "printed_bytes": sum(len(each.encode("utf-8", "surrogatepass")) for each in result.logs) if result else 0,
        "duration_ms": round((anyio.current_time() - line.started) * 1000, 1),
    }
    text = " ".join(f"{key}={_shown(value)}" for key, value in fields.items() if value is not None and key != "outcome")
    logger.log(level, "execute %s %s", outcome, text, exc_info=line.cause, extra=fields)


def _shown(value: object) -> str:
    """A value as the text line writes it: bare when it is one plain word, else quoted as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if text and all(char.isalnum() or char in "-_.:/@+" for char in text) and text.isascii():
        return text
    return json.dumps(text)
