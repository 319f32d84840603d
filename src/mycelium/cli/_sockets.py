"""What one client's sockets may hold on ``mycelium serve``: a deadline on each request's head, a cap on idle ones.

uvicorn's HTTP/1.1 protocol (h11) waits for a request's head without a deadline: a client
that connects and sends nothing, or half its headers, holds its socket for as long as it likes
(uvicorn's keep-alive timer runs only after a response, and any byte stops it). Here a
connection that waits for a request, because it was just accepted or its last answer has
gone out, must have the whole head of its next one within ``header_timeout_s``, or it is
closed: with a 408 when part of a request had come (the client has one in transit), silently
when nothing had (an idle connection, which HTTP lets a server close at any time). What an
app left unread of a body counts as part of the next request's head, so a client cannot hold
a connection by trickling a body nobody reads. The app bounds the bodies it reads itself
(``mycelium.mcp._bodies``); h11 bounds a head's size (16 KiB).

One client address keeps at most ``max_idle_per_address`` connections waiting so; when one more
starts waiting, the one of that address that has waited longest is closed (with a 429 when part
of a request had come on it). A client that piles up stalled sockets thus holds no more than
the cap, and a fresh connection of the same address, which sends its request at once, still
gets through. An address is the socket's peer, an IPv6 one by its /64 (see
``mycelium.mcp._clients``): behind a proxy every connection is the proxy's, and the cap must be
at least the proxy's pool of idle connections. The whole server keeps at most
``max_idle_connections`` waiting, whatever their addresses (a client with a /48 of IPv6 has
65,536 /64s): past it the connection that has waited longest, of any address, is closed the
same way, so many addresses together cannot use up the process's open files.

A client that stops reading its answers (its receive window shut, or requests pipelined and
never read) makes the answer's writer wait for room with no deadline; once the connection has
more unsent than the transport's high-water mark for ``send_timeout_s``, it is dropped, so such
a client holds neither a task nor the answer's bytes past that bound.

Every close that answers lingers (``mycelium.cli._lingering``): the client reads the 408 or 429,
then the end of the connection, never a reset that would have thrown the answer away. A silent close
of a connection with nothing unread on it is immediate, so the caps above bound the open files.
"""

from __future__ import annotations

import asyncio
import http
import importlib.metadata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..mcp._bodies import DEFAULT_BODY_TIMEOUT_MS
from ..mcp._clients import WarningBudget, address_key, once_a_minute, shown_address
from ..mcp._http import error_body
from ._console import logger
from ._lingering import Lingering, reset, unread_bytes

__all__ = [
    "HEADER_TIMEOUT_SECONDS",
    "MAX_IDLE_PER_ADDRESS",
    "SEND_TIMEOUT_SECONDS",
    "ClientLimits",
    "accept_backlog",
    "default_max_connections",
    "default_max_idle_connections",
    "http_protocol",
]

HEADER_TIMEOUT_SECONDS = 10.0
"""How long, by default, a connection waiting for a request may take to send that request's whole head."""
MAX_IDLE_PER_ADDRESS = 64
"""How many connections, by default, one client address may keep waiting for a request (a browser keeps
6 to a server, an HTTP client's pool 10 to 20)."""


