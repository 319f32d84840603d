"""Host errors: a failure on the host side is OperationFailed with a reference, never host detail.

The exception itself reaches only the host, through ``Runtime(on_operation_error=...)`` and
the ``mycelium`` logger, under the same reference the caller sees.
"""

import logging
import math
from typing import Any

import pytest
from pydantic import BaseModel, field_serializer, field_validator

from mycelium import (
    InvalidInput,
    InvocationContext,
    Module,
    Operation,
    OperationEvidence,
    OperationFailed,
    Runtime,
    operation,
)
from mycelium.testing import direct_sandbox, rejecting_sandbox

MODULE_ID = "host-errors-module"
SECRET = "s3cr3t-db-password-hunter2"


class Order(BaseModel):
    quantity: int


class ExplodingValidator(BaseModel):
    quantity: int

    @field_validator("quantity")
    @classmethod
    def _look_up(cls, quantity: int) -> int:
        raise RuntimeError(f"lookup table unavailable: {SECRET}")


class KeyErrorValidator(BaseModel):
    sku: str

    @field_validator("sku")
    @classmethod
    def _look_up(cls, sku: str) -> str:
        raise KeyError(SECRET)


class ExplodingSerializer(BaseModel):
    quantity: int

    @field_serializer("quantity")
    def _encode(self, quantity: int) -> str:
        raise RuntimeError(f"encoder broke: {SECRET}")


class Measured(BaseModel):
    value: float


class LeakyError(Exception):
    def __str__(self) -> str:
        return f"connection to postgres://admin:{SECRET}@db failed"


def _boom() -> None:
    raise LeakyError


async def _async_boom() -> None:
    raise LeakyError


def _module(operations: dict[str, Operation | Module]) -> Module:
    return Module(id=MODULE_ID, name="shop", operations=operations)


async def _failure(op: Operation, input: object = None, **runtime_options: Any) -> OperationFailed:
    """Invoke ``op`` directly and return the OperationFailed it must raise."""
    async with Runtime(modules=[_module({"op": op})], sandbox=rejecting_sandbox(), **runtime_options) as runtime:
        with pytest.raises(OperationFailed) as caught:
            await runtime.invoke(MODULE_ID, "op", input)
    return caught.value


def _chain(exc: BaseException | None) -> list[BaseException]:
    found: list[BaseException] = []
    while exc is not None and exc not in found:
        found.append(exc)
        exc = exc.__cause__ or exc.__context__
    return found


def _assert_no_host_detail(err: OperationFailed) -> None:
    assert SECRET not in str(err)
    assert SECRET not in repr(err)
    assert "LeakyError" not in str(err)
    assert "Traceback" not in str(err)
    assert err.__cause__ is None
    assert err.__context__ is None
    assert all(SECRET not in str(arg) for arg in err.args)


# --- the caller's view -----------------------------------------------------------------------


async def test_operation_that_raises_gives_operation_failed_not_invalid_input() -> None:
    err = await _failure(operation(execute=_boom))

    assert not isinstance(err, InvalidInput)
    assert not isinstance(err, ValueError)


async def test_async_operation_that_raises_gives_operation_failed() -> None:
    err = await _failure(operation(execute=_async_boom))

    assert not isinstance(err, InvalidInput)


async def test_operation_failed_carries_module_operation_and_a_short_reference() -> None:
    err = await _failure(operation(execute=_boom))

    assert err.module == MODULE_ID
    assert err.operation == "op"
    assert isinstance(err.reference, str)
    assert 0 < len(err.reference) <= 32
    assert err.reference in str(err)


