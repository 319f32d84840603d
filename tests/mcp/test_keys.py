"""The secret key ring: newest first, each key long enough, never shown, read from the environment or a file."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from mycelium.mcp import SecretKeys
from mycelium.mcp._keys import KEY_ENV, KEY_FILE_ENV

A, B = secrets.token_hex(32), secrets.token_hex(32)


def test_the_newest_key_seals_and_every_key_of_the_ring_opens() -> None:
    rotated, older = SecretKeys.of(B, A), SecretKeys.of(A)
    sealing, opening = rotated.suspension_keys()
    assert opening == older.suspension_keys()[:1]
    assert sealing != older.suspension_keys()[0]
    assert rotated.request_state_keys()[1:] == older.request_state_keys()


def test_the_two_purposes_never_share_a_key() -> None:
    ring = SecretKeys.of(A)
    assert ring.suspension_keys()[0] not in ring.request_state_keys()
    assert A.encode() not in (ring.suspension_keys()[0], *ring.request_state_keys())


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        ([], "at least one key"),
        (["short"], "at least 32 characters"),
        ([A, " " + B], "surrounding spaces"),
        ([A, A], "the same key twice"),
        ([A, 7], "not a string"),
    ],
)
def test_a_bad_ring_is_refused_naming_the_problem_and_never_the_key(keys: list[object], named: str) -> None:
    with pytest.raises(ValueError, match=named) as raised:
        SecretKeys(keys)  # type: ignore[arg-type]
    assert A not in str(raised.value)
    assert B not in str(raised.value)


def test_a_ring_never_shows_its_keys() -> None:
    assert A not in repr(SecretKeys.of(A, B))
    assert repr(SecretKeys.of(A, B)) == "SecretKeys(<2 keys>)"


def test_the_environment_gives_the_ring_inline_or_in_a_file(tmp_path: Path) -> None:
    key_file = tmp_path / "keys"
    key_file.write_text(f"# newest first\n{B}\n\n{A}\n")
    assert SecretKeys.from_env({}) is None
    inline = SecretKeys.from_env({KEY_ENV: f"{B}, {A}"})
    from_file = SecretKeys.from_env({KEY_FILE_ENV: str(key_file)})
    assert inline is not None
    assert from_file is not None
    assert inline.suspension_keys() == from_file.suspension_keys() == SecretKeys.of(B, A).suspension_keys()


def test_the_environment_may_not_name_the_ring_twice_nor_an_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not both"):
        SecretKeys.from_env({KEY_ENV: A, KEY_FILE_ENV: str(tmp_path / "keys")})
    with pytest.raises(ValueError, match="cannot read the key file"):
        SecretKeys.from_env({KEY_FILE_ENV: str(tmp_path / "missing")})
    with pytest.raises(ValueError, match=KEY_ENV) as raised:
        SecretKeys.from_env({KEY_ENV: "too-short"})
    assert "too-short" not in str(raised.value)