def open_file_limit() -> int:
    """The process's limit on open files (its soft limit; 4,096 where unknown or unlimited)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return 4096
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 4096 if soft == resource.RLIM_INFINITY or soft <= 0 else soft


def default_max_idle_connections() -> int:
    """Half the process's limit on open files (between 64 and 16,384): the rest is for busy connections and the rest."""
    return max(64, min(16_384, open_file_limit() // 2))


def default_max_connections() -> int:
    """Three quarters of the process's limit on open files (between 128 and 49,152): the last quarter
    is for what the server opens itself (its stores, sandbox children, upstream servers, logs) and for
    a burst of connections accepted before any is counted (see :func:`accept_backlog`)."""
    return max(128, min(49_152, open_file_limit() * 3 // 4))


def accept_backlog(limits: ClientLimits) -> int:
    """How many connections the kernel queues for the server, and so the most the event loop
    accepts in one go, before any of them is counted against ``max_connections``: a burst must fit
    in the open files the cap leaves (half of them), up to uvicorn's own 2,048."""
    return max(16, min(2048, (open_file_limit() - limits.max_connections) // 2))


SEND_TIMEOUT_SECONDS = 30.0
"""How long, by default, a connection may leave the server's answers unread before it is dropped."""
_RETRY_AFTER_SECONDS = 1


@dataclass(frozen=True)
class ClientLimits:
    """How long a client may take to send a request, and how many idle connections one address may keep."""

    header_timeout_s: float = HEADER_TIMEOUT_SECONDS
    """From the moment a connection waits for a request, how long that request's whole head may take."""
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_MS / 1000
    """How long a body the server reads may take to arrive whole from its first read (408 after that)."""
    max_idle_per_address: int = MAX_IDLE_PER_ADDRESS
    """How many connections one client address may keep waiting for a request."""
    send_timeout_s: float = SEND_TIMEOUT_SECONDS
    """How long a connection whose client takes none of what was written to it may stay so before it is dropped."""
    max_idle_connections: int = field(default_factory=default_max_idle_connections)
    """How many connections the whole server keeps waiting for a request, whatever their addresses."""
    max_connections: int = field(default_factory=default_max_connections)
    """How many connections the server holds at once, busy or idle; one more is reset as it is accepted."""


def http_protocol(limits: ClientLimits) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol under ``limits``, with one table of idle connections for the whole server."""

    class Bounded(_BoundedH11):
        _limits = limits
        _idle = _IdleTable(limits.max_idle_per_address, limits.max_idle_connections)
        _late_heads = once_a_minute()
        _over_cap = once_a_minute()
        _over_total = once_a_minute()
        _over_connections = once_a_minute()
        _unread = once_a_minute()

    return Bounded


class _IdleTable:
    """The connections waiting for a request, per client address and all together, longest waiting first."""

    def __init__(self, cap: int, total: int) -> None:
        self.cap = cap
        self.total = total
        self._by_address: dict[str, dict[_BoundedH11, None]] = {}
        self._all: dict[_BoundedH11, None] = {}

    def enter(self, address: str, connection: _BoundedH11) -> tuple[_BoundedH11, bool] | None:
        """Count ``connection`` as waiting; the one to close if a cap is passed, and whether it is its address's."""
        waiting = self._by_address.setdefault(address, {})
        waiting[connection] = None
        self._all[connection] = None
        if len(waiting) > self.cap:
            return next(iter(waiting)), True
        if len(self._all) > self.total:
            return next(iter(self._all)), False
        return None

    def leave(self, address: str, connection: _BoundedH11) -> None:
        """``connection`` waits no more: its request came, or it closed."""
        self._all.pop(connection, None)
        waiting = self._by_address.get(address)
        if waiting is not None:
            waiting.pop(connection, None)
            if not waiting:
                del self._by_address[address]


class _BoundedH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's head and a cap on idle connections.

    A connection waits for a request while it answers none: h11's state of the server side
    is IDLE (nothing asked yet) or DONE (the last answer sent, maybe before its body was
    read); the head of the next request moves it on to SEND_RESPONSE.
    """

    _limits: ClassVar[ClientLimits]
    _idle: ClassVar[_IdleTable]
    _late_heads: ClassVar[WarningBudget]
    _over_cap: ClassVar[WarningBudget]
    _over_total: ClassVar[WarningBudget]
    _over_connections: ClassVar[WarningBudget]
    _unread: ClassVar[WarningBudget]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._heard = False
        """Whether bytes of a request came since this connection began waiting."""
        self._address: str | None = None
        self._lingering: Lingering | None = None
        self._refused = False
        self._unread_since: asyncio.TimerHandle | None = None
        """Set while the transport holds more than its high-water mark the client has not taken."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self._limits.max_connections:
            # Refused before it is anything of uvicorn's: its file is given back at once.
            self._refused = True
            self._over_connections.warn(
                logger,
                "the server holds %d connections, the most it may (--max-connections): reset a new one from %s",
                len(self.connections),
                shown_address(transport.get_extra_info("peername")),
            )
            reset(transport)
            return
        # Every close of this connection, uvicorn's too, lingers, so the client reads the answer that ends it.
        self._lingering = Lingering(transport, self.loop)
        super().connection_made(self._lingering)  # type: ignore[arg-type]
        self._address = None if self.client is None else address_key(self.client[0])
        self._await_request()

    def data_received(self, data: bytes) -> None:
        if self._lingering is not None and self._lingering.lingering:
            self._lingering.drop(data)
            return
        waiting = self._deadline is not None
        self._heard = self._heard or (waiting and bool(data))
        super().data_received(data)
        if waiting and not self._answers_none():
            self._stop_waiting()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # A pipelined request already read has begun in there: that connection is not waiting.
        if self._answers_none():
            self._await_request()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._unread_since is None:
            self._unread_since = self.loop.call_later(self._limits.send_timeout_s, self._reads_nothing)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stop_unread()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return  # never uvicorn's
        self._stop_waiting()
        self._stop_unread()
        if self._lingering is not None:
            self._lingering.closed()
        super().connection_lost(exc)

    def _answers_none(self) -> bool:
        return self.conn.our_state in (h11.IDLE, h11.DONE) and not self.transport.is_closing()

    def _await_request(self) -> None:
        if self._deadline is not None or not self._answers_none():
            return
        self._heard = False
        self._deadline = self.loop.call_later(self._limits.header_timeout_s, self._head_late)
        if self._address is not None:
            over = self._idle.enter(self._address, self)
            if over is not None:
                longest, its_address = over
                if its_address:
                    longest._close_over_cap()
                else:
                    longest._close_over_total()

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
            if self._address is not None:
                self._idle.leave(self._address, self)

    def _stop_unread(self) -> None:
        if self._unread_since is not None:
            self._unread_since.cancel()
            self._unread_since = None

    def _reads_nothing(self) -> None:
        self._unread_since = None
        self._unread.warn(
            logger,
            "dropped the connection of %s: it took nothing of what was sent to it for %g s (--send-timeout)",
            shown_address(self.client),
            self._limits.send_timeout_s,
        )
        # Nothing written can reach a client that reads nothing: the answer goes with the connection.
        reset(self.transport)

    def _head_late(self) -> None:
        timeout = self._limits.header_timeout_s
        if not self._heard:
            # An idle connection a client left open: closing it is ordinary, and not worth a warning.
            logger.debug("closed an idle connection from %s after %g s", shown_address(self.client), timeout)
            self._close()
            return
        self._late_heads.warn(
            logger,
            "answered 408 to %s and closed its connection: its request did not arrive whole within %g s "
            "(--header-timeout)",
            shown_address(self.client),
            timeout,
        )
        self._close(408, f"the request did not arrive whole within {timeout:g} s; send the whole request at once")

    def _close_over_cap(self) -> None:
        cap = self._idle.cap
        self._over_cap.warn(
            logger,
            "%s keeps more than %d connections waiting for a request, the most one address may "
            "(--max-idle-per-address): closed the one that waited longest",
            self._address,
            cap,
        )
        self._evict(
            f"this address keeps more than {cap} connections open without a request on them; "
            "close the idle ones or send on them, then retry"
        )

    def _close_over_total(self) -> None:
        total = self._idle.total
        self._over_total.warn(
            logger,
            "the server keeps more than %d connections waiting for a request, the most it may "
            "(--max-idle-connections): closed the one that waited longest, from %s",
            total,
            self._address,
        )
        self._evict("the server holds too many connections without a request on them; send on this one, then retry")

    def _evict(self, told: str) -> None:
        """Close this idle connection to make room: with a 429 saying ``told`` if a request was on its way."""
        # Bytes the loop has not read yet are a request in transit as much as the ones it has.
        if self._heard or unread_bytes(self.transport) > 0:
            self._close(429, told, [(b"retry-after", str(_RETRY_AFTER_SECONDS).encode())])
        else:
            self._close()

    def _close(self, status: int | None = None, message: str = "", extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
        """Close the connection, answering ``status`` first when the client has a request in transit.

        The answer is written as bytes, not through h11: the request it answers never arrived whole,
        so h11 holds no request to answer, and nothing else goes out on this connection.
        """
        self._stop_waiting()
        if status is None and self._lingering is not None and not unread_bytes(self.transport):
            # Nothing is owed to the client and nothing it sent sits unread, so no reset can throw an answer
            # away; a lingering close would keep the socket's file open up to 2 s past the idle caps, and a
            # storm of connections evicting each other used up the process's open files that way.
            self._lingering.end()
            return
        if status is not None:
            body = error_body(message)
            head = [
                f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}".encode(),
                b"content-type: application/json",
                b"content-length: " + str(len(body)).encode(),
                b"connection: close",
                *(name + b": " + value for name, value in extra),
            ]
            self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        self.transport.close()


def _check_uvicorn() -> None:
    """Refuse a uvicorn whose h11 protocol lacks the hook the bounds rest on, naming the version."""
    if not callable(getattr(H11Protocol, "on_response_complete", None)):
        version = importlib.metadata.version("uvicorn")
        raise ImportError(
            f"mycelium serve bounds slow clients through uvicorn's H11Protocol.on_response_complete, which "
            f"uvicorn {version} does not have: install one that does (uvicorn 0.55, which the tests run, does)"
        )


_check_uvicorn()
