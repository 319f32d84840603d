"""The wire as its users use it: a provider in another process, behind a real runtime.

The provider (``tests/support/wire_provider.py``) knows only the envelopes; the host
adapter (``tests/support/wire_sandbox.py``) answers its calls with the request's bindings,
so each call crosses the gate and the operation's schemas as it would from Monty.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from pydantic import BaseModel

from mycelium import AbortController, ExecutionOptions, Lease, Module, Runtime, ToolResult, operation
from mycelium._text import MAX_PRINTED_CHARS
from mycelium.failures import (
    BadResponse,
    Cancelled,
    CapabilityFailed,
    DeadlineExceeded,
    GuestException,
    ResultTooLarge,
    SandboxBusy,
    SyntaxFailure,
    TransportLost,
)
from mycelium.sandbox.wire import MAX_SANDBOX_MESSAGE_BYTES, CallMessage, encode_sandbox_message
from tests.support.wire_sandbox import WireSandbox


class Query(BaseModel):
    text: str


def search(query: Query) -> list[str]:
    return [note for note in ("milk", "eggs", "bread") if query.text in note]


def broken() -> None:
    raise RuntimeError("the disk at /srv/secret is full")


def notes() -> Module:
    return Module(
        id="example-notes",
        name="notes",
        operations={
            "search": operation(input=Query, output=list[str], execute=search, access="read"),
            "broken": operation(execute=broken, access="read"),
        },
    )


def program(*steps: object) -> str:
    return "\n".join(json.dumps(step) for step in steps)


@asynccontextmanager
async def leased(*modules: Module, timeout_ms: int = 5_000) -> AsyncIterator[Lease]:
    options = ExecutionOptions(timeout_ms=timeout_ms)
    async with Runtime(modules=list(modules), sandbox=WireSandbox(), execution=options) as runtime:
        lease = await runtime.acquire()
        try:
            yield lease
        finally:
            await lease.release()


@pytest.fixture
async def lease() -> AsyncIterator[Lease]:
    async with leased(notes()) as lease:
        yield lease


async def run(lease: Lease, code: str) -> ToolResult:
    return await lease.execute_tool.run(code)


async def test_a_providers_calls_reach_operations_and_its_value_and_prints_come_back(lease: Lease) -> None:
    result = await run(lease, program(["print", "looking"], ["call", "notes.search", {"text": "e"}], ["return-last"]))
    assert not result.is_error
    assert result.value == ["eggs", "bread"]
    assert result.logs == ("looking",)


async def test_a_call_the_operations_schema_refuses_is_the_guests_value_error(lease: Lease) -> None:
    result = await run(lease, program(["call", "notes.search", {"text": 3}], ["return", "unreached"]))
    assert isinstance(result.failure, GuestException)
    assert result.failure.type_name == "ValueError"
    assert "notes.search" in result.failure.message


async def test_a_host_failure_a_provider_leaves_unhandled_is_capability_failed_and_keeps_the_host_private(
    lease: Lease,
) -> None:
    result = await run(lease, program(["call", "notes.broken", {}]))
    assert isinstance(result.failure, CapabilityFailed)
    assert result.failure.path == "notes.broken"
    assert result.reference == result.failure.reference
    assert "/srv/secret" not in result.text


async def test_a_call_to_an_alias_the_request_does_not_bind_is_answered_as_the_guests_error(lease: Lease) -> None:
    unbound = CallMessage(call_id=0, alias="elsewhere", path="search", input={})
    result = await run(lease, program(["send", encode_sandbox_message(unbound).decode()], ["return-answer"]))
    assert result.value == {
        "type": "call-result",
        "call_id": 0,
        "ok": False,
        "value": None,
        "error": {"type_name": "AttributeError", "message": "no operation elsewhere.search"},
    }


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        '{"type": "done"}',
        '{"type": "done", "value": 1, "value": 2}',
        '{"type": "teleport"}',
    ],
    ids=["not-json", "missing-field", "repeated-key", "unknown-type"],
)
async def test_anything_malformed_a_provider_sends_ends_the_run_as_bad_response(lease: Lease, line: str) -> None:
    result = await run(lease, program(["send", line]))
    assert isinstance(result.failure, BadResponse)


async def test_a_line_longer_than_the_message_bound_is_bad_response_and_never_read_whole(lease: Lease) -> None:
    result = await run(lease, program(["flood", 4 * MAX_SANDBOX_MESSAGE_BYTES]))
    assert isinstance(result.failure, BadResponse)


async def test_a_provider_that_is_full_before_any_call_is_sandbox_busy(lease: Lease) -> None:
    result = await run(lease, program(["fail", {"code": "sandbox-busy", "capacity": 2, "waited_ms": 10}]))
    assert result.failure == SandboxBusy(capacity=2, waited_ms=10)


async def test_a_provider_that_claims_to_be_full_after_a_call_is_not_believed(lease: Lease) -> None:
    busy = {"code": "sandbox-busy", "capacity": 2, "waited_ms": 10}
    result = await run(lease, program(["call", "notes.search", {"text": "m"}], ["fail", busy]))
    assert isinstance(result.failure, BadResponse)


async def test_a_providers_own_syntax_failure_reaches_the_model_with_its_line(lease: Lease) -> None:
    result = await run(lease, '["return", 1]\n{oops')
    assert isinstance(result.failure, SyntaxFailure)
    assert result.failure.line == 2


async def test_a_provider_that_never_finishes_is_stopped_at_the_deadline() -> None:
    async with leased(notes(), timeout_ms=300) as lease:
        result = await run(lease, program(["hang"]))
    assert result.failure == DeadlineExceeded(timeout_ms=300, acknowledged=True)


async def test_a_provider_is_stopped_when_the_caller_cancels_mid_run() -> None:
    controller = AbortController()
    stop = operation(execute=lambda: controller.abort("the user left"), access="read")
    async with leased(Module(id="example-stop", name="stop", operations={"now": stop})) as lease:
        result = await lease.execute_tool.run(program(["call", "stop.now", {}], ["hang"]), signal=controller.signal)
    assert result.failure == Cancelled(acknowledged=True)


async def test_a_provider_that_dies_mid_run_is_transport_lost(lease: Lease) -> None:
    result = await run(lease, program(["print", "about to go"], ["exit"]))
    assert isinstance(result.failure, TransportLost)
    assert result.logs == ("about to go",)


async def test_a_provider_that_floods_its_output_is_cut_at_the_print_bound(lease: Lease) -> None:
    result = await run(lease, program(["print", "x" * 1_000, 50], ["return", "done"]))
    assert result.value == "done"
    assert sum(map(len, result.logs[:-1])) == MAX_PRINTED_CHARS
    assert result.logs[-1] == "... (the rest of the output was cut)"


async def test_a_message_exactly_at_the_bound_is_read_and_one_byte_more_is_bad_response(lease: Lease) -> None:
    result = await run(lease, program(["return-sized", MAX_SANDBOX_MESSAGE_BYTES]))
    assert isinstance(result.failure, ResultTooLarge)  # read and decoded: then the host's own result bound
    result = await run(lease, program(["return-sized", MAX_SANDBOX_MESSAGE_BYTES + 1]))
    assert isinstance(result.failure, BadResponse)
