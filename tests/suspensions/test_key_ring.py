"""``Suspensions``' key ring: ``key`` seals, ``key`` and every one of ``previous_keys`` open.

A key is a secret, so no error message quotes one and the ``repr`` shows none. Sealing
across a rotation, end to end, is tested with real runs in ``test_suspensions.py``.
"""

from __future__ import annotations

import pytest

from mycelium import MemorySuspensions, Suspensions

OLD = b"the key before the rotation"
NEW = b"the key after the rotation!"


def test_the_newest_key_alone_seals_decisions_and_every_key_opens_them() -> None:
    sealed_before = Suspensions(key=OLD).seal_decision("susp-1", True)
    rotated = Suspensions(key=NEW, previous_keys=(OLD,))
    sealed_after = rotated.seal_decision("susp-1", False)

    assert rotated.open_decision("susp-1", sealed_before) is True
    assert rotated.open_decision("susp-1", sealed_after) is False
    assert Suspensions(key=NEW).open_decision("susp-1", sealed_before) is None  # the old key dropped
    assert Suspensions(key=OLD).open_decision("susp-1", sealed_after) is None  # the new key seals
    assert rotated.open_decision("susp-2", sealed_before) is None  # still bound to its one suspension


@pytest.mark.parametrize(
    ("previous", "problem"),
    [
        ((OLD, b"short secret"), r"previous_keys\[1\] must be bytes, at least 16"),
        (("a text key of enough length",), r"previous_keys\[0\] must be bytes"),
        (OLD, "previous_keys must be a tuple of keys, got bytes"),
        ([OLD], "previous_keys must be a tuple of keys, got list"),
    ],
    ids=["too short", "not bytes", "one key, not a tuple", "a list"],
)
def test_a_previous_key_that_is_not_one_is_refused_without_quoting_it(previous: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as refused:
        Suspensions(key=NEW, previous_keys=previous)  # type: ignore[arg-type]  # what a caller may pass
    for secret in ("short secret", "a text key", "key before"):
        assert secret not in str(refused.value)


def test_the_repr_shows_no_key() -> None:
    shown = repr(Suspensions(store=MemorySuspensions(), key=NEW, previous_keys=(OLD,)))
    assert "rotation" not in shown
    assert "key" not in shown
