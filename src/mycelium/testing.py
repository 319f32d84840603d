"""Test helpers that stand in for a sandbox. NEITHER PROVIDES ANY ISOLATION.

They run with the host's full privileges and never evaluate the submitted code. Use
them to test registration, validation, identity and cleanup, never to run a model's
program.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from ._signals import AbortSignal
from ._values import JsonValue
from .failures import Failure, SandboxError, Unknown
from .sandbox import Sandbox, SandboxRequest
from .sandbox._namespaces import GuestNamespace, guest_root

__all__ = ["DirectSandbox", "RejectingSandbox", "direct_sandbox", "rejecting_sandbox"]

DirectFunction = Callable[[GuestNamespace, AbortSignal], Any]


class DirectSandbox(Sandbox):
    """Calls a host function with the request's bindings instead of evaluating code. NO ISOLATION."""

    adapter = "direct"

    def __init__(self, fn: DirectFunction) -> None:
        self._fn = fn

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> JsonValue:
        """Ignore ``request.code``; return what ``fn(bindings, signal)`` returns (awaited if need be)."""
        result = self._fn(guest_root(request), signal)
        if inspect.isawaitable(result):
            result = await result
        return result  # type: ignore[no-any-return]  # the runtime checks it is JSON


class RejectingSandbox(Sandbox):
    """Fails every execute with the same typed failure, deterministically. NO ISOLATION (it runs nothing)."""

    adapter = "rejecting"

    def __init__(self, failure: Failure | None = None) -> None:
        self.failure: Failure = failure if failure is not None else Unknown()

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> JsonValue:
        """Raise ``SandboxError(self.failure)`` without running anything."""
        raise SandboxError(self.failure)


def direct_sandbox(fn: Callable[[GuestNamespace, AbortSignal], JsonValue | Awaitable[JsonValue]]) -> DirectSandbox:
    """A sandbox that ignores the submitted code and calls ``fn(bindings, signal)``. NO ISOLATION.

    ``bindings`` is the guest's namespace as attributes (``bindings.demo.ping({})``,
    ``bindings.env.apps.bazaar.windows.open(url=...)``). Each call takes the same
    invocation path a real sandbox's would (ordinal, decoding, encoding) and returns an
    awaitable of the JSON value a guest would see. ``fn`` may return a value or an
    awaitable; ``fn`` runs with the host's privileges.
    """
    return DirectSandbox(fn)


def rejecting_sandbox(failure: Failure | None = None) -> RejectingSandbox:
    """A sandbox that always fails with ``failure`` (default ``unknown``). NO ISOLATION: it runs nothing."""
    return RejectingSandbox(failure)