async def test_operation_failed_names_the_enclosing_module_and_the_relative_path_of_a_nested_operation() -> None:
    windows = Module(id="child-windows", name="windows", operations={"open": operation(execute=_boom)})
    app = Module(id="app-bazaar", name="bazaar", namespace=["apps"], operations={"windows": windows})

    async with Runtime(modules=[app], sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(OperationFailed) as caught:
            await runtime.invoke("app-bazaar", "windows.open", {})

    assert caught.value.module == "app-bazaar"
    assert caught.value.operation == "windows.open"


async def test_each_host_failure_gets_its_own_reference() -> None:
    first = await _failure(operation(execute=_boom))
    second = await _failure(operation(execute=_boom))

    assert first.reference != second.reference


async def test_operation_failed_message_holds_no_exception_text_and_no_chained_exception() -> None:
    err = await _failure(operation(execute=_boom))

    _assert_no_host_detail(err)


async def test_async_operation_failed_message_holds_no_exception_text_and_no_chained_exception() -> None:
    err = await _failure(operation(execute=_async_boom))

    _assert_no_host_detail(err)


async def test_validator_raising_runtime_error_is_a_host_error_not_invalid_input() -> None:
    ran: list[object] = []
    err = await _failure(operation(input=ExplodingValidator, execute=lambda value: ran.append(value)), {"quantity": 1})

    assert not isinstance(err, InvalidInput)
    _assert_no_host_detail(err)
    assert ran == []


async def test_validator_raising_key_error_is_a_host_error_not_invalid_input() -> None:
    err = await _failure(operation(input=KeyErrorValidator, execute=lambda value: value), {"sku": "abc"})

    assert not isinstance(err, InvalidInput)
    _assert_no_host_detail(err)


async def test_decorated_parameter_validator_raising_runtime_error_is_a_host_error() -> None:
    module = _module({})

    @module.operation()
    def place(order: ExplodingValidator) -> None:
        return None

    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(OperationFailed) as caught:
            await runtime.invoke(MODULE_ID, "place", {"order": {"quantity": 1}})

    _assert_no_host_detail(caught.value)


async def test_serializer_that_raises_is_a_host_error() -> None:
    err = await _failure(operation(output=ExplodingSerializer, execute=lambda: ExplodingSerializer(quantity=1)))

    assert not isinstance(err, InvalidInput)
    _assert_no_host_detail(err)


async def test_output_that_fails_its_pydantic_schema_is_a_host_error() -> None:
    err = await _failure(operation(output=Order, execute=lambda: {"quantity": f"not a number {SECRET}"}))

    assert not isinstance(err, InvalidInput)
    _assert_no_host_detail(err)


async def test_output_that_fails_its_json_schema_is_a_host_error() -> None:
    schema = {"type": "object", "properties": {"quantity": {"type": "integer"}}, "required": ["quantity"]}
    err = await _failure(operation(output=schema, execute=lambda: {"quantity": SECRET}))

    assert not isinstance(err, InvalidInput)
    _assert_no_host_detail(err)


async def test_non_json_output_without_an_output_schema_is_a_host_error() -> None:
    err = await _failure(operation(execute=lambda: {SECRET, "set"}))

    assert not isinstance(err, InvalidInput)
    _assert_no_host_detail(err)


async def test_pydantic_output_that_encodes_to_a_non_json_float_is_a_host_error() -> None:
    # JSON has no NaN: an operation's encoded output must be a JSON value, or the call fails on the host.
    op = operation(output=Measured, execute=lambda: Measured(value=math.nan))

    async with Runtime(modules=[_module({"op": op})], sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(OperationFailed):
            await runtime.invoke(MODULE_ID, "op", {})


async def test_invalid_input_is_the_callers_fault_and_not_reported_as_a_host_error() -> None:
    reported: list[OperationEvidence] = []
    op = operation(input=Order, execute=lambda order: order.quantity)

    async with Runtime(
        modules=[_module({"op": op})], sandbox=rejecting_sandbox(), on_operation_error=reported.append
    ) as runtime:
        with pytest.raises(InvalidInput):
            await runtime.invoke(MODULE_ID, "op", {"quantity": "many"})

    assert reported == []


# --- the host's view -------------------------------------------------------------------------


async def test_on_operation_error_receives_the_exception_with_the_same_reference_at_stage_execute() -> None:
    reported: list[OperationEvidence] = []

    err = await _failure(operation(execute=_boom), on_operation_error=reported.append)

    [evidence] = reported
    assert isinstance(evidence, OperationEvidence)
    assert evidence.reference == err.reference
    assert evidence.stage == "execute"
    assert isinstance(evidence.exception, LeakyError)
    assert evidence.module_id == MODULE_ID
    assert evidence.operation == "op"
    assert isinstance(evidence.context, InvocationContext)
    assert evidence.context.module_id == MODULE_ID


async def test_on_operation_error_reports_a_raising_validator_at_stage_decode() -> None:
    reported: list[OperationEvidence] = []

    err = await _failure(
        operation(input=ExplodingValidator, execute=lambda value: value),
        {"quantity": 1},
        on_operation_error=reported.append,
    )

    [evidence] = reported
    assert evidence.reference == err.reference
    assert evidence.stage == "decode"
    assert isinstance(evidence.exception, RuntimeError)
    assert SECRET in str(evidence.exception)


async def test_on_operation_error_reports_a_raising_serializer_at_stage_encode() -> None:
    reported: list[OperationEvidence] = []

    err = await _failure(
        operation(output=ExplodingSerializer, execute=lambda: ExplodingSerializer(quantity=1)),
        on_operation_error=reported.append,
    )

    [evidence] = reported
    assert evidence.reference == err.reference
    assert evidence.stage == "encode"
    # pydantic may wrap the serializer's exception; the original must still be reachable by the host.
    assert any(isinstance(exc, RuntimeError) and SECRET in str(exc) for exc in _chain(evidence.exception))


async def test_on_operation_error_reports_an_output_that_fails_its_schema_at_stage_encode() -> None:
    reported: list[OperationEvidence] = []

    err = await _failure(
        operation(output=Order, execute=lambda: {"quantity": "lots"}),
        on_operation_error=reported.append,
    )

    [evidence] = reported
    assert evidence.reference == err.reference
    assert evidence.stage == "encode"


async def test_on_operation_error_that_raises_does_not_change_the_outcome() -> None:
    def broken_handler(evidence: OperationEvidence) -> None:
        raise RuntimeError(f"the error tracker is down: {SECRET}")

    err = await _failure(operation(execute=_boom), on_operation_error=broken_handler)

    assert isinstance(err, OperationFailed)
    _assert_no_host_detail(err)


async def test_async_on_operation_error_is_awaited_before_the_caller_sees_the_failure() -> None:
    reported: list[OperationEvidence] = []

    async def handler(evidence: OperationEvidence) -> None:
        reported.append(evidence)

    err = await _failure(operation(execute=_boom), on_operation_error=handler)

    assert [evidence.reference for evidence in reported] == [err.reference]


async def test_async_on_operation_error_that_raises_does_not_change_the_outcome() -> None:
    async def handler(evidence: OperationEvidence) -> None:
        raise RuntimeError(SECRET)

    err = await _failure(operation(execute=_async_boom), on_operation_error=handler)

    _assert_no_host_detail(err)


async def test_host_error_is_logged_on_the_mycelium_logger_with_reference_and_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="mycelium"):
        err = await _failure(operation(execute=_boom))

    records = [
        record
        for record in caplog.records
        if record.name == "mycelium" and record.levelno >= logging.ERROR and err.reference in record.getMessage()
    ]
    assert len(records) == 1
    [record] = records
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], LeakyError)


