"""A program that returns, or passes to an operation, a value that is not JSON is told how to make it JSON."""

from __future__ import annotations

import pytest

from mycelium import Module, Runtime, ToolResult
from mycelium.failures import GuestException, InvalidResult
from mycelium.sandbox.monty import MontySandbox

VALUES = [
    ("datetime.datetime(2026, 1, 2, 3, 4)", ".isoformat()"),
    ("datetime.date(2026, 1, 2)", ".isoformat()"),
    ("datetime.timedelta(seconds=3)", ".total_seconds()"),
    ("{1, 2}", "sorted(...)"),
    ("frozenset({1, 2})", "sorted(...)"),
    ("b'ab'", ".decode()"),
    ("Point(1)", '{"name": item.name, ...}'),
]
PRELUDE = "import datetime\nclass Point:\n    def __init__(self, x):\n        self.x = x\n"


def _echo() -> Module:
    echo = Module(id="echo-v1", name="echo")

    @echo.operation(access="read")
    async def keep(value: str) -> str:
        """Return the value."""
        return value

    return echo


async def _run(code: str) -> ToolResult:
    async with Runtime(modules=[_echo()], sandbox=MontySandbox()) as runtime, runtime.lease() as lease:
        return await lease.execute_tool.run(PRELUDE + code)


@pytest.mark.parametrize(("value", "fix"), VALUES)
async def test_a_result_that_is_not_json_says_how_to_make_it_json(value: str, fix: str) -> None:
    result = await _run(f"return {{'when': {value}}}")
    assert isinstance(result.failure, InvalidResult)
    assert "the value at /when" in result.text
    assert fix in result.text


@pytest.mark.parametrize(("value", "fix"), VALUES)
async def test_an_operation_input_that_is_not_json_says_how_to_make_it_json(value: str, fix: str) -> None:
    result = await _run(f"return await echo.keep(value={value})")
    assert isinstance(result.failure, GuestException)
    assert "the value at /value" in result.text
    assert fix in result.text


async def test_the_advice_given_for_a_date_makes_a_result_that_is_json() -> None:
    result = await _run("return {'when': datetime.date(2026, 1, 2).isoformat(), 'ids': sorted({2, 1})}")
    assert result.value == {"when": "2026-01-02", "ids": [1, 2]}
