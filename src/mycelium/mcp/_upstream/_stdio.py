"""The stdio transport to an upstream server: a child process, its output read in lines of bounded size.

The SDK's own stdio client joins every chunk it reads to the line in progress and splits
the whole again, so one long line costs time quadratic in its length (a 30 MB line took
13.4 s, 12.0 s of them CPU, on the build machine, where this transport refuses 100 MB in
0.14 s: ``bench/upstream_bounds.py``), and it keeps the line whole whatever its size; its
reader cannot be replaced alone. This transport reads the child's stdout
through :class:`._lines._LineSplitter` instead: a line past :data:`MAX_MESSAGE_BYTES` is
dropped as it arrives, and the call it answered fails at once with an error answer in
its place, when the line's ends show which call that was (:func:`._lines._answered_id`).
A message the server sends of its own (a notification, a request) is dropped, and an
answer of another shape leaves its call waiting for its deadline, as for a server that
does not answer. Either way the session goes on: the lines after it are read as before.

Everything else is as the SDK does it, with its public helpers: the environment the
child inherits (:func:`~mcp.client.stdio.get_default_environment` and ``env``), its own
process group, and at the end the spec's shutdown: stdin closed, a grace period, then
the whole group terminated. Each wait is bounded and shielded from cancellation, so no
child outlives its session.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

from ._lines import _answered_id, _Cut, _LineSplitter, _Skipped
from ._oversize import MAX_MESSAGE_BYTES, _refusal

logger = logging.getLogger("mycelium")

_Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
_READ_BYTES = 65_536
_FLUSH_S = 0.5  # the writer's time to send what it took before stdin closes
_EXIT_S = 2.0  # the server's time to exit once its stdin closed, then again once terminated


@asynccontextmanager
async def stdio_transport(
    command: str, args: Sequence[str], env: dict[str, str] | None, cwd: str | None, label: str
) -> AsyncIterator[_Streams]:
    """Run ``command`` with ``args`` and give the SDK client its messages; ``label`` names it in logs."""
    process = await anyio.open_process(
        [command, *args],
        env=get_default_environment() | (env or {}),
        stderr=None,  # the host's own file 2, even where sys.stderr was replaced by an object without one
        cwd=cwd,
        start_new_session=True,  # its own process group, which the shutdown terminates whole
    )
    assert process.stdin is not None  # opened with pipes
    assert process.stdout is not None
    # No await until the task group is entered: a cancellation in between would leave the child running.
    incoming, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
    flushed = anyio.Event()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_read, process.stdout, incoming, label)
        tasks.start_soon(_write, process.stdin, outgoing, incoming, flushed)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(_FLUSH_S):
                    await flushed.wait()
                await _stop(process, label)
            tasks.cancel_scope.cancel()


async def _read(
    stdout: ByteReceiveStream, incoming: MemoryObjectSendStream[SessionMessage | Exception], label: str
) -> None:
    """Pass each line on as a message; a line past the bound fails the call it answered, if it shows which.

    Once the session is gone the rest is read and dropped, so a server still writing can
    reach its exit; the stream ends when the server does (or the shutdown closes it).
    """
    splitter = _LineSplitter(MAX_MESSAGE_BYTES)
    told = False  # whether the call the line being cut answers was failed already
    async with incoming:
        while True:
            try:
                data = await stdout.receive(_READ_BYTES)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                return
            for item in splitter.feed(data):
                message: SessionMessage | None
                if isinstance(item, _Cut):
                    request_id = _answered_id(item.head)
                    told = request_id is not None
                    message = None if request_id is None else _refusal(request_id)
                elif isinstance(item, _Skipped):
                    request_id = None if told else _answered_id(item.head, item.tail)
                    message = None if request_id is None else _refusal(request_id)
                    _log_dropped(label, item.size, failed=told or request_id is not None)
                    told = False
                else:
                    message = _parsed(item, label)
                if message is not None:
                    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                        await incoming.send(message)


def _parsed(line: bytes, label: str) -> SessionMessage | None:
    if not line.strip():
        return None
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        # Never the line itself: the server may have written a secret it was given.
        logger.warning(
            "MCP server %r wrote a line of %d bytes that is not a JSON-RPC message; ignored", label, len(line)
        )
        return None


def _log_dropped(label: str, size: int, *, failed: bool) -> None:
    outcome = (
        "the call it answered fails"
        if failed
        else "it showed no call it answers at its ends (a notification, or an answer whose call waits for its deadline)"
    )
    logger.warning(
        "MCP server %r sent a message of %d bytes, over the %d-byte bound: it was dropped unread; %s",
        label,
        size,
        MAX_MESSAGE_BYTES,
        outcome,
    )


async def _write(
    stdin: ByteSendStream,
    outgoing: MemoryObjectReceiveStream[SessionMessage],
    incoming: MemoryObjectSendStream[SessionMessage | Exception],
    flushed: anyio.Event,
) -> None:
    try:
        async with outgoing:
            async for message in outgoing:
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await stdin.send(line.encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The server stopped reading: the session must see the connection end, not wait on a call forever.
        await incoming.aclose()
    finally:
        flushed.set()


async def _stop(process: Process, label: str) -> None:
    """Close the server's stdin, give it time to exit, then terminate its process group."""
    assert process.stdin is not None
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        await process.stdin.aclose()
    with anyio.move_on_after(_EXIT_S):
        await process.wait()
    if process.returncode is None:
        await terminate_posix_process_tree(process, _EXIT_S)
        with anyio.move_on_after(_EXIT_S):
            await process.wait()
    if process.returncode is None:
        logger.warning("MCP server %r is still running after it was killed; it is left behind", label)
        return
    await process.aclose()  # the pipes, once it is reaped
