"""The sandbox child: runs one request at a time in a :class:`MontySandbox` of its own, for its host.

Run as ``python -m mycelium.sandbox.isolated._child OPTIONS`` (``OPTIONS``: the adapter's
keyword arguments as JSON). Frames come in on stdin and go out on a private copy of
stdout; fd 1 itself is pointed at stderr, so that nothing else written there can break
the stream. The child ends when stdin ends, and the kernel kills it if its host dies.

Every value a guest hands over is converted here, under this process's interpreter lock,
and checked against the request's bounds before it is sent: the host only ever reads
what passed them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import json
import os
import signal
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel

from ..._access import ConfirmRequest, DecisionDeferred, HandedOff
from ..._exceptions import OperationFailed
from ..._signals import AbortController
from ..._text import clip
from ..._values import JsonValue
from ...failures import SandboxError, Unknown
from .._contract import SandboxRequest, Suspended, Unrestorable
from ..monty import MontySandbox
from ..wire import (
    MAX_FAILURE_TEXT_CHARS,
    SANDBOX_FAILURE_CODES,
    CallMessage,
    CallResultMessage,
    DoneMessage,
    FailedMessage,
    LogMessage,
)
from ._frames import read_frame_blocking, write_frame_blocking
from ._messages import (
    KEPT_REVISIONS,
    CallDeferredMessage,
    CallFailedMessage,
    HostFailureMessage,
    PausedCallIds,
    PendingCallMessage,
    RevisionMessage,
    RunMessage,
    SuspendedMessage,
    UnrestorableMessage,
    decode_host_to_child,
    encode_message,
    state_bytes,
    state_text,
)

_PR_SET_PDEATHSIG = 1
_Answer = CallResultMessage | CallDeferredMessage | CallFailedMessage


class _Link:
    """The child's end of the pipes: frames out from any thread, answers routed to their calls."""

    def __init__(self, out: int) -> None:
        self._out = out
        # Monty places calls from a thread of its own: numbering and writing take turns.
        self._lock = threading.Lock()
        self._next = 0
        self._waiting: dict[int, concurrent.futures.Future[_Answer]] = {}
        self.deferred_ids: dict[int, int] = {}
        """id() of each deferral raised in this run -> the call id the host knows it by."""

    def send(self, message: BaseModel) -> None:
        with self._lock:
            write_frame_blocking(self._out, encode_message(message))

    def call(self, message: Callable[[int], BaseModel]) -> tuple[int, concurrent.futures.Future[_Answer]]:
        """Number a call, send it, and return its number and where its answer will arrive."""
        answer: concurrent.futures.Future[_Answer] = concurrent.futures.Future()
        with self._lock:
            call_id = self._next
            self._next += 1
            self._waiting[call_id] = answer
            write_frame_blocking(self._out, encode_message(message(call_id)))
        return call_id, answer

    def answer(self, message: _Answer) -> None:
        with self._lock:
            waiting = self._waiting.pop(message.call_id, None)
        # A run that ended cancels the calls it left waiting, and the host may answer them
        # still: claiming the future first drops those answers, where set_result would raise.
        if waiting is not None and waiting.set_running_or_notify_cancel():
            waiting.set_result(message)


async def _outcome(link: _Link, call_id: int, answer: concurrent.futures.Future[_Answer]) -> JsonValue:
    """What the program gets for one call: the host's value, or the exception the host's answer means."""
    message = await asyncio.wrap_future(answer)
    if isinstance(message, CallDeferredMessage):
        request = ConfirmRequest(
            module_id="",
            module_name="",
            operation=message.path,
            path=message.path,
            access="write",
            session_id=None,
            execution_id="",
            tool_call_id=None,
            operation_ordinal=message.ordinal,
            arguments=None,
        )
        deferral = HandedOff(request) if message.handed_off else DecisionDeferred(request)
        link.deferred_ids[id(deferral)] = call_id
        raise deferral
    if isinstance(message, CallFailedMessage):
        raise OperationFailed(
            module=message.module, operation=message.operation, path=message.path, reference=message.reference
        )
    if message.ok:
        return message.value
    assert message.error is not None  # the envelope's own rule
    if message.error.type_name == "ValueError":
        raise ValueError(message.error.message)
    raise RuntimeError(message.error.message)


def _proxy(link: _Link, alias: str, path: str, positional: str | None) -> Callable[[JsonValue], Any]:
    def call(value: JsonValue) -> Any:
        call_id, answer = link.call(lambda n: CallMessage(call_id=n, alias=alias, path=path, input=value))
        return _outcome(link, call_id, answer)

    if positional is not None:
        call.positional_name = positional  # type: ignore[attr-defined]  # read by positional_name()
    return call


class _Revision(NamedTuple):
    """What every run of one revision is given: the same objects each time, so the adapter keeps its work."""

    paths: Mapping[str, tuple[str, ...]]
    modules: Mapping[str, str]
    stubs: Mapping[str, str]
    bindings: Mapping[str, Mapping[str, Callable[[JsonValue], Any]]]


