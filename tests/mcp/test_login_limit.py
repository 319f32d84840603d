"""The sign-in limit: failed sign-ins per client address and overall, refilling with time, in bounded memory.

The clock is one the test moves, so windows pass without waiting.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mycelium.mcp._login_limit import LoginLimit


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


def fail(limit: LoginLimit, address: str, times: int) -> None:
    for _ in range(times):
        assert limit.retry_after(address) is None
        limit.failed(address)


def test_an_address_is_stopped_after_its_failures_and_told_when_to_come_back() -> None:
    clock = Clock()
    limit = LoginLimit(per_address=5, window_s=60, clock=clock)
    fail(limit, "198.51.100.1", 5)
    assert limit.retry_after("198.51.100.1") == 12  # one more try every 60 / 5 seconds
    clock.now += 11.5
    assert limit.retry_after("198.51.100.1") == 1
    clock.now += 0.5
    assert limit.retry_after("198.51.100.1") is None


def test_another_address_is_not_stopped_by_the_first_ones_failures() -> None:
    limit = LoginLimit(per_address=2, clock=Clock())
    fail(limit, "198.51.100.1", 2)
    assert limit.retry_after("198.51.100.1") is not None
    assert limit.retry_after("198.51.100.2") is None


def test_failures_from_many_addresses_together_stop_everyone() -> None:
    limit = LoginLimit(per_address=5, overall=10, window_s=60, clock=Clock())
    for n in range(10):
        fail(limit, f"198.51.100.{n}", 1)
    assert limit.retry_after("192.0.2.99") == 6  # the overall bucket: one more every 60 / 10 seconds


def test_an_ipv6_client_is_counted_by_its_slash_64() -> None:
    limit = LoginLimit(per_address=2, clock=Clock())
    fail(limit, "2001:db8:1:2::1", 1)
    fail(limit, "2001:db8:1:2:ffff::9", 1)
    assert limit.retry_after("2001:db8:1:2::abcd") is not None
    assert limit.retry_after("2001:db8:1:3::1") is None
    assert limit.retry_after("::ffff:198.51.100.1") is None  # an IPv4 address written as IPv6 is itself


def test_memory_is_bounded_whatever_the_number_of_addresses() -> None:
    clock = Clock()
    limit = LoginLimit(per_address=5, overall=1_000_000, max_addresses=100, clock=clock)
    for n in range(1_000):
        fail(limit, f"10.0.{n // 256}.{n % 256}", 1)
        clock.now += 0.001
    assert len(limit) == 100
    clock.now += 60  # every bucket has filled up again: none is worth remembering
    fail(limit, "10.9.9.9", 1)
    assert len(limit) == 1


@pytest.mark.parametrize("bad", [{"per_address": 0}, {"overall": 0}, {"window_s": 0}, {"max_addresses": 0}])
def test_bounds_must_be_positive(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="positive"):
        LoginLimit(**bad)  # type: ignore[arg-type]
