"""The sandbox contract: what an adapter receives (a request and a signal) and must do with it.

A :class:`Sandbox` gets a :class:`SandboxRequest` and an abort signal, runs the program in
isolation, and returns its JSON value or raises :class:`~mycelium.failures.SandboxError`
with a typed failure. One that can pause a run raises :class:`Suspended` and continues it
later with :meth:`Sandbox.resume`.
"""

from __future__ import annotations

import abc
import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from .._access import DecisionDeferred
from .._bindings import BindingCallback
from .._language import LanguageFacts
from .._signals import AbortSignal
from .._values import JsonValue

__all__ = [
    "UNENFORCED_LIMIT_NOTICES",
    "PendingCalls",
    "Sandbox",
    "SandboxRequest",
    "Suspended",
    "UnenforcedLimit",
    "Unrestorable",
    "check_backend",
    "check_sandbox",
]

UnenforcedLimit: TypeAlias = Literal["cpu", "memory", "output", "cancel"]
"""A limit a host declares its sandbox does not enforce where it runs (local development)."""

UNENFORCED_LIMIT_NOTICES: dict[str, str] = {
    "cpu": "CPU limits are not enforced in local dev",
    "memory": "Memory limits are not enforced in local dev",
    "output": "Output limits are not enforced in local dev",
    "cancel": "Cancellation is not enforced in local dev",
}
"""The once-per-runtime diagnostic for each declared unenforced limit."""

PendingCalls: TypeAlias = Mapping[int, Callable[[], Awaitable[JsonValue]]]
"""A paused run's deferred calls, by the sandbox's id for each: a function that starts the call."""


@dataclass(frozen=True)
class SandboxRequest:
    """Everything a sandbox needs for one execute. Host callbacks are never guest data."""

    execution_id: str
    """Fresh for every execute attempt; shared by the operation calls it makes."""
    code: str
    """The program to evaluate."""
    timeout_ms: int
    """The execution budget. The signal stays authoritative for cancellation."""
    bindings: Mapping[str, Mapping[str, BindingCallback]] = field(repr=False)
    """Transport alias -> flat relative operation path (``windows.open``) -> callback."""
    namespace_paths: Mapping[str, tuple[str, ...]]
    """Transport alias -> logical path in ``env``; an alias not listed is its own path."""
    modules: Mapping[str, str]
    """Transport alias -> stable module id, for every alias."""
    session_id: str | None
    """The host's session, or ``None`` for a session-free host."""
    on_log: Callable[[str], None] | None = field(default=None, repr=False)
    """Where the sandbox sends the program's printed output (already bounded by the sandbox)."""
    stubs: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Logical namespace path (``apps.bazaar.windows``, ``forage``) -> Python stub source of the
    operations directly in it, for sandboxes that type-check programs. Rendered on first use."""
    max_input_bytes: int | None = None
    """The most one operation call's input may encode to (compact JSON, UTF-8). A sandbox
    converting guest values checks it as it converts, so an oversized value costs no more
    than the limit; the runtime checks it again."""
    max_result_bytes: int | None = None
    """The same for the program's result."""
    suspendable: bool = False
    """Whether the run may pause at a deferred decision (given only to a sandbox that :attr:`~Sandbox.suspends`)."""

    # ``namespace_paths``, ``modules`` and ``stubs`` are the same objects, never changed, for
    # every request of one revision: a sandbox may keep per-revision work keyed on them.


class Suspended(Exception):
    """Raised by a sandbox instead of returning: the run paused at calls awaiting a decision.

    Every other call the run had in flight settled first. ``state`` is the sandbox's own
    serialised form of the paused run (opaque to everyone else). ``deferred`` maps the
    sandbox's id for each paused call to the deferral its binding raised, in the order the
    program placed them: the first is the one to decide; the others were deferred with it
    (``asyncio.gather`` of two confirm operations) and are asked again when the run resumes.
    Nothing of any of them ran.
    """

    def __init__(self, state: bytes, deferred: Mapping[int, DecisionDeferred]) -> None:
        if not deferred:
            raise ValueError("a suspended run has at least one deferred call")
        self.state = state
        self.deferred = dict(deferred)
        super().__init__(f"the run paused at {self.first.request.path}")

    @property
    def first(self) -> DecisionDeferred:
        """The deferred call to decide first."""
        return next(iter(self.deferred.values()))


