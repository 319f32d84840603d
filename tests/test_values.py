"""JSON values: what may cross between guest and host."""

from __future__ import annotations

import enum

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mycelium.values import MAX_JSON_DEPTH, NotJson, check_json, dumps_compact

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
