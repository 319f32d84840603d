"""What crosses the boundary is exactly JSON: nothing is silently changed on the way.

Monty hands the host a text in place of a value it cannot convert (a function, a range,
an iterator, a cycle, a call never awaited). Such a value is refused, as operation input
(a ``ValueError`` naming the field, before the call is placed) and as a result
(``invalid-result``), and it never reaches the host as data. Sizing a value stops at its
limit, whatever the shape: a few kilobytes that share one list a million times are
refused quickly. The depth limit is one number for input and result alike.
"""

from __future__ import annotations

import pytest

from mycelium._values import MAX_JSON_DEPTH
from mycelium.failures import InvalidResult, ResultTooLarge

from .conftest import QUICK_BOUND_S, Host, Outcome

NOT_JSON = {
    "lambda": "(lambda: 1)",
    "function": "f",
    "builtin-function": "asyncio.gather",
    "bound-method": "Box().get",
    "regex-match": "re.match('a', 'a')",
    "range": "range(3)",
    "list-iterator": "iter([1, 2])",
    "dict-keys": "{'a': 1}.keys()",
    "dict-items": "{'a': 1}.items()",
    "slice": "slice(1, 2)",
    "module": "notes",
    "set": "{1, 2}",
    "bytes": "b'x'",
    "date": "datetime.date(2024, 1, 1)",
    "nan": "float('nan')",
    "cyclic-list": "cyclic_list",
    "cyclic-dict": "cyclic_dict",
    "too-deep": "too_deep",
    "tuple-cycle": "cyclic_tuple",
    "guest-coroutine": "guest_coroutine()",
    "pending-gather": "asyncio.gather(notes.search(query='x'))",
    "pending-call": "notes.search(query='x')",
}

SETUP = (
    "import asyncio\nimport datetime\nimport re\n"
    "class Box:\n    def get(self):\n        return 1\n"
    "async def guest_coroutine():\n    return 1\n"
    "inner = []\ncyclic_tuple = (inner,)\ninner.append(cyclic_tuple)\n"
    "def f():\n    return 1\n"
    "cyclic_list = [1]\ncyclic_list.append(cyclic_list)\n"
    "cyclic_dict = {}\ncyclic_dict['self'] = cyclic_dict\n"
    f"too_deep = []\nfor _ in range({MAX_JSON_DEPTH}):\n    too_deep = [too_deep]\n"
)


def assert_quick(outcome: Outcome) -> None:
    assert outcome.elapsed < QUICK_BOUND_S, f"took {outcome.elapsed:.1f} s"


@pytest.mark.parametrize("value", NOT_JSON.values(), ids=NOT_JSON.keys())
async def test_operation_input_that_is_not_json_is_a_value_error_naming_the_field_and_never_stored(
    host: Host, value: str
) -> None:
    outcome = await host.run(
        SETUP + f"try:\n    await notes.record(data={{'inner': [{value}]}})\nexcept ValueError as e:\n    return str(e)"
    )
    assert_quick(outcome)
    assert isinstance(outcome.result.value, str), outcome.result.text
    assert "notes.record" in outcome.result.value
    assert "/data/inner/0" in outcome.result.value
    assert host.state.records == []


RESULTS_NOT_JSON = {name: value for name, value in NOT_JSON.items() if name not in ("pending-call", "pending-gather")}


@pytest.mark.parametrize("value", RESULTS_NOT_JSON.values(), ids=RESULTS_NOT_JSON.keys())
async def test_a_result_that_is_not_json_is_invalid_result(host: Host, value: str) -> None:
    outcome = await host.run(SETUP + f"return {{'inner': [{value}]}}")
    assert_quick(outcome)
    assert isinstance(outcome.result.failure, InvalidResult), outcome.result.text
    assert "/inner/0" in outcome.result.failure.reason


def test_every_refused_form_is_covered() -> None:
    # The guest-made texts this suite feeds are the forms the boundary refuses; a form
    # added to the boundary needs a program here.
    assert len(NOT_JSON) >= 22


