"""What a model reads about a failure, and what the operator's log holds for it.

- A host failure names the path the program called, never the module id the model never saw.
- No message promises that a retry helps where the host cannot know it would.
- A call with the wrong shape says how to call; no message names an internal class or field.
- A detail that ends its own sentence ("...import 'asyncio'?") gets no second mark.
- One host failure logs its traceback exactly once, under the reference the model reads.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import AsyncIterator
from typing import Annotated

import pytest
from pydantic import AfterValidator, BaseModel

from mycelium import InvalidInput, Module, Operation, OperationFailed, Runtime, ToolResult, direct_tool, operation
from mycelium._operations import operation_from_function
from mycelium._schemas import SchemaViolation
from mycelium.failures import (
    BadResponse,
    CapabilityFailed,
    Failure,
    GuestException,
    InvalidArguments,
    InvalidResult,
    SandboxBusy,
    SyntaxFailure,
    Unknown,
)
from mycelium.sandbox._boundary import sandbox_failure_message
from mycelium.sandbox.monty import MontySandbox
from mycelium.testing import rejecting_sandbox

MODULE_ID = "acme-billing-v1"
PATH = "apps.billing.invoices.total"
HOST_SECRET = "postgres://billing:hunter2@db"


class Customer(BaseModel):
    id: int


@dataclasses.dataclass
class Period:
    year: int


def _checked(value: int) -> int:
    return value


def _billing() -> Module:
    billing = Module(id=MODULE_ID, name="billing", namespace=["apps"], description="Invoices")

    @billing.operation(name="invoices.total", access="read")
    def total(customer: str, year: int = 2024) -> int:
        """Total of a customer's invoices."""
        raise ConnectionError(HOST_SECRET)

    @billing.operation(name="invoices.count", access="read")
    def count(customer: str, year: int = 2024) -> int:
        return 3

    return billing


@pytest.fixture
async def monty() -> AsyncIterator[MontySandbox]:
    async with MontySandbox() as sandbox:
        yield sandbox


async def _run(code: str, sandbox: MontySandbox) -> ToolResult:
    async with Runtime(modules=[_billing()], sandbox=sandbox) as runtime, runtime.lease() as lease:
        return await lease.execute_tool.run(code, tool_call_id="call-1")


# --- a host failure names what the model typed ---------------------------------------------


async def test_a_host_failure_names_the_path_the_program_called_never_the_module_id(monty: MontySandbox) -> None:
    result = await _run(f"return await {PATH}(customer='c')", monty)
    assert isinstance(result.failure, CapabilityFailed), result.text
    assert result.failure.path == PATH
    assert (result.failure.module, result.failure.operation) == (MODULE_ID, "invoices.total")
    assert f"The operation {PATH} failed on the host" in result.text
    assert MODULE_ID not in result.text
    assert HOST_SECRET not in result.text


async def test_a_host_failure_the_program_catches_names_the_path_never_the_module_id(monty: MontySandbox) -> None:
    result = await _run(f"try:\n    await {PATH}(customer='c')\nexcept RuntimeError as e:\n    return str(e)", monty)
    assert isinstance(result.value, str), result.text
    assert result.value.startswith(f"{PATH} failed on the host (reference ref-")
    assert MODULE_ID not in result.value


async def test_a_direct_tool_host_failure_names_the_tool() -> None:
    def explode() -> int:
        raise ConnectionError(HOST_SECRET)

    tool = direct_tool(name="weather", description="Weather now", execute=explode, grant_key="ext-weather")
    async with Runtime(tools=[tool], sandbox=rejecting_sandbox(Unknown())) as runtime, runtime.lease() as lease:
        result = await lease.tools[0].call({})
    assert isinstance(result.failure, CapabilityFailed)
    assert result.failure.path == "weather"
    assert "The operation weather failed on the host" in result.text
    assert "ext-weather" not in result.text


# --- no promise that a retry helps --------------------------------------------------------


UNSURE: list[Failure] = [
    CapabilityFailed(module=MODULE_ID, operation="invoices.total", reference="ref-1", path=PATH),
    BadResponse(),
    Unknown(),
]


@pytest.mark.parametrize("failure", UNSURE, ids=lambda failure: failure.code)
def test_a_fault_the_host_cannot_judge_says_a_retry_may_help_and_how_to_go_on(failure: Failure) -> None:
    text = sandbox_failure_message(failure, "ref-1")
    assert "Retry later" not in text
    assert "It may work if tried again later; if it fails again, continue without it or tell the user." in text


@pytest.mark.parametrize(
    "failure",
    [
        SyntaxFailure(message="invalid syntax", line=1),
        GuestException(type_name="KeyError", message="'x'"),
        InvalidResult(reason="a set"),
        InvalidArguments(message="missing code"),
    ],
    ids=lambda failure: failure.code,
)
def test_a_deterministic_fault_never_suggests_retrying_the_same_thing(failure: Failure) -> None:
    text = sandbox_failure_message(failure, "ref-1").lower()
    assert "retry" not in text
    assert "tried again later" not in text


def test_only_contention_is_told_to_retry_later() -> None:
    assert "Retry later." in sandbox_failure_message(SandboxBusy(capacity=2, waited_ms=10), "ref-1")


# --- a call with the wrong shape, in the operation's own words ---------------------------------


