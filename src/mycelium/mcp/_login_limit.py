"""How many failed sign-ins a page takes: per client address and overall, refilling with time.

Two token buckets stand behind every sign-in: one for the client's address (an IPv6 address
counts by its /64, which one client usually holds whole) and one for everybody. A failed
sign-in takes a token from both; while either is empty, every sign-in from that address is
refused unread, the right token too, and told when to try again. Addresses whose bucket has
filled up again are forgotten, and no more than ``max_addresses`` are remembered: past that
the least recently seen is dropped, which hands it a full bucket, and the overall bucket
still bounds what every address together may try.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ._clients import address_key

__all__ = ["LoginLimit"]


@dataclass
class _Bucket:
    tokens: float
    updated: float

    def refill(self, now: float, capacity: int, per_second: float) -> None:
        self.tokens = min(float(capacity), self.tokens + (now - self.updated) * per_second)
        self.updated = now

    def wait(self, per_second: float) -> float:
        """Seconds until it holds a whole token again; 0 when it holds one."""
        missing = 1 - self.tokens
        return (
            0.0 if missing <= 1e-9 else missing / per_second
        )  # a refill summed from many steps may fall short by a rounding


class LoginLimit:
    """Failed sign-ins: ``per_address`` from one address and ``overall`` from all, each refilling whole
    over ``window_s``; at most ``max_addresses`` addresses remembered. ``clock`` is in seconds."""

    def __init__(
        self,
        *,
        per_address: int = 5,
        overall: int = 100,
        window_s: float = 60.0,
        max_addresses: int = 4_096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_address < 1 or overall < 1 or window_s <= 0 or max_addresses < 1:
            raise ValueError("LoginLimit needs positive bounds and window")
        self._per_address = per_address
        self._overall = overall
        self._window_s = window_s
        self._max_addresses = max_addresses
        self._clock = clock
        self._everyone = _Bucket(float(overall), clock())
        self._addresses: OrderedDict[str, _Bucket] = OrderedDict()  # least recently seen first

    def retry_after(self, address: str) -> int | None:
        """Whole seconds until a sign-in from ``address`` is read again; ``None`` when it may be now."""
        now = self._clock()
        self._everyone.refill(now, self._overall, self._overall / self._window_s)
        waits = [self._everyone.wait(self._overall / self._window_s)]
        bucket = self._addresses.get(address_key(address))
        if bucket is not None:
            bucket.refill(now, self._per_address, self._per_address / self._window_s)
            waits.append(bucket.wait(self._per_address / self._window_s))
        wait = max(waits)
        return math.ceil(wait) if wait > 0 else None

    def failed(self, address: str) -> None:
        """Count one failed sign-in from ``address`` (after :meth:`retry_after` let it through)."""
        now = self._clock()
        key = address_key(address)
        bucket = self._addresses.pop(key, None) or _Bucket(float(self._per_address), now)
        bucket.refill(now, self._per_address, self._per_address / self._window_s)
        bucket.tokens = max(0.0, bucket.tokens - 1)
        self._everyone.refill(now, self._overall, self._overall / self._window_s)
        self._everyone.tokens = max(0.0, self._everyone.tokens - 1)
        self._addresses[key] = bucket
        self._forget(now)

    def _forget(self, now: float) -> None:
        """Drop what says nothing (buckets full again), then the least recently seen past the bound."""
        full = now - self._window_s  # a bucket untouched for a whole window has refilled
        while self._addresses:
            oldest = next(iter(self._addresses.values()))
            if oldest.updated > full and len(self._addresses) <= self._max_addresses:
                break
            self._addresses.popitem(last=False)

    def __len__(self) -> int:
        """How many addresses are remembered."""
        return len(self._addresses)
