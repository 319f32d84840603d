"""The redaction rules on their own: a secret's digits in any number, and what a text cut short still shows.

The tests in ``test_secrets.py`` run them end to end through a real server; these state
each rule on ``_Secrets`` directly, with the values a server could send.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mycelium.mcp._upstream._secrets import _Secrets

DIGITS = "73925501846271123456"  # twenty digits: a float keeps about sixteen of them
TOKEN = "ghp-QWERTYUIOPASDFGHJKLZXCVBNM-token"


@pytest.mark.parametrize(
    "number",
    [
        int(DIGITS),
        -int(DIGITS),
        float(DIGITS),  # rounded: 7.392550184627112e+19
        int(DIGITS) / 10**30,  # 7.392550184627112e-11
        int("9" + DIGITS + "1"),  # inside a longer number
        73925501,  # eight of its digits are enough
    ],
)
def test_a_number_showing_eight_consecutive_digits_of_a_secret_becomes_the_redaction_marker(number: float) -> None:
    secrets = _Secrets([f"Bearer {DIGITS}"])
    assert secrets.value({"n": number}) == {"n": "[redacted]"}
    written = secrets.text(f"total {number!r} today")
    assert "[redacted]" in written
    assert not any(DIGITS[i : i + 8] in written for i in range(len(DIGITS) - 7))


@pytest.mark.parametrize(
    "written",
    ["73,925,501,846,271", "73.925.501.846.271", "7392 5501 8462 71", "7392-5501-8462-71", "73_925_501", "73'925'501"],
)
def test_a_secret_of_digits_written_in_groups_is_redacted_as_one_number(written: str) -> None:
    assert _Secrets(["73925501846271"]).text(f"account {written} is open") == "account [redacted] is open"


def test_the_digits_of_an_exponent_are_checked_too() -> None:
    # Eight digits of the secret, written where an exponent goes, after a number that shows none.
    assert _Secrets([DIGITS]).text("size 12121212e73925501 bytes") == "size [redacted] bytes"


def test_numbers_and_booleans_that_show_fewer_digits_of_a_secret_stay_as_they_are() -> None:
    secrets = _Secrets([DIGITS])
    kept = [7392550, 1.5, True, None, 1e100, float("inf"), 20251125]
    assert secrets.value(kept) == kept
    assert secrets.text("v1.2.3 on 2025-11-25, 7392550 of 9") == "v1.2.3 on 2025-11-25, 7392550 of 9"


def test_a_secret_with_a_decimal_point_is_redacted_as_the_number_it_writes() -> None:
    secrets = _Secrets(["1234.5678"])
    assert secrets.value([1234.5678, -1234.5678, 1234.56]) == ["[redacted]", "[redacted]", 1234.56]


def test_an_integer_too_long_to_write_is_redacted_rather_than_left_unchecked() -> None:
    secrets = _Secrets([DIGITS])
    assert secrets.value(10**5_000) == "[redacted]"


def test_without_a_secret_of_digits_numbers_are_never_touched() -> None:
    assert _Secrets([TOKEN]).value(int(DIGITS)) == int(DIGITS)


def test_a_secret_that_json_escapes_is_found_in_a_value_all_the_same() -> None:
    quoted = 'pass"word\\with\nescapes'
    assert _Secrets([quoted]).value({"said": f"it is {quoted}!"}) == {"said": "it is [redacted]!"}


def test_a_text_cut_to_a_limit_shows_no_part_of_a_secret_even_where_one_straddles_the_cut() -> None:
    other = "mnbvcxzlkjhgfdsa-other"
    secrets = _Secrets([TOKEN, other])
    # Redacting the tokens shortens what comes before the other secret, which would pull the start
    # of a copy of it, cut where the redacted piece ends, into what is shown.
    for at in range(100):
        text = TOKEN * 4 + "x" * at + other + "y" * 1_000_000
        shown = secrets.clipped(text, 100)
        assert len(shown) <= 100
        assert shown.endswith("...")
        assert other[:3] not in shown
        assert TOKEN[:3] not in shown


def test_a_short_text_is_redacted_then_cut_as_a_whole() -> None:
    secrets = _Secrets([TOKEN])
    assert secrets.clipped(f"token {TOKEN} refused", 100) == "token [redacted] refused"
    assert secrets.clipped(f"{TOKEN} " + "z" * 200, 50) == "[redacted] " + "z" * 36 + "..."


# Values a server could send, made of pieces of the secrets below, escapes, separators and exponents,
# so that the check of a value's JSON and the walk of it meet every case where they could part.
SECRETS = [DIGITS, 'a"b\\c\u0001d-1234', "1234.5678"]
PIECES = ["7392", "5501", "8462", "71123456", "1234", ".5678", "e", "E+", ",", " ", "-", ".", "_", "'"]
PIECES += ['"', "\\", "\u0001", "a", "b", "c", "d", "x", "9"]
pieces = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
numbers = st.one_of(
    pieces.filter(lambda text: text.isdigit()).map(int),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.builds(lambda a, b: float(f"{a}.{b}"), st.integers(0, 10**12), st.integers(0, 10**12)),
)
values: Any = st.recursive(
    st.none() | st.booleans() | numbers | pieces,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(pieces, inner, max_size=5),
    max_leaves=20,
)


@given(values)
def test_checking_a_values_json_first_never_leaves_out_what_walking_it_would_redact(value: object) -> None:
    secrets = _Secrets(SECRETS)
    redacted = secrets.value(value)
    assert redacted == secrets._walked(value)
    assert not any(secret in json.dumps(redacted, ensure_ascii=False) for secret in ("7392550184627112", "1234.5678"))
