"""The sandbox contract: two members to write, defaults for the rest, mistakes named before any run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mycelium import AbortSignal, JsonValue, Runtime, SharedSandbox
from mycelium.sandbox import LanguageFacts, Sandbox, SandboxRequest, Unrestorable


class Minimal(Sandbox):
    adapter = "minimal"

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> JsonValue:
        return None


def test_a_sandbox_states_only_its_adapter_and_execute_and_the_rest_has_defaults() -> None:
    sandbox = Minimal()
    assert sandbox.build_sha is None
    assert sandbox.language == LanguageFacts()
    assert sandbox.guest_notes is None
    assert sandbox.unenforced_limits == ()
    assert not sandbox.suspends
    assert not sandbox.asyncio_only


async def test_by_default_a_sandbox_cannot_resume_and_closes_nothing() -> None:
    sandbox = Minimal()
    with pytest.raises(Unrestorable, match="the minimal sandbox cannot resume"):
        await sandbox.resume(None, b"", {}, AbortSignal())  # type: ignore[arg-type]
    await sandbox.aclose()
    await sandbox.aclose()


def test_a_sandbox_without_execute_cannot_be_made() -> None:
    class NoExecute(Sandbox):
        adapter = "none"

    with pytest.raises(TypeError, match="execute"):
        NoExecute()  # type: ignore[abstract]


class SyncExecute(Sandbox):
    adapter = "sync"

    def execute(self, request: SandboxRequest, signal: AbortSignal) -> Any:  # type: ignore[override]
        return None


class WrongLanguage(Minimal):
    language = "Python"  # type: ignore[assignment]


@pytest.mark.parametrize(
    ("sandbox", "complaint"),
    [(SyncExecute(), "the sync sandbox's execute must be an async def"), (WrongLanguage(), "must be a LanguageFacts")],
    ids=["sync-execute", "language-not-facts"],
)
@pytest.mark.parametrize(
    "given_to", [lambda sandbox: Runtime(sandbox=sandbox), SharedSandbox], ids=["Runtime", "SharedSandbox"]
)
def test_a_sandbox_that_states_its_contract_wrongly_is_refused_before_any_run(
    sandbox: Sandbox, complaint: str, given_to: Callable[[Sandbox], object]
) -> None:
    with pytest.raises(ValueError, match=complaint):
        given_to(sandbox)
