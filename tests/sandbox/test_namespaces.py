"""Flat provider operation names: one-to-one, ASCII-only, and read back exactly."""

from __future__ import annotations

import itertools
import keyword
import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mycelium.sandbox._namespaces import sandbox_operation_path, sandbox_provider_operation_name

FLAT = re.compile(r"^[A-Za-z0-9_]+$")

# Underscores, digits, "u" and hex letters are what the escapes are made of, so they are
# over-represented to push names towards collisions; everything else is any character.
_CHARS = st.one_of(st.sampled_from("_1u0aZ-é"), st.characters(exclude_characters="."))
segments = st.text(_CHARS, min_size=1, max_size=8)
aliases = segments
paths = st.lists(segments, min_size=1, max_size=4).map(".".join)
identifiers = st.from_regex(r"[A-Za-z_\u00c0-\u024f][A-Za-z0-9_\u00c0-\u024f]{0,10}", fullmatch=True)


@given(aliases, paths)
def test_a_name_reads_back_to_its_alias_and_path(alias: str, path: str) -> None:
    assert sandbox_operation_path(sandbox_provider_operation_name(alias, path)) == (alias, path)


@given(aliases, paths, aliases, paths)
def test_distinct_operations_never_share_a_name(alias: str, path: str, other_alias: str, other_path: str) -> None:
    assume((alias, path) != (other_alias, other_path))
    assert sandbox_provider_operation_name(alias, path) != sandbox_provider_operation_name(other_alias, other_path)


@given(aliases, paths)
def test_a_name_is_only_ascii_letters_digits_and_underscores(alias: str, path: str) -> None:
    assert FLAT.fullmatch(sandbox_provider_operation_name(alias, path))


@given(aliases, paths)
def test_a_name_is_an_identifier_that_is_not_a_keyword_nor_a_dunder(alias: str, path: str) -> None:
    name = sandbox_provider_operation_name(alias, path)
    assert name.isidentifier()
    assert not keyword.iskeyword(name)
    assert not name.startswith("__")


@given(identifiers, st.lists(identifiers, min_size=1, max_size=3).map(".".join))
def test_identifier_paths_round_trip(alias: str, path: str) -> None:
    name = sandbox_provider_operation_name(alias, path)
    assert FLAT.fullmatch(name)
    assert sandbox_operation_path(name) == (alias, path)


def test_every_short_name_over_the_escape_alphabet_is_distinct() -> None:
    # Exhaustive over the characters the encoding itself uses: no two inputs may collide.
    alias_set = ["".join(chars) for size in range(1, 4) for chars in itertools.product("a_1u", repeat=size)]
    path_set = [
        path
        for size in range(1, 5)
        for chars in itertools.product("a_1u.", repeat=size)
        if all((path := "".join(chars)).split("."))
    ]
    names = {sandbox_provider_operation_name(alias, path) for alias in alias_set for path in path_set}
    assert len(names) == len(alias_set) * len(path_set)


def test_demo_ping_and_module_demo_ping_do_not_collide() -> None:
    names = {
        sandbox_provider_operation_name("demo", "ping"),
        sandbox_provider_operation_name("demo_ping", "x"),
        sandbox_provider_operation_name("demo", "ping_x"),
        sandbox_provider_operation_name("demo", "ping.x"),
        sandbox_provider_operation_name("demo_ping", "x_y"),
        sandbox_provider_operation_name("demo-ping", "x"),
        sandbox_provider_operation_name("demo", "ping__x"),
        sandbox_provider_operation_name("demo_", "ping"),
        sandbox_provider_operation_name("demo", "_ping"),
    }
    assert len(names) == 9
    assert all(FLAT.fullmatch(name) for name in names)


@pytest.mark.parametrize(
    ("alias", "path", "name"),
    [
        ("demo", "ping", "demo__ping"),
        ("demo_ping", "x", "demo_1ping__x"),
        ("demo", "ping_x", "demo__ping_1x"),
        ("bazaar", "windows.open", "bazaar__windows__open"),
        ("café", "ping", "caf_u0000e9__ping"),
        ("_private", "x", "_1private__x"),
    ],
)
def test_names_follow_the_documented_scheme(alias: str, path: str, name: str) -> None:
    assert sandbox_provider_operation_name(alias, path) == name
    assert sandbox_operation_path(name) == (alias, path)


@pytest.mark.parametrize(
    ("alias", "path"),
    [("", "ping"), ("de.mo", "ping"), ("demo", ""), ("demo", "a..b"), ("demo", ".a"), ("demo", "a.")],
)
def test_an_empty_or_dotted_alias_or_an_empty_segment_is_refused(alias: str, path: str) -> None:
    with pytest.raises(ValueError, match=r"alias|path"):
        sandbox_provider_operation_name(alias, path)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "demo",  # no path
        "demo__",  # empty path segment
        "__demo__ping",  # empty alias
        "demo.ping",  # not flat
        "demo-ping",
        "demo__ping\n",
        "demo_2__ping",  # unknown escape
        "demo_u00e9__ping",  # short escape
        "demo_u0000E9__ping",  # upper-case hex is not what the encoder writes
        "demo_u000061__ping",  # an escaped ASCII letter is not canonical
        "demo_u00005f__ping",  # nor is an escaped underscore
        "demo_u00002e__ping",  # an escaped dot would be a dotted alias
        "demo_u110000__ping",  # beyond Unicode
        "1demo__ping",  # a leading digit is always escaped
        "démo__ping",
    ],
)
def test_the_inverse_refuses_anything_the_encoder_does_not_produce_and_names_it(name: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(name))):
        sandbox_operation_path(name)


@given(st.text(st.sampled_from("_1u0aZ"), max_size=24))
def test_the_inverse_accepts_exactly_the_canonical_names(name: str) -> None:
    try:
        alias, path = sandbox_operation_path(name)
    except ValueError:
        return
    assert sandbox_provider_operation_name(alias, path) == name


@given(st.text(max_size=24))
def test_the_inverse_of_arbitrary_text_is_a_path_or_a_value_error(name: str) -> None:
    try:
        alias, path = sandbox_operation_path(name)
    except ValueError:
        return
    assert sandbox_provider_operation_name(alias, path) == name