async def test_the_depth_limit_is_one_number_for_input_and_result(host: Host) -> None:
    # x is MAX_JSON_DEPTH lists deep; an input object holding x[0] is as deep as x.
    deepest = f"x = 0\nfor _ in range({MAX_JSON_DEPTH}):\n    x = [x]\n"
    accepted = await host.run(deepest + "await notes.record(data=x[0])\nreturn x")
    assert not accepted.result.is_error, accepted.result.text
    catch = "except ValueError as e:\n    return str(e)"
    refused_input = await host.run(deepest + f"try:\n    await notes.record(data=x)\n{catch}")
    assert f"deeper than {MAX_JSON_DEPTH}" in str(refused_input.result.value)
    refused_result = await host.run(deepest + "return [x]")
    assert isinstance(refused_result.result.failure, InvalidResult)
    assert f"deeper than {MAX_JSON_DEPTH}" in refused_result.result.failure.reason
    assert len(host.state.records) == 1


SHARED_RESULTS = {
    "list-of-shared-lists": "a = [0] * 1000\nb = [a] * 1000\nreturn [b] * 60",
    "doubling": "x = [0]\nfor _ in range(60):\n    x = [x, x]\nreturn x",
    "shared-dicts": "d = {str(i): i for i in range(100)}\nreturn [d] * 100000",
    "shared-long-string": "s = 'x' * 60000\nreturn [s] * 100000",
    "many-small": "return list(range(200000))",
}


@pytest.mark.parametrize("code", SHARED_RESULTS.values(), ids=SHARED_RESULTS.keys())
async def test_a_huge_result_built_from_shared_parts_is_refused_quickly_as_too_large(host: Host, code: str) -> None:
    outcome = await host.run(code)
    assert isinstance(outcome.result.failure, ResultTooLarge), outcome.result.text
    assert outcome.result.failure.size > outcome.result.failure.limit
    assert_quick(outcome)


@pytest.mark.parametrize(
    "data",
    ["[[[0] * 1000] * 1000] * 60", "'x' * 5_000_000", "list(range(200_000))", "[{'k': 'v' * 100}] * 100_000"],
    ids=["shared-lists", "long-string", "many-ints", "shared-dicts"],
)
async def test_a_huge_operation_input_is_refused_quickly_before_the_call_is_placed(host: Host, data: str) -> None:
    outcome = await host.run(f"try:\n    await notes.record(data={data})\nexcept ValueError as e:\n    return str(e)")
    assert_quick(outcome)
    assert "bytes" in str(outcome.result.value), outcome.result.text
    assert host.state.records == []


async def test_a_pending_call_passed_as_data_is_refused_not_stored_as_text(host: Host) -> None:
    outcome = await host.run(
        "found = notes.search(query='x')\n"
        "try:\n    await notes.record(data=found)\nexcept ValueError as e:\n    return str(e)"
    )
    assert "never awaited" in str(outcome.result.value), outcome.result.text
    assert host.state.records == []


async def test_a_write_called_without_await_is_not_dropped(host: Host) -> None:
    outcome = await host.run("notes.record(data='kept')\nreturn 'ok'")
    assert outcome.result.value == "ok", outcome.result.text
    assert host.state.records == ["kept"]


async def test_a_call_still_running_when_the_program_ends_is_waited_for_and_the_output_says_so(host: Host) -> None:
    outcome = await host.run("notes.hold(text='slow')\nreturn 'ok'")
    assert outcome.result.value == "ok", outcome.result.text
    assert host.state.held_bytes == 0, "the call finished before the run settled"
    assert any("notes.hold" in line and "without `await`" in line for line in outcome.result.logs)


async def test_values_that_are_json_cross_unchanged(host: Host) -> None:
    value = "{'t': 'a\\u2028b\\x85c\\x0cd', 'n': [1, -2.5, None, True], 'e': {}, 's': '[...]x', 'r': 'range'}"
    outcome = await host.run(f"v = {value}\nawait notes.record(data=v)\nreturn v")
    expected = {"t": "a\u2028b\x85c\x0cd", "n": [1, -2.5, None, True], "e": {}, "s": "[...]x", "r": "range"}
    assert outcome.result.value == expected
    assert host.state.records == [expected]