async def test_on_operation_error_that_raises_is_itself_logged(caplog: pytest.LogCaptureFixture) -> None:
    def broken_handler(evidence: OperationEvidence) -> None:
        raise RuntimeError("tracker down")

    with caplog.at_level(logging.ERROR, logger="mycelium"):
        err = await _failure(operation(execute=_boom), on_operation_error=broken_handler)

    handler_records = [
        record
        for record in caplog.records
        if record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)
    ]
    assert len(handler_records) == 1
    assert err.reference in handler_records[0].getMessage()


# --- inside an execute -----------------------------------------------------------------------


async def test_unhandled_operation_failed_in_an_execute_fails_it_with_capability_failed() -> None:
    reported: list[OperationEvidence] = []

    async def program(bindings: Any, signal: object) -> object:
        return await bindings.shop.op({})

    async with (
        Runtime(
            modules=[_module({"op": operation(execute=_boom)})],
            sandbox=direct_sandbox(program),
            on_operation_error=reported.append,
        ) as runtime,
        runtime.lease() as lease,
    ):
        result = await lease.execute_tool.run("return await shop.op()", tool_call_id="call-1")

    [evidence] = reported
    assert result.is_error
    assert result.value is None
    assert result.failure is not None
    assert result.failure.code == "capability-failed"
    assert result.failure.module == MODULE_ID  # type: ignore[union-attr]
    assert result.failure.operation == "op"  # type: ignore[union-attr]
    assert result.failure.reference == evidence.reference  # type: ignore[union-attr]
    assert evidence.context.tool_call_id == "call-1"


