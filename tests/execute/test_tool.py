"""The execute tool: its definition, argument validation, result bounding and typed failures."""

from __future__ import annotations

import math
from collections.abc import Callable

import jsonschema
import pytest

from mycelium import ExecutionOptions, Module, Runtime, ToolCall, ToolResult, operation
from mycelium.failures import (
    BadResponse,
    Cancelled,
    CapabilityFailed,
    DeadlineExceeded,
    Failure,
    GuestException,
    InvalidArguments,
    InvalidResult,
    ResultTooLarge,
    SandboxBusy,
    SyntaxFailure,
    TransportLost,
    Unknown,
)
from mycelium.sandbox._boundary import MAX_FAILURE_MESSAGE_CHARS
from mycelium.testing import direct_sandbox, rejecting_sandbox

PING = Module(id="example-demo", name="demo", operations={"ping": operation(execute=lambda: {"value": "pong"})})


async def run_direct(
    value_fn: Callable[..., object], code: str = "...", options: ExecutionOptions | None = None
) -> ToolResult:
    async with Runtime(modules=[PING], sandbox=direct_sandbox(value_fn), execution=options) as runtime:
        async with runtime.lease() as lease:
            return await lease.execute_tool.run(code, tool_call_id="call-1")


async def test_definition_is_execute_with_one_required_string_code_property() -> None:
    async with Runtime(modules=[PING], sandbox=rejecting_sandbox()) as runtime, runtime.lease() as lease:
        definition = lease.execute_tool.definition
    assert definition.name == "execute"
    schema = definition.input_schema
    jsonschema.validators.validator_for(schema).check_schema(schema)
    assert schema["required"] == ["code"]
    assert schema["properties"]["code"]["type"] == "string"
    assert set(schema["properties"]) == {"code"}
    assert schema["additionalProperties"] is False


async def test_a_small_catalog_is_declared_in_full_as_python_stubs_with_the_calling_rules() -> None:
    async with Runtime(modules=[PING], sandbox=rejecting_sandbox()) as runtime, runtime.lease() as lease:
        description = lease.execute_tool.definition.description
    assert "# demo.ping\nasync def ping() -> Any:" in description
    assert "await" in description
    assert "return" in description
    assert "forage.search" in description


async def test_a_large_catalog_is_described_by_its_namespaces_with_a_pointer_to_search_and_stays_bounded() -> None:
    big = Module(
        id="big",
        name="big",
        operations={f"op_{i}": operation(execute=lambda: 1, description="x" * 150) for i in range(500)},
    )
    async with Runtime(modules=[big, PING], sandbox=rejecting_sandbox()) as runtime, runtime.lease() as lease:
        description = lease.execute_tool.definition.description
    assert len(description) <= 8_192
    assert "big (500 operations)" in description
    assert "demo (1 operation)" in description
    assert "forage.search" in description
    assert "async def op_1" not in description


async def test_success_text_is_the_compact_json_of_the_value() -> None:
    async def ping(bindings, signal):  # type: ignore[no-untyped-def]
        return await bindings.demo.ping({})

    result = await run_direct(ping)
    assert result.text == '{"value":"pong"}'
    assert result.value == {"value": "pong"}
    assert (result.is_error, result.failure, result.logs) == (False, None, ())