class _Revisions:
    """The revisions the host sent, the least recently run forgotten first, as the host counts them."""

    def __init__(self, link: _Link) -> None:
        self._link = link
        self._kept: OrderedDict[str, _Revision] = OrderedDict()

    def add(self, message: RevisionMessage) -> None:
        link = self._link
        self._kept[message.key] = _Revision(
            paths={ns.alias: tuple(ns.path) for ns in message.namespaces},
            modules={ns.alias: ns.module_id for ns in message.namespaces},
            stubs=message.stubs,
            bindings={
                ns.alias: {
                    op: _proxy(link, ns.alias, op, message.positional.get(ns.alias, {}).get(op)) for op in ns.operations
                }
                for ns in message.namespaces
            },
        )
        self._kept.move_to_end(message.key)
        if len(self._kept) > KEPT_REVISIONS:
            self._kept.popitem(last=False)

    def get(self, key: str) -> _Revision | None:
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
        return kept


async def _run_one(
    sandbox: MontySandbox, link: _Link, run: RunMessage, revisions: _Revisions, workspace: list[str | None]
) -> BaseModel:
    """Run (or resume) ``run`` and return the message that ends it."""
    start = run.start
    revision = revisions.get(run.revision)
    if revision is None:  # the host always sends a revision before its first run here
        return FailedMessage(failure=Unknown())
    request = SandboxRequest(
        execution_id=start.execution_id,
        code=start.code,
        timeout_ms=start.timeout_ms,
        bindings=revision.bindings,
        namespace_paths=revision.paths,
        modules=revision.modules,
        session_id=start.session_id,
        on_log=lambda line: link.send(LogMessage(text=line)),
        stubs=revision.stubs,
        max_input_bytes=run.max_input_bytes,
        max_result_bytes=run.max_result_bytes,
        suspendable=run.suspendable,
    )
    workspace[0] = run.workspace
    link.deferred_ids.clear()
    signal = AbortController().signal  # the host stops a run by ending this process
    try:
        if run.resume is None:
            value = await sandbox.execute(request, signal)
        else:
            state = state_bytes(run.resume.state)
            if state is None:
                return UnrestorableMessage(reason="the paused run's state is not base64")
            pending = {sid: _starter(link, sid) for sid in run.resume.pending}
            value = await sandbox.resume(request, state, pending, signal)
    except Suspended as suspended:
        order = [
            PausedCallIds(sandbox_id=sid, call_id=link.deferred_ids[id(deferral)])
            for sid, deferral in suspended.deferred.items()
        ]
        return SuspendedMessage(state=state_text(suspended.state), deferred=order)
    except Unrestorable as exc:
        return UnrestorableMessage(reason=clip(str(exc), MAX_FAILURE_TEXT_CHARS))
    except OperationFailed as exc:
        return HostFailureMessage(module=exc.module, operation=exc.operation, path=exc.path, reference=exc.reference)
    except SandboxError as exc:
        known = exc.failure.code in SANDBOX_FAILURE_CODES
        return FailedMessage(failure=exc.failure if known else Unknown())  # type: ignore[arg-type]
    return DoneMessage(value=value)


def _starter(link: _Link, pending_id: int) -> Callable[[], Any]:
    def start() -> Any:
        call_id, answer = link.call(lambda n: PendingCallMessage(call_id=n, pending_id=pending_id))
        return _outcome(link, call_id, answer)

    return start


async def _serve(options: dict[str, Any], out: int) -> None:
    loop = asyncio.get_running_loop()
    # Revisions and runs in the order the host sent them: a run's revision always comes first.
    runs: asyncio.Queue[RevisionMessage | RunMessage | None] = asyncio.Queue()
    link = _Link(out)

    def read() -> None:
        try:
            while (data := read_frame_blocking(0)) is not None:
                message = decode_host_to_child(data)
                if isinstance(message, RevisionMessage | RunMessage):
                    loop.call_soon_threadsafe(runs.put_nowait, message)
                else:
                    link.answer(message)
        except BaseException:
            # A child that can no longer hear its host must not wait for it: ending now makes
            # the run transport-lost at once rather than at its deadline.
            os._exit(70)
        loop.call_soon_threadsafe(runs.put_nowait, None)

    threading.Thread(target=read, name="mycelium-host-frames", daemon=True).start()
    workspace: list[str | None] = [None]
    if options.pop("workspace", False):
        options["workspace"] = lambda _session: workspace[0]
    revisions = _Revisions(link)
    async with MontySandbox(pool_size=1, **options) as sandbox:
        while (message := await runs.get()) is not None:
            if isinstance(message, RevisionMessage):
                revisions.add(message)
            else:
                link.send(await _run_one(sandbox, link, message, revisions, workspace))


def _die_with_parent() -> None:
    """Ask the kernel to kill this process when its host dies (Linux), so none is ever orphaned."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def main() -> None:
    """Serve the host on stdin / stdout until stdin ends."""
    options = json.loads(sys.argv[1])
    out = os.dup(1)
    os.dup2(2, 1)
    _die_with_parent()
    asyncio.run(_serve(options, out))


if __name__ == "__main__":
    main()