class Unrestorable(Exception):
    """The state handed to :meth:`Sandbox.resume` cannot be restored; nothing ran."""


class Sandbox(abc.ABC):
    """Evaluates a guest program in isolation and returns its JSON value. Derive from it.

    :meth:`execute` and :attr:`adapter` are the contract; every other member has a default
    that states what a sandbox says by saying nothing:

    - :attr:`build_sha`: ``None`` (the adapter's source revision, for operator evidence).
    - :attr:`language`: a plain ``Python`` description with no names reserved.
    - :attr:`guest_notes`: ``None`` (a few lines for the model about what this sandbox adds,
      a persistent workspace say, appended to the tool description).
    - :attr:`unenforced_limits`: none (limits the host declares are not enforced where it
      runs this sandbox; the runtime logs each once).
    - :attr:`suspends` and :meth:`resume`: it cannot pause a run.
    - :attr:`asyncio_only`: it runs under every anyio backend (asyncio and trio).
    - :meth:`aclose`: nothing to close.
    """

    build_sha: str | None = None
    language: LanguageFacts = LanguageFacts()
    guest_notes: str | None = None
    unenforced_limits: tuple[UnenforcedLimit, ...] = ()
    suspends: bool = False
    """Whether it can pause a run at a deferred decision and :meth:`resume` it later."""
    asyncio_only: bool = False
    """Whether it runs only under asyncio: a runtime entered under trio refuses it at once."""

    @property
    @abc.abstractmethod
    def adapter(self) -> str:
        """A name for operator evidence (``"monty"``); never guest authority."""

    @abc.abstractmethod
    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> JsonValue:
        """Run ``request.code``; raise ``SandboxError`` for a typed failure.

        Must observe ``signal`` while starting and running, and must not return before
        the work it started has settled. A request that says it is ``suspendable`` may
        pause: when a call's binding raises :class:`~mycelium.sandbox.DecisionDeferred`,
        the sandbox lets the run's other calls settle, captures the run, and raises
        :class:`Suspended` (only a sandbox that :attr:`suspends` is given such a request).
        """

    async def resume(
        self, request: SandboxRequest, state: bytes, pending: PendingCalls, signal: AbortSignal
    ) -> JsonValue:
        """Continue the run ``state`` captured, as ``execute`` would run it, and return its value.

        ``request`` is as for ``execute`` (its ``code`` is the program that was paused).
        ``pending`` has a starter for every call of :attr:`Suspended.deferred`, by the same
        ids: each starts that call (with the person's decision, or asking again), and its
        outcome is what the program gets for it. Raises :class:`Unrestorable` when ``state``
        cannot be restored or ``pending`` does not match it (nothing ran then), and
        :class:`Suspended` when the run pauses again. By default nothing can be restored.
        """
        raise Unrestorable(f"the {self.adapter} sandbox cannot resume a paused run")

    async def aclose(self) -> None:  # noqa: B027  # a default on purpose: most sandboxes hold nothing
        """Release what the sandbox holds (worker processes, say). Idempotent; by default nothing."""


def check_backend(sandbox: Sandbox) -> None:
    """Raise ``RuntimeError`` when ``sandbox`` is :attr:`~Sandbox.asyncio_only` and this is not asyncio."""
    if not sandbox.asyncio_only:
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            f"the {sandbox.adapter} sandbox runs only under asyncio, not under this event loop: run the program "
            "with anyio.run(main) or asyncio.run(main), or give it a sandbox that runs here"
        ) from None


def check_sandbox(sandbox: Sandbox) -> None:
    """Raise ``ValueError`` naming what a :class:`Sandbox` subclass states wrongly, before any run."""
    for name in ("execute", "resume"):
        if not inspect.iscoroutinefunction(getattr(sandbox, name)):
            raise ValueError(f"the {sandbox.adapter} sandbox's {name} must be an async def")
    if not isinstance(sandbox.language, LanguageFacts):
        raise ValueError(f"the {sandbox.adapter} sandbox's language must be a LanguageFacts")
