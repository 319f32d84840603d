"""What every lease's execute tool shares with its runtime: the sandbox, the gate, the limits, the slots."""

from __future__ import annotations

from dataclasses import dataclass

from .._admission import BackingTasks, SandboxSlots
from .._bindings import Invoker
from .._hooks import Observer
from .._options import AdmissionPolicy, ExecutionOptions
from ..failures import FailureEvidence
from ..sandbox import Sandbox
from ..suspensions import Suspensions

__all__ = ["ExecuteServices"]


@dataclass(frozen=True)
class ExecuteServices:
    """The runtime's parts an execute tool uses; a lease may bring its own session and access (its invoker)."""

    sandbox: Sandbox
    invoker: Invoker
    options: ExecutionOptions
    policy: AdmissionPolicy
    slots: SandboxSlots
    session_id: str | None
    on_sandbox_failure: Observer[FailureEvidence] | None
    suspensions: Suspensions | None
    tasks: BackingTasks
    """Where each run's backing work starts: the runtime's task group owns it until it settles."""
    requester: str | None = None
    """Whom the session acts for (``Session.requester``), kept with each pause."""
