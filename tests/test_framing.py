"""The record framing paused runs and suspensions are kept in: whole records back, anything else refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mycelium._framing import frame, unframe

MAGIC = b"TEST\x01"

headers = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(header=headers, body=st.binary())
def test_a_framed_record_comes_back_whole(header: object, body: bytes) -> None:
    assert unframe(MAGIC, frame(MAGIC, header, body)) == (header, body)


def test_a_record_of_another_kind_or_version_is_refused() -> None:
    record = frame(b"TEST\x02", {"a": 1}, b"body")
    with pytest.raises(ValueError, match="not a record of this kind"):
        unframe(MAGIC, record)


def test_every_cut_short_record_is_refused_or_loses_only_body_bytes() -> None:
    record = frame(MAGIC, {"calls": [1, 2, 3]}, b"opaque")
    header_end = len(record) - len(b"opaque")
    for cut in range(header_end):
        with pytest.raises(ValueError, match=r"not a record of this kind|cut short|Expecting|Unterminated"):
            unframe(MAGIC, record[:cut])
    # The body's length is the caller's to check (its own format says how long it is).
    assert unframe(MAGIC, record[: header_end + 2]) == ({"calls": [1, 2, 3]}, b"op")


@pytest.mark.parametrize(
    ("header", "error"),
    [(b"{not json", "Expecting"), (b'"\xc3\x28"', "can't decode"), (b"[" * 100_000 + b"]" * 100_000, "deeply")],
    ids=["not-json", "not-utf8", "nested-too-deeply"],
)
def test_a_header_that_is_not_json_is_a_value_error(header: bytes, error: str) -> None:
    record = MAGIC + len(header).to_bytes(4, "big") + header
    with pytest.raises(ValueError, match=error):
        unframe(MAGIC, record)


def test_a_header_with_a_non_finite_number_is_refused_when_framed() -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        frame(MAGIC, {"x": float("nan")}, b"")