async def test_prepare_then_execute_runs_the_validated_call() -> None:
    async def ping(bindings, signal):  # type: ignore[no-untyped-def]
        return await bindings.demo.ping()

    async with Runtime(modules=[PING], sandbox=direct_sandbox(ping)) as runtime, runtime.lease() as lease:
        prepared = lease.execute_tool.prepare(
            ToolCall(id="call-2", name="execute", arguments='{"code": "return await demo.ping()"}')
        )
        result = await prepared.execute()
    assert result.text == '{"value":"pong"}'


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        ({}, "missing"),
        ({"code": 42}, "must be a string"),
        ({"code": None}, "must be a string"),
        ({"code": "1", "timeout": 5}, "unexpected"),
        (["code"], "must be an object"),
        ("{not json", "not valid JSON"),
        ({"code": "x" * 101}, "limit is 100"),
        ({"code": "return '\ud800'"}, "lone surrogate"),
        ('{"code": "return \'\\udc00\'"}', "lone surrogate"),
    ],
)
async def test_bad_arguments_fail_with_invalid_arguments_and_nothing_runs(arguments: object, complaint: str) -> None:
    ran: list[bool] = []

    def never(bindings: object, signal: object) -> None:
        ran.append(True)

    options = ExecutionOptions(max_code_bytes=100)
    async with Runtime(modules=[PING], sandbox=direct_sandbox(never), execution=options) as runtime:
        async with runtime.lease() as lease:
            call = ToolCall(id="c", name="execute", arguments=arguments)  # type: ignore[arg-type]
            result = await lease.execute_tool.prepare(call).execute()
    assert result.is_error
    assert isinstance(result.failure, InvalidArguments)
    assert complaint in result.failure.message
    assert result.failure.code == "invalid-arguments"
    assert ran == []


async def test_code_limit_counts_utf8_bytes_not_characters() -> None:
    options = ExecutionOptions(max_code_bytes=10)
    async with Runtime(modules=[PING], sandbox=direct_sandbox(lambda b, s: 1), execution=options) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("é" * 6)  # 6 characters, 12 bytes
    assert isinstance(result.failure, InvalidArguments)


async def test_a_program_over_the_size_bound_is_told_to_split_the_work_not_to_reshape_the_call() -> None:
    options = ExecutionOptions(max_code_bytes=100)
    async with Runtime(modules=[PING], sandbox=direct_sandbox(lambda b, s: 1), execution=options) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("x = 1\n" * 50)
    assert isinstance(result.failure, InvalidArguments)
    assert "'code' is 300 bytes; the limit is 100" in result.text
    assert "Split the work into several smaller executes" in result.text
    assert "keep data out of the code" in result.text
    assert "and nothing else" not in result.text


async def test_a_call_of_the_wrong_shape_is_still_told_the_shape_to_use() -> None:
    async with Runtime(modules=[PING], sandbox=direct_sandbox(lambda b, s: 1)) as runtime, runtime.lease() as lease:
        call = ToolCall(id="c", name="execute", arguments={"cod": "1"})
        result = await lease.execute_tool.prepare(call).execute()
    assert 'Call it with {"code": "<a Python program>"} and nothing else.' in result.text


async def test_a_call_naming_another_tool_is_invalid_arguments() -> None:
    async with Runtime(modules=[PING], sandbox=direct_sandbox(lambda b, s: 1)) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.prepare(ToolCall(id="c", name="search", arguments={"code": "1"})).execute()
    assert isinstance(result.failure, InvalidArguments)


async def test_a_result_over_the_limit_is_result_too_large_and_never_truncated() -> None:
    options = ExecutionOptions(max_result_bytes=100)
    result = await run_direct(lambda b, s: "x" * 200, options=options)
    assert result.is_error
    assert result.failure == ResultTooLarge(size=202, limit=100)
    assert result.value is None
    assert "x" * 20 not in result.text


async def test_a_result_exactly_at_the_limit_is_admitted() -> None:
    options = ExecutionOptions(max_result_bytes=100)
    result = await run_direct(lambda b, s: "x" * 98, options=options)
    assert not result.is_error
    assert len(result.text.encode()) == 100


async def test_the_default_result_limit_is_64_kib() -> None:
    result = await run_direct(lambda b, s: "x" * (64 * 1024))
    assert isinstance(result.failure, ResultTooLarge)
    assert result.failure.limit == 64 * 1024


def _cycle() -> object:
    items: list[object] = []
    items.append(items)
    return items


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({1, 2}, "set"),
        (b"bytes", "bytes"),
        (math.nan, "nan"),
        (math.inf, "inf"),
        ({1: "a"}, "int key"),
        (_cycle(), "cycle"),
        (object(), "object"),
        ({"deep": [{"x": {2}}]}, "/deep/0/x"),
    ],
)
async def test_a_value_that_is_not_json_is_invalid_result(value: object, reason: str) -> None:
    result = await run_direct(lambda b, s: value)
    assert result.is_error
    assert isinstance(result.failure, InvalidResult)
    assert reason in result.failure.reason


