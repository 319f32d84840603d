"""An upstream HTTP server's response bodies, bounded before they are kept: the SDK reads a JSON body whole.

A Streamable HTTP server answers a call with an event stream or with one JSON body. The
SDK bounds each event (``max_sse_event_size``) but reads a JSON body, and the body of
any other answer (an error, the answer to a ``DELETE``), into memory whatever its size.
:func:`bound_bodies` sets a response hook on the HTTP client that counts every body but
an event stream's as it is read and fails the read past :data:`MAX_MESSAGE_BYTES`; the
SDK then fails that call with the refusal's words, and the session goes on.

A compressed body is inflated as it is read, so a few kilobytes can stand for gigabytes:
the client asks for none (``Accept-Encoding: identity``, whatever the host's headers say,
since it would refuse what they asked for), and a body compressed anyway is refused
unread. Events are read in inflated pieces of at most 1 MiB and checked piece by piece,
so their bound holds either way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

from ..._text import clip
from ._oversize import _SAID, MAX_MESSAGE_BYTES


class _BodyRefused(httpx2.StreamError):
    """A body too big to read, or compressed: the SDK catches a stream error and fails the call with its words."""


class _BoundedBody(httpx2.AsyncByteStream):
    """A response body whose read fails once it has passed ``limit`` bytes, or at once when it is ``refused``."""

    def __init__(self, stream: httpx2.AsyncByteStream, limit: int, refused: str | None = None) -> None:
        self._stream = stream
        self._limit = limit
        self._refused = refused

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._refused is not None:
            raise _BodyRefused(self._refused)
        size = 0
        async for chunk in self._stream:
            size += len(chunk)
            if size > self._limit:
                raise _BodyRefused(_SAID)
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


async def _bound(response: httpx2.Response) -> None:
    if response.headers.get("content-type", "").lower().startswith("text/event-stream"):
        return  # the SDK bounds each event itself
    stream = response.stream
    assert isinstance(stream, httpx2.AsyncByteStream)  # an async client's
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    refused = None
    if encoding not in ("", "identity"):
        refused = (
            f"the server compressed its answer ({clip(encoding, 40)}) though asked not to, and a compressed "
            "body cannot be bounded before it is inflated: serve this client uncompressed"
        )
    response.stream = _BoundedBody(stream, MAX_MESSAGE_BYTES, refused)


def bound_bodies(client: httpx2.AsyncClient) -> httpx2.AsyncClient:
    """Make ``client`` refuse bodies past :data:`MAX_MESSAGE_BYTES`, and compressed ones, which it asks not to get."""
    client.headers["Accept-Encoding"] = "identity"
    client.event_hooks["response"].append(_bound)
    return client
