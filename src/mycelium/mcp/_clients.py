"""A network client as the server's bounds and log see it: by the address its socket comes from.

A bound per client (failed sign-ins, connections waiting for a request) counts a client by
:func:`address_key`: its address, an IPv6 one by the /64 one machine is usually given, so a
client cannot escape the bound by hopping addresses inside its own block. The log names a
client by :func:`shown_address`. Both take the socket's peer, never a header the client writes
(``X-Forwarded-For``): behind a proxy every client is the proxy. And since a hostile client
chooses how often it trips a warning, each kind of warning it can cause spends a
:class:`WarningBudget`, so it cannot fill the log.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Callable, Sequence

__all__ = ["WarningBudget", "address_key", "once_a_minute", "shown_address"]


def address_key(address: str) -> str:
    """What a client is counted by: its address, or the /64 an IPv6 address belongs to."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address  # not an address (a Unix socket, a test client): counted by what it is
    if isinstance(parsed, ipaddress.IPv4Address):
        return str(parsed)
    if parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)
    return str(ipaddress.ip_network(f"{parsed}/64", strict=False))


def shown_address(client: Sequence[object] | None) -> str:
    """How the log names a client, from the ``(host, port)`` the ASGI server reports: the socket's, unless
    the server believes a proxy's ``X-Forwarded-For`` (``mycelium serve`` does only for a ``--trusted-proxy``)."""
    if not client:
        return "an unknown address"
    host, port = str(client[0]), client[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class WarningBudget:
    """At most ``per_window`` warnings in each ``window_s``, counting the ones held back."""

    def __init__(self, per_window: int, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._per_window = per_window
        self._window_s = window_s
        self._clock = clock
        self._window_start = -window_s
        self._spent = 0
        self._held_back = 0

    def spend(self) -> int | None:
        """``None`` when this warning is held back; else how many were held back before it."""
        now = self._clock()
        if now - self._window_start >= self._window_s:
            self._window_start, self._spent = now, 0
        if self._spent >= self._per_window:
            self._held_back += 1
            return None
        self._spent += 1
        held_back, self._held_back = self._held_back, 0
        return held_back

    def warn(self, logger: logging.Logger, message: str, *args: object) -> None:
        """Log ``message % args`` at WARNING, with how many were held back before it, unless this one is."""
        held_back = self.spend()
        if held_back is not None:
            more = f" ({held_back} more since the last one were not logged)" if held_back else ""
            logger.warning(message + "%s", *args, more)


def once_a_minute() -> WarningBudget:
    """The budget of a warning that stalled clients cause, as many times as they like: the first of
    each minute is logged, naming its client, and the next one counts those held back meanwhile."""
    return WarningBudget(1, 60.0)