async def test_a_shared_sub_value_is_not_mistaken_for_a_cycle() -> None:
    shared = {"a": 1}
    result = await run_direct(lambda b, s: [shared, shared])
    assert result.text == '[{"a":1},{"a":1}]'


async def test_nesting_deeper_than_the_limit_is_invalid_result_not_a_crash() -> None:
    value: object = []
    for _ in range(100_000):
        value = [value]
    result = await run_direct(lambda b, s: value)
    assert isinstance(result.failure, InvalidResult)
    assert "deeper" in result.failure.reason


async def test_tuples_are_json_arrays() -> None:
    result = await run_direct(lambda b, s: (1, "a"))
    assert result.text == '[1,"a"]'


async def test_non_ascii_text_stays_as_is_and_is_measured_in_utf8_bytes() -> None:
    result = await run_direct(lambda b, s: "héllo")
    assert result.text == '"héllo"'


ALL_FAILURES: list[Failure] = [
    SyntaxFailure(message="invalid syntax", line=3, column=7),
    GuestException(type_name="KeyError", message="'missing'", traceback="line 2"),
    TransportLost(),
    BadResponse(),
    CapabilityFailed(module="notes-v1", operation="search", reference="ref-1"),
    DeadlineExceeded(timeout_ms=1000, acknowledged=True),
    Cancelled(acknowledged=False),
    InvalidResult(reason="a set"),
    ResultTooLarge(size=10, limit=5),
    SandboxBusy(capacity=2, waited_ms=100),
    InvalidArguments(message="missing code"),
    Unknown(),
]


@pytest.mark.parametrize("failure", ALL_FAILURES, ids=lambda f: f.code)
async def test_a_typed_sandbox_failure_reaches_the_result_with_a_bounded_message_and_reference(
    failure: Failure,
) -> None:
    async with Runtime(modules=[PING], sandbox=rejecting_sandbox(failure)) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run("1")
    assert result.is_error
    assert result.failure == failure
    assert result.reference is not None
    assert result.reference in result.text
    assert len(result.text) <= MAX_FAILURE_MESSAGE_CHARS


def test_every_failure_has_a_distinct_stable_code() -> None:
    codes = [failure.code for failure in ALL_FAILURES]
    assert codes == [
        "syntax",
        "guest-exception",
        "transport-lost",
        "bad-response",
        "capability-failed",
        "deadline-exceeded",
        "cancelled",
        "invalid-result",
        "result-too-large",
        "sandbox-busy",
        "invalid-arguments",
        "unknown",
    ]
    assert all(failure.to_dict()["code"] == failure.code for failure in ALL_FAILURES)


async def test_rejecting_sandbox_defaults_to_unknown() -> None:
    async with Runtime(modules=[PING], sandbox=rejecting_sandbox()) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run("1")
    assert result.failure == Unknown()


async def test_a_foreign_exception_from_the_sandbox_is_unknown_and_its_text_stays_out() -> None:
    def explode(bindings: object, signal: object) -> None:
        raise RuntimeError("secret-host-detail /etc/shadow")

    result = await run_direct(explode)
    assert result.failure == Unknown()
    assert "secret" not in result.text
    assert "/etc" not in result.text


async def test_a_callers_abort_reaches_the_sandbox_and_a_late_success_is_reported_as_cancelled() -> None:
    from mycelium import AbortController

    controller = AbortController()
    seen: list[bool] = []

    def observe(bindings: object, signal: object) -> int:
        controller.abort("user pressed stop")
        seen.append(signal.aborted)  # type: ignore[attr-defined]
        return 1

    async with Runtime(modules=[PING], sandbox=direct_sandbox(observe)) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run("1", signal=controller.signal)
    assert seen == [True]
    assert result.failure == Cancelled(acknowledged=True)