async def test_capability_failed_result_text_and_failure_hold_no_host_detail() -> None:
    async def program(bindings: Any, signal: object) -> object:
        return await bindings.shop.op({})

    async with (
        Runtime(modules=[_module({"op": operation(execute=_boom)})], sandbox=direct_sandbox(program)) as runtime,
        runtime.lease() as lease,
    ):
        result = await lease.execute_tool.run("return await shop.op()")

    assert result.failure is not None
    assert SECRET not in result.text
    assert "LeakyError" not in result.text
    assert SECRET not in repr(result.failure.to_dict())
    assert all(SECRET not in line for line in result.logs)


async def test_capability_failed_result_text_carries_the_reference_the_host_received() -> None:
    # The model reads result.text; the reference it can quote must be the one on_operation_error got.
    reported: list[OperationEvidence] = []

    async def program(bindings: Any, signal: object) -> object:
        return await bindings.shop.op({})

    async with (
        Runtime(
            modules=[_module({"op": operation(execute=_boom)})],
            sandbox=direct_sandbox(program),
            on_operation_error=reported.append,
        ) as runtime,
        runtime.lease() as lease,
    ):
        result = await lease.execute_tool.run("return await shop.op()")

    [evidence] = reported
    assert evidence.reference in result.text
    assert result.reference == evidence.reference


async def test_guest_can_catch_operation_failed_and_the_execute_succeeds() -> None:
    async def program(bindings: Any, signal: object) -> object:
        try:
            await bindings.shop.op({})
        except Exception as exc:
            return {"handled": type(exc).__name__, "message": str(exc)}
        return {"handled": None}

    async with (
        Runtime(modules=[_module({"op": operation(execute=_boom)})], sandbox=direct_sandbox(program)) as runtime,
        runtime.lease() as lease,
    ):
        result = await lease.execute_tool.run("...")

    assert not result.is_error
    assert result.value is not None
    assert result.value["handled"] == "OperationFailed"  # type: ignore[index,call-overload]
    assert SECRET not in result.text


async def test_guest_can_catch_invalid_input_as_value_error_and_the_execute_succeeds() -> None:
    ran: list[object] = []
    op = operation(input=Order, execute=lambda order: ran.append(order))

    async def program(bindings: Any, signal: object) -> object:
        try:
            await bindings.shop.op(quantity="many")
        except ValueError as exc:
            return {"caught": "ValueError", "mentions_field": "quantity" in str(exc)}
        return {"caught": None}

    async with (
        Runtime(modules=[_module({"op": op})], sandbox=direct_sandbox(program)) as runtime,
        runtime.lease() as lease,
    ):
        result = await lease.execute_tool.run("...")

    assert not result.is_error
    assert result.value == {"caught": "ValueError", "mentions_field": True}
    assert ran == []


async def test_unhandled_invalid_input_in_an_execute_is_not_a_capability_failure() -> None:
    async def program(bindings: Any, signal: object) -> object:
        return await bindings.shop.op(quantity="many")

    op = operation(input=Order, execute=lambda order: order.quantity)
    async with (
        Runtime(modules=[_module({"op": op})], sandbox=direct_sandbox(program)) as runtime,
        runtime.lease() as lease,
    ):
        result = await lease.execute_tool.run("...")

    assert result.is_error
    assert result.failure is not None
    assert result.failure.code != "capability-failed"
    assert "quantity" in result.text
