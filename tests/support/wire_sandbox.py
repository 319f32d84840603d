"""A host-side :class:`~mycelium.sandbox.Sandbox` for an out-of-process provider over the wire.

Every execute starts ``tests.support.wire_provider`` in a process of its own, sends it the
request's start message and answers its calls with the request's bindings, one message
per line each way. Everything the provider sends goes through
:func:`~mycelium.sandbox.wire.decode_sandbox_message`: a malformed line is ``bad-response``.
This is what a host writes to put a remote or containerised sandbox behind the contract.
"""

from __future__ import annotations

import sys

import anyio
from anyio.abc import ByteSendStream, Process
from anyio.streams.buffered import BufferedByteReceiveStream

from mycelium import AbortSignal, JsonValue
from mycelium._exceptions import InvalidInput, OperationFailed, ToolError
from mycelium._text import MAX_PRINTED_CHARS
from mycelium.failures import (
    BadResponse,
    Cancelled,
    DeadlineExceeded,
    GuestException,
    SandboxError,
    TransportLost,
)
from mycelium.sandbox import Sandbox, SandboxRequest
from mycelium.sandbox.wire import (
    MAX_SANDBOX_MESSAGE_BYTES,
    CallMessage,
    CallResultMessage,
    DoneMessage,
    GuestError,
    LogMessage,
    decode_sandbox_message,
    encode_host_message,
    reported_failure,
    start_message,
)
from tests.support.paths import ROOT

PROVIDER = [sys.executable, "-m", "tests.support.wire_provider"]


class WireSandbox(Sandbox):
    """Runs each program in a fresh provider process; its limits are the request's deadline and the signal."""

    @property
    def adapter(self) -> str:
        return "wire"

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> JsonValue:
        async with await anyio.open_process(PROVIDER, cwd=ROOT) as process:
            try:
                return await self._supervised(request, signal, process)
            finally:
                if process.returncode is None:
                    process.kill()

    async def _supervised(self, request: SandboxRequest, signal: AbortSignal, process: Process) -> JsonValue:
        with anyio.move_on_after(request.timeout_ms / 1000) as scope:
            remove = signal.add_listener(lambda _reason: scope.cancel())
            try:
                return await _converse(request, process)
            finally:
                remove()
        if signal.aborted:
            raise SandboxError(Cancelled(acknowledged=True))
        raise SandboxError(DeadlineExceeded(timeout_ms=request.timeout_ms, acknowledged=True))


async def _converse(request: SandboxRequest, process: Process) -> JsonValue:
    assert process.stdin is not None
    assert process.stdout is not None
    lines = BufferedByteReceiveStream(process.stdout)
    await _send(process.stdin, encode_host_message(start_message(request)))
    printed = _Printed(request)
    calls_made = 0
    host_failures: dict[str, OperationFailed] = {}
    while True:
        try:
            line = await lines.receive_until(b"\n", MAX_SANDBOX_MESSAGE_BYTES + 1)  # the bound, and its newline
        except anyio.DelimiterNotFound:
            raise SandboxError(BadResponse()) from None
        except (anyio.EndOfStream, anyio.IncompleteRead):
            raise SandboxError(TransportLost()) from None
        message = decode_sandbox_message(line)
        match message:
            case BadResponse():
                raise SandboxError(message)
            case LogMessage(text=text):
                printed.add(text)
            case CallMessage():
                calls_made += 1
                result = await _call(request, message, host_failures)
                await _send(process.stdin, encode_host_message(result))
            case DoneMessage(value=value):
                return value
            case _:
                failure = reported_failure(message, calls_made=calls_made)
                if isinstance(failure, GuestException) and failure.message in host_failures:
                    # The host's own failure came back out unhandled: it is the host's, not the guest's.
                    raise host_failures[failure.message]
                raise SandboxError(failure)


class _Printed:
    """The provider's printed output, passed on up to :data:`MAX_PRINTED_CHARS` in all, then cut once."""

    def __init__(self, request: SandboxRequest) -> None:
        self._on_log = request.on_log
        self._left = MAX_PRINTED_CHARS

    def add(self, text: str) -> None:
        if self._on_log is None or self._left < 0:
            return
        if len(text) > self._left:
            self._on_log(text[: self._left])
            self._on_log("... (the rest of the output was cut)")
            self._left = -1
            return
        self._left -= len(text)
        self._on_log(text)


async def _call(
    request: SandboxRequest, message: CallMessage, host_failures: dict[str, OperationFailed]
) -> CallResultMessage:
    binding = request.bindings.get(message.alias, {}).get(message.path)
    if binding is None:
        error = GuestError(type_name="AttributeError", message=f"no operation {message.alias}.{message.path}")
        return CallResultMessage(call_id=message.call_id, ok=False, error=error)
    try:
        value = await binding(message.input)
    except InvalidInput as exc:
        error = GuestError(type_name="ValueError", message=str(exc))
    except OperationFailed as exc:
        host_failures[str(exc)] = exc
        error = GuestError(type_name="RuntimeError", message=str(exc))
    except ToolError as exc:
        error = GuestError(type_name="RuntimeError", message=str(exc))
    else:
        return CallResultMessage(call_id=message.call_id, ok=True, value=value)
    return CallResultMessage(call_id=message.call_id, ok=False, error=error)


async def _send(stream: ByteSendStream, data: bytes) -> None:
    try:
        await stream.send(data + b"\n")
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        raise SandboxError(TransportLost()) from None