async def test_a_positional_argument_to_a_decorated_operation_says_to_use_keywords_or_one_mapping(
    monty: MontySandbox,
) -> None:
    result = await _run(f"try:\n    await {PATH}('c')\nexcept ValueError as e:\n    return str(e)", monty)
    assert isinstance(result.value, str), result.text
    assert "call it with keyword arguments or one mapping" in result.value
    assert "got str" in result.value
    assert "TotalInput" not in result.value
    assert "instance of" not in result.value


def _decorated_operation() -> Operation:
    def plan(
        customer: Customer,
        period: Period,
        tags: list[Customer | None],
        checked: Annotated[int, AfterValidator(_checked)] | str,
        json: int = 0,
    ) -> None:
        """The parameter called json is stored under an internal field name."""

    return operation_from_function(plan)


@pytest.mark.parametrize(
    "raw",
    [
        5,
        "x",
        None,
        [1, 2],
        {},
        {"customer": 5, "period": 5, "tags": [5], "checked": [], "json": "x"},
        {"customer": {"id": "x"}, "period": {"year": "y"}, "tags": "no", "checked": 1, "extra": 1},
    ],
    ids=repr,
)
def test_input_errors_never_name_internal_classes_fields_or_host_functions(raw: object) -> None:
    op = _decorated_operation()
    with pytest.raises(SchemaViolation) as caught:
        op.decode_input(raw)
    text = "\n".join(caught.value.errors)
    assert not re.search(r"\bp\d+\b", text), text
    for internal in ("PlanInput", "Customer", "Period", "_checked", "function-after", "instance of"):
        assert internal not in text, text


def test_a_non_mapping_input_to_an_explicit_model_operation_gets_the_same_guidance() -> None:
    op = operation(input=Customer, execute=lambda customer: customer.id)
    with pytest.raises(SchemaViolation) as caught:
        op.decode_input([1])
    assert caught.value.errors == [
        "(value): the input must be named arguments, got list: call it with keyword arguments or one mapping"
    ]


# --- one mark at the end of a sentence ---------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("name 'asyncio' is not defined. Did you forget to import 'asyncio'?", "import 'asyncio'? Fix"),
        ("stop!", "ValueError: stop! Fix"),
        ("it broke.", "ValueError: it broke. Fix"),
        ("it broke", "ValueError: it broke. Fix"),
        ("", "raised ValueError. Fix"),
    ],
    ids=["question", "exclamation", "full-stop", "no-mark", "empty"],
)
def test_a_detail_that_ends_its_own_sentence_gets_no_second_mark(message: str, expected: str) -> None:
    text = sandbox_failure_message(GuestException(type_name="ValueError", message=message), "ref-1")
    assert expected in text
    assert not re.search(r"[?!.][.?!](?!\.)", text.replace("...", "")), text


@pytest.mark.parametrize(
    "failure",
    [
        SyntaxFailure(message="Did you mean 'x'?", line=1),
        InvalidResult(reason="is that a set?"),
        InvalidArguments(message="what is 'cod'?"),
    ],
    ids=lambda failure: failure.code,
)
def test_every_message_with_a_detail_ends_the_detail_with_one_mark(failure: Failure) -> None:
    text = sandbox_failure_message(failure, "ref-1")
    assert "?." not in text
    assert "?:" not in text


async def test_a_name_the_program_forgot_to_import_reads_as_one_question(monty: MontySandbox) -> None:
    result = await _run("await asyncio.sleep(0)", monty)
    assert isinstance(result.failure, GuestException), result.text
    assert "Did you forget to import 'asyncio'? Fix" in result.text
    assert "?." not in result.text


# --- one traceback per host failure ------------------------------------------------------


def _tracebacks(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.exc_info]


async def test_an_unhandled_host_failure_logs_its_traceback_once_and_the_run_names_its_reference(
    monty: MontySandbox, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mycelium")
    result = await _run(f"return await {PATH}(customer='c')", monty)
    assert isinstance(result.failure, CapabilityFailed)
    assert result.reference is not None
    [evidence] = _tracebacks(caplog)
    assert PATH in evidence.getMessage()
    assert result.reference in evidence.getMessage()
    assert HOST_SECRET in caplog.text  # the operator has the evidence, once
    assert caplog.text.count("Traceback (most recent call last)") == 1
    run_logs = [r for r in caplog.records if "capability-failed" in r.getMessage()]
    assert [result.reference in r.getMessage() for r in run_logs] == [True]


async def test_a_host_failure_the_program_handles_logs_its_traceback_once(
    monty: MontySandbox, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mycelium")
    result = await _run(f"try:\n    await {PATH}(customer='c')\nexcept RuntimeError:\n    return 'handled'", monty)
    assert result.value == "handled"
    assert len(_tracebacks(caplog)) == 1
    assert caplog.text.count("Traceback (most recent call last)") == 1


async def test_a_host_failure_outside_any_program_logs_its_traceback_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mycelium")
    async with Runtime(modules=[_billing()], sandbox=rejecting_sandbox(Unknown())) as runtime:
        with pytest.raises(OperationFailed) as caught:
            await runtime.invoke(MODULE_ID, "invoices.total", {"customer": "c"})
    [evidence] = _tracebacks(caplog)
    assert caught.value.reference in evidence.getMessage()


async def test_invalid_input_logs_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mycelium")
    with pytest.raises(InvalidInput):
        async with Runtime(modules=[_billing()], sandbox=rejecting_sandbox(Unknown())) as runtime:
            await runtime.invoke(MODULE_ID, "invoices.count", "c")
    assert _tracebacks(caplog) == []
