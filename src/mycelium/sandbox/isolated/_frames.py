"""Length-prefixed frames on a pipe: four bytes of length, then that many bytes of message.

The length comes first so that a reader can refuse a frame over its bound before reading a
byte of it: the host never holds more of what its child sends than the bound it set. A frame
starts with its message's ``type`` (the envelopes put it first), so the host can choose the
bound by the kind of message from its first bytes alone.
"""

from __future__ import annotations

import os
import re

from anyio.streams.buffered import BufferedByteReceiveStream

LENGTH_BYTES = 4
_PEEK_BYTES = 32
_TYPE = re.compile(rb'\{"type":"([a-z-]{1,20})"')


class FrameTooLarge(Exception):
    """A frame longer than the reader's bound: left unread (the stream is no longer in step)."""

    def __init__(self, kind: str | None, size: int) -> None:
        self.kind = kind
        self.size = size
        super().__init__(f"a {kind or 'message'} frame of {size} bytes is over the bound")


def frame(payload: bytes) -> bytes:
    """``payload`` with its length in front."""
    return len(payload).to_bytes(LENGTH_BYTES, "big") + payload


async def receive_frame(stream: BufferedByteReceiveStream, bound_for: dict[str, int], default_bound: int) -> bytes:
    """The next frame's payload, if it is within the bound for its message type.

    ``bound_for`` maps a message ``type`` to its bound; any other type has ``default_bound``.
    Raises :class:`FrameTooLarge` without reading the payload past its first bytes, and
    anyio's ``EndOfStream`` / ``IncompleteRead`` when the stream ends.
    """
    size = int.from_bytes(await stream.receive_exactly(LENGTH_BYTES), "big")
    head = await stream.receive_exactly(min(size, _PEEK_BYTES))
    match = _TYPE.match(head)
    kind = match.group(1).decode("ascii") if match else None
    if size > bound_for.get(kind or "", default_bound):
        raise FrameTooLarge(kind, size)
    return head + await stream.receive_exactly(size - len(head)) if size > len(head) else head


def read_frame_blocking(fd: int) -> bytes | None:
    """The next frame from ``fd`` (for the child, which trusts its host); ``None`` at its end."""
    head = _read_exactly(fd, LENGTH_BYTES)
    if head is None:
        return None
    return _read_exactly(fd, int.from_bytes(head, "big"))


def write_frame_blocking(fd: int, payload: bytes) -> None:
    """Write one whole frame to ``fd``."""
    data = memoryview(frame(payload))
    while data:
        data = data[os.write(fd, data) :]


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts: list[bytes] = []
    left = size
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            return None
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


__all__ = ["FrameTooLarge", "frame", "read_frame_blocking", "receive_frame", "write_frame_blocking"]
