"""One sandbox child process, seen from the host: started, given one run at a time, and killed.

Everything the child sends is untrusted: a frame over its bound is refused unread, a
malformed message is ``bad-response``, a child that ends mid-run is ``transport-lost``, and
one that outlives the run's deadline plus a grace is killed. After any of these the child is
not :attr:`~_Child.reusable`: its stream may be out of step, so it is killed, never reused.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal as signals
import sys
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import Process, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from ..._access import DecisionDeferred, HandedOff
from ..._exceptions import InvalidInput, OperationFailed, ToolError
from ..._signals import AbortError, AbortSignal
from ..._values import JsonValue
from ...failures import BadResponse, DeadlineExceeded, ResultTooLarge, SandboxError, TransportLost
from .._contract import PendingCalls, SandboxRequest, Suspended, Unrestorable
from .._namespaces import positional_name
from ..wire import (
    CallMessage,
    CallResultMessage,
    DoneMessage,
    FailedMessage,
    GuestError,
    LogMessage,
    reported_failure,
    start_message,
)
from ._frames import FrameTooLarge, frame, receive_frame
from ._messages import (
    KEPT_REVISIONS,
    MAX_STATE_BYTES,
    CallDeferredMessage,
    CallFailedMessage,
    HostFailureMessage,
    PendingCallMessage,
    RevisionMessage,
    RunMessage,
    SuspendedMessage,
    UnrestorableMessage,
    decode_child_message,
    encode_message,
    state_bytes,
)

_CHILD = [sys.executable, "-m", "mycelium.sandbox.isolated._child"]
# The most a value may encode to when a request sets no limit of its own.
_DEFAULT_VALUE_BOUND = 16 * 1024 * 1024
# Room for an envelope around a value at its limit (and a JSON string's escapes of a printed line).
_ENVELOPE_SLACK = 64 * 1024
_DONE_ENVELOPE = len(b'{"type":"done","value":}')
# Past the run's own deadline, the child has this long to answer before it is killed.
_DEADLINE_GRACE_SECS = 1.0
# All a child inherits of the server's environment: what Python and Monty need to start, find
# their files and read text. Tokens, database URLs and cloud keys stay in the server, so a guest
# that escaped Monty into its child would find none of them there.
_INHERITED_ENVIRONMENT = frozenset(
    {"PATH", "PYTHONPATH", "PYTHONHOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "SYSTEMROOT", "MONTY_BIN"}
)


@dataclass(frozen=True)
class ChildRevision:
    """One revision of the catalog as the children are sent it: once each, then named by ``key``."""

    key: str
    payload: bytes
    """The encoded :class:`RevisionMessage`."""
    _made_from: tuple[object, object, object]

    @classmethod
    def of(cls, request: SandboxRequest, key: str) -> ChildRevision:
        """The revision ``request`` is a run of (its namespaces, stubs and positional names), under ``key``."""
        positional: dict[str, dict[str, str]] = {}
        for alias, operations in request.bindings.items():
            for path, callback in operations.items():
                name = positional_name(callback)
                if name is not None:
                    positional.setdefault(alias, {})[path] = name
        message = RevisionMessage(
            key=key,
            namespaces=start_message(request).namespaces,
            stubs=dict(request.stubs),
            positional=positional,
        )
        return cls(key, encode_message(message), (request.namespace_paths, request.modules, request.stubs))

    def serves(self, request: SandboxRequest) -> bool:
        """Whether ``request`` is a run of this revision (the same objects, as the adapter keys its own)."""
        paths, modules, stubs = self._made_from
        return paths is request.namespace_paths and modules is request.modules and stubs is request.stubs


class _Child:
    """A child process running a Monty sandbox, and the conversation of the run it is given."""

    def __init__(self, process: Process) -> None:
        self._process = process
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._frames = BufferedByteReceiveStream(process.stdout)
        self._writing = anyio.Lock()
        self.runs = 0
        self.reusable = True
        self.baseline_rss: int | None = None
        # The keys of the revisions the child holds, forgotten in the order it forgets them.
        self._held: OrderedDict[str, None] = OrderedDict()

    @classmethod
    async def start(cls, options: Mapping[str, object]) -> _Child:
        """Start a child with the adapter's ``options``; its process group holds its Monty workers too."""
        environment = {name: value for name, value in os.environ.items() if name in _INHERITED_ENVIRONMENT}
        process = await anyio.open_process(
            [*_CHILD, json.dumps(dict(options))], stderr=None, start_new_session=True, env=environment
        )
        return cls(process)

    @property
    def pid(self) -> int:
        return self._process.pid

    def rss(self) -> int | None:
        """The child's resident memory in bytes, where the platform says (Linux)."""
        try:
            with open(f"/proc/{self._process.pid}/statm", "rb") as statm:
                return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return None

    async def kill(self) -> None:
        """Kill the child and its Monty workers, and wait for it."""
        self.reusable = False
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signals.SIGKILL)
        with anyio.CancelScope(shield=True):
            await self._process.wait()
            await self._process.aclose()

    async def run(
        self,
        request: SandboxRequest,
        message: RunMessage,
        revision: ChildRevision,
        pending: PendingCalls | None,
        signal: AbortSignal,
    ) -> JsonValue:
        """Have the child run ``message``, a run of ``revision``, for ``request``, answering its calls;
        its outcome, or its failure."""
        self.runs += 1
        self.reusable = False  # until the run ends with a message read whole
        with anyio.move_on_after(request.timeout_ms / 1000 + _DEADLINE_GRACE_SECS) as scope:
            remove = signal.add_listener(lambda _reason: scope.cancel())
            try:
                return await self._supervised(request, message, revision, pending)
            finally:
                remove()
        if signal.aborted:
            raise AbortError(signal.reason)
        raise SandboxError(DeadlineExceeded(timeout_ms=request.timeout_ms, acknowledged=True))

    async def _supervised(
        self, request: SandboxRequest, message: RunMessage, revision: ChildRevision, pending: PendingCalls | None
    ) -> JsonValue:
        ended: Exception | None = None
        value: JsonValue = None
        async with anyio.create_task_group() as calls:
            try:
                await self._hold(revision)
                value = await self._converse(request, message, _HostCalls(request, pending, calls, self._send))
            except Exception as exc:  # raised outside the task group, so it is not wrapped in a group
                ended = exc
            calls.cancel_scope.cancel()  # the run is over: calls still running stop
        if ended is not None:
            raise ended
        return value

    async def _hold(self, revision: ChildRevision) -> None:
        """Send ``revision`` unless the child holds it; count it run, as the child will."""
        if revision.key not in self._held:
            await self._send(revision.payload)
            self._held[revision.key] = None
            if len(self._held) > KEPT_REVISIONS:
                self._held.popitem(last=False)
        self._held.move_to_end(revision.key)

    async def _converse(self, request: SandboxRequest, message: RunMessage, host: _HostCalls) -> JsonValue:
        await self._send(encode_message(message))
        value_bound = max(request.max_result_bytes or 0, request.max_input_bytes or 0) or _DEFAULT_VALUE_BOUND
        default_bound = value_bound + _ENVELOPE_SLACK
        bounds = {"suspended": (MAX_STATE_BYTES * 4) // 3 + _ENVELOPE_SLACK}
        while True:
            try:
                data = await receive_frame(self._frames, bounds, default_bound)
            except FrameTooLarge as exc:
                limit = request.max_result_bytes
                if exc.kind == "done" and limit is not None:
                    raise SandboxError(ResultTooLarge(size=exc.size - _DONE_ENVELOPE, limit=limit)) from None
                raise SandboxError(BadResponse()) from None
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise SandboxError(TransportLost()) from None
            received = decode_child_message(data, max_bytes=max(len(data), 1))
            if isinstance(received, BadResponse):
                raise SandboxError(received)
            if isinstance(received, LogMessage):
                if request.on_log is not None:
                    request.on_log(received.text)
                continue
            if isinstance(received, CallMessage | PendingCallMessage):
                host.place(received)
                continue
            self.reusable = True  # the run ended with a whole message: the stream is in step
            return host.ended(received)

    async def _send(self, payload: bytes) -> None:
        # Shielded: a frame cut short by a cancellation would put the stream out of step.
        with anyio.CancelScope(shield=True):
            async with self._writing:
                try:
                    await self._stdin.send(frame(payload))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    raise SandboxError(TransportLost()) from None


class _HostCalls:
    """The host side of one run in a child: its calls, each run by the request's bindings in a task of the run's."""

    def __init__(
        self,
        request: SandboxRequest,
        pending: PendingCalls | None,
        calls: TaskGroup,
        send: Callable[[bytes], Awaitable[None]],
    ) -> None:
        self._request = request
        self._resumed = pending is not None
        self._pending = pending or {}
        self._calls = calls
        self._send = send
        self.made = 0
        self._deferred: dict[int, DecisionDeferred] = {}
        self._failures: dict[str, OperationFailed] = {}

    def place(self, message: CallMessage | PendingCallMessage) -> None:
        """Place the call now (its ordinal is taken in the order the program made its calls) and answer it later."""
        self.made += 1
        try:
            if isinstance(message, CallMessage):
                binding = self._request.bindings.get(message.alias, {}).get(message.path)
                if binding is None:
                    raise SandboxError(BadResponse())  # the child names an operation it was never given
                pending: Awaitable[JsonValue] = binding(message.input)
            else:
                starter = self._pending.get(message.pending_id)
                if starter is None:
                    raise SandboxError(BadResponse())
                pending = starter()
        except SandboxError:
            raise
        except Exception as exc:  # refused as it was placed
            self._calls.start_soon(self._answer, message.call_id, _raising(exc))
            return
        self._calls.start_soon(self._answer, message.call_id, pending)

    async def _answer(self, call_id: int, pending: Awaitable[JsonValue]) -> None:
        answer: Any
        try:
            value = await pending
        except DecisionDeferred as exc:
            self._deferred[call_id] = exc
            request = exc.request
            answer = CallDeferredMessage(
                call_id=call_id,
                path=request.path,
                ordinal=request.operation_ordinal,
                handed_off=isinstance(exc, HandedOff),
            )
        except OperationFailed as exc:
            self._failures[exc.reference] = exc
            answer = CallFailedMessage(
                call_id=call_id, module=exc.module, operation=exc.operation, path=exc.path, reference=exc.reference
            )
        except InvalidInput as exc:
            answer = _failed(call_id, "ValueError", str(exc))
        except ToolError as exc:
            answer = _failed(call_id, "RuntimeError", str(exc))
        except Exception:  # a binding breaking its contract: nothing of the host's detail reaches the guest
            answer = _failed(call_id, "RuntimeError", "the operation call failed on the host")
        else:
            answer = CallResultMessage(call_id=call_id, ok=True, value=value)
        # A child gone before its answer is the conversation's to report (its stream ends), once:
        # raised here too, it would come out beside that as a group of failures.
        with contextlib.suppress(SandboxError):
            await self._send(encode_message(answer))

    def ended(self, message: object) -> JsonValue:
        """The run's outcome from the message that ended it: its value, or what to raise."""
        if isinstance(message, DoneMessage):
            return message.value
        if isinstance(message, FailedMessage):
            raise SandboxError(reported_failure(message, calls_made=self.made))
        if isinstance(message, HostFailureMessage):
            known = self._failures.get(message.reference)
            if known is not None:
                raise known
            # Only a resumed run may end with a failure this host did not see (one from before its
            # pause), and only of an operation the run was given: a child cannot make up another.
            given = any(message.operation in operations for operations in self._request.bindings.values())
            if self._resumed and given:
                raise OperationFailed(
                    module=message.module, operation=message.operation, path=message.path, reference=message.reference
                )
            raise SandboxError(BadResponse())
        if isinstance(message, UnrestorableMessage):
            raise Unrestorable(message.reason)
        if isinstance(message, SuspendedMessage):
            state = state_bytes(message.state)
            deferred = {paused.sandbox_id: self._deferred.get(paused.call_id) for paused in message.deferred}
            if state is None or any(deferral is None for deferral in deferred.values()):
                raise SandboxError(BadResponse())  # a pause at calls the host never deferred
            raise Suspended(state, {sid: d for sid, d in deferred.items() if d is not None})
        raise SandboxError(BadResponse())


def _failed(call_id: int, type_name: str, message: str) -> CallResultMessage:
    return CallResultMessage(call_id=call_id, ok=False, error=GuestError(type_name=type_name, message=message))


async def _raising(exc: Exception) -> JsonValue:
    raise exc
