"""One sandbox and one set of admission slots, shared by every runtime given it.

Capacity is a property of the process, not of a runtime: a server that keeps one runtime
per principal gives them all one :class:`SharedSandbox`, so they queue for the same slots
and run in the same worker pool.
"""

from __future__ import annotations

import anyio

from ._admission import SandboxSlots
from ._options import AdmissionPolicy, ExecutionOptions, available_cores
from ._signals import AbortSignal
from ._values import JsonValue
from .sandbox import PendingCalls, Sandbox, SandboxRequest
from .sandbox._contract import check_sandbox

__all__ = ["SharedSandbox"]


class SharedSandbox(Sandbox):
    """One sandbox and one set of admission slots, shared by every runtime given it.

    Pass the same ``SharedSandbox`` as ``Runtime(sandbox=...)`` to many runtimes (one per
    principal, say) and they queue for the same ``capacity`` slots and run in the same
    worker pool. A runtime does not close a shared sandbox; its owner calls :meth:`aclose`
    after the runtimes are closed. ``capacity`` and ``admission_wait_ms`` resolve as
    :class:`~mycelium.ExecutionOptions`' ``sandbox_capacity`` and ``admission_wait_ms`` do;
    a runtime's own admission options are not used. Everything else it says of itself
    (language, notes, unenforced limits, whether it can pause, its event loop) is the shared sandbox's.
    """

    def __init__(self, sandbox: Sandbox, *, capacity: int | None = None, admission_wait_ms: int | None = None) -> None:
        if not isinstance(sandbox, Sandbox) or isinstance(sandbox, SharedSandbox):
            raise ValueError(f"sandbox must be a Sandbox, got {type(sandbox).__name__}")
        check_sandbox(sandbox)
        self.sandbox = sandbox
        self.policy = AdmissionPolicy.resolve(
            ExecutionOptions(sandbox_capacity=capacity, admission_wait_ms=admission_wait_ms), available_cores()
        )
        self._semaphore = anyio.Semaphore(self.policy.capacity)
        self.build_sha = sandbox.build_sha
        self.language = sandbox.language
        self.guest_notes = sandbox.guest_notes
        self.unenforced_limits = sandbox.unenforced_limits
        self.suspends = sandbox.suspends
        self.asyncio_only = sandbox.asyncio_only

    @property
    def adapter(self) -> str:
        """The shared sandbox's adapter name."""
        return self.sandbox.adapter

    @property
    def in_flight(self) -> int:
        """How many admitted runs, of every runtime sharing this sandbox, have not settled yet."""
        return self.policy.capacity - self._semaphore.value

    def slots(self) -> SandboxSlots:
        """A tracker for one runtime: the shared slots, and only that runtime's backing work."""
        return SandboxSlots(self.policy.capacity, self._semaphore)

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> JsonValue:
        """Run ``request`` in the shared sandbox (admission is the runtime's job, through :meth:`slots`)."""
        return await self.sandbox.execute(request, signal)

    async def resume(
        self, request: SandboxRequest, state: bytes, pending: PendingCalls, signal: AbortSignal
    ) -> JsonValue:
        """Continue a paused run in the shared sandbox (see :meth:`~mycelium.sandbox.Sandbox.resume`)."""
        return await self.sandbox.resume(request, state, pending, signal)

    async def aclose(self) -> None:
        """Close the shared sandbox. Close the runtimes that use it first."""
        await self.sandbox.aclose()
