"""JSON values: what may cross between guest and host."""

from __future__ import annotations

import datetime
import decimal
import enum
import pathlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mycelium._values import MAX_JSON_DEPTH, JsonTooLarge, NotJson, check_json, dumps_compact, json_size

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=30,
)


@given(json_values)
def test_every_json_value_is_accepted_and_round_trips(value: object) -> None:
    import json

    check_json(value)
    assert json.loads(dumps_compact(value)) == value  # type: ignore[arg-type]


class Color(enum.IntEnum):
    RED = 1


class Text(str):
    pass


@pytest.mark.parametrize("value", [Color.RED, Text("x"), {"k": Color.RED}])
def test_subclasses_of_json_types_are_refused_as_unencoded_host_data(value: object) -> None:
    with pytest.raises(NotJson):
        check_json(value)


def test_depth_is_bounded() -> None:
    value: object = 1
    for _ in range(MAX_JSON_DEPTH):
        value = [value]
    check_json(value)
    with pytest.raises(NotJson, match="deeper"):
        check_json([value])


@given(json_values)
def test_json_size_is_the_length_of_the_compact_encoding(value: object) -> None:
    assert json_size(value) == len(dumps_compact(value).encode("utf-8", "surrogatepass"))  # type: ignore[arg-type]


def test_json_size_counts_a_shared_sub_value_every_time_it_appears_but_measures_it_once() -> None:
    shared = [0] * 1000
    row = [shared] * 1000
    assert json_size([row] * 60) == 2 + 59 + 60 * len(dumps_compact(row))  # type: ignore[arg-type]
    doubled: object = [0]
    for _ in range(100):  # 2**100 copies of [0]: measurable only because each level is measured once
        doubled = [doubled, doubled]
    with pytest.raises(JsonTooLarge) as caught:
        json_size(doubled, limit=64 * 1024)
    assert caught.value.limit == 64 * 1024
    assert caught.value.size > caught.value.limit


@pytest.mark.parametrize(
    "value",
    ["x" * 10_000_000, [0] * 10_000_000, {str(i): i for i in range(100_000)}, [[0] * 10] * 1_000_000],
    ids=["long-string", "long-list", "wide-dict", "shared-rows"],
)
def test_json_size_refuses_what_cannot_fit_without_reading_past_the_limit(value: object) -> None:
    with pytest.raises(JsonTooLarge):
        json_size(value, limit=1024)


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"a": [1, float("nan")]}, "/a/1"),
        ({"a": {"b": {1, 2}}}, "/a/b"),
        ({"a": [{"k": 2**20000}]}, "/a/0/k"),
        ({"a": {1: "x"}}, "/a"),
        ([1.0] * 100 + [float("inf")], "/100"),
    ],
)
def test_json_size_says_where_a_value_is_not_json(value: object, where: str) -> None:
    with pytest.raises(NotJson, match=f"at {where} "):
        json_size(value)


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ("\ud800", "the value is"),
        ({"name": "caf\udce9"}, "/name"),
        ({"\udfff": 1}, "the value at /\\udfff is"),
        (["ok"] * 40 + ["\ud800"], "/40"),
        ({"a": [{"b": "x\ud83d"}]}, "/a/0/b"),
    ],
    ids=["alone", "a value", "a key", "in-a-long-list", "nested"],
)
def test_text_with_a_lone_surrogate_is_not_json_wherever_it_is(value: object, where: str) -> None:
    with pytest.raises(NotJson, match="lone surrogate") as refused:
        check_json(value)
    assert where in str(refused.value)
    str(refused.value).encode("utf-8")  # the message itself is text that can be sent


def test_a_surrogate_pair_is_one_character_and_is_json() -> None:
    check_json({"emoji": "\U0001f600", "\U0001f600": ["\U0001f600"] * 40})


def test_a_shared_sub_value_is_not_a_cycle_but_a_real_cycle_is_refused() -> None:
    shared: list[object] = [1]
    json_size([shared, shared, {"again": shared}])
    cyclic: list[object] = [1]
    cyclic.append(cyclic)
    with pytest.raises(NotJson, match="cycle"):
        json_size({"x": cyclic})


def test_a_string_check_refuses_strings_and_keys_wherever_they_are() -> None:
    def refuse(text: str) -> str | None:
        return "is refused" if text == "bad" else None

    for value in (["ok"] * 40 + ["bad"], {"k": ["bad"]}, {"bad": 1}, {str(i): "ok" for i in range(40)} | {"z": "bad"}):
        with pytest.raises(NotJson, match="is refused"):
            json_size(value, strings=refuse)
    json_size(["ok"] * 40, strings=refuse)


@pytest.mark.parametrize(
    ("value", "fix"),
    [
        (datetime.datetime(2026, 1, 2, 3, 4), ".isoformat()"),
        (datetime.date(2026, 1, 2), ".isoformat()"),
        (datetime.time(3, 4), ".isoformat()"),
        (datetime.timedelta(seconds=3), ".total_seconds()"),
        ({1, 2}, "sorted(...)"),
        (frozenset({1}), "sorted(...)"),
        (b"ab", ".decode()"),
        (bytearray(b"ab"), "base64.b64encode(...).decode()"),
        (decimal.Decimal("1.5"), "str(...)"),
        (1j, "[z.real, z.imag]"),
        (pathlib.PurePosixPath("/a"), "str(...)"),
        ({1: "one"}, "str(key)"),
        (float("nan"), "send None instead"),
    ],
)
def test_a_value_that_is_not_json_says_how_to_make_it_json(value: object, fix: str) -> None:
    with pytest.raises(NotJson) as refused:
        json_size({"at": [value]})
    assert str(refused.value).startswith("the value at /at/0")
    assert fix in str(refused.value)
