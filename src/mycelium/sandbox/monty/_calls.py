"""The host side of one run: every operation call the guest places, each owned until it settles.

A call is placed the moment the guest makes it, before anything awaits it, so a write the
program forgot to await still happens; the run counts and bounds its calls, lets the ones
nobody awaited finish, stops the ones still running when it ends, and checks the program's
value before it is returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NoReturn

import anyio

from ..._access import DecisionDeferred
from ..._bindings import BindingCallback
from ..._exceptions import InvalidInput, OperationFailed, ToolError
from ..._values import JsonTooLarge, JsonValue, NotJson, json_size
from ...failures import GuestException, InvalidResult, ResultTooLarge, SandboxError
from .._contract import SandboxRequest
from .._namespaces import Leaf, guest_input, positional_name
from ._conversions import _UNAWAITED_REASON, _conversion
from ._output import _PrintBuffer
from ._watch import _Worker

_CANCEL_BATCH = 100


class _GuestRun:
    """The host side of one run: every call it places, and what it may send and return."""

    def __init__(self, request: SandboxRequest, max_calls: int, max_in_flight: int) -> None:
        self._bindings = request.bindings
        self._callbacks: dict[Leaf, BindingCallback] = {}
        self._max_calls = max_calls
        self._unsettled = _Unsettled(max_in_flight)
        self._max_in_flight = max_in_flight
        self._max_input = request.max_input_bytes
        self.calls: list[_Call] = []
        # What a paused run's earlier parts did: their calls count towards the limit, and a
        # host failure they settled is still reported as one.
        self.earlier_calls = 0
        self.earlier_failures: list[OperationFailed] = []
        self.worker: _Worker | None = None
        # Where a call fed to Monty hands its deferred decision, in a run that may pause while fed.
        self.pausing: _Pausing | None = None
        # Monty places calls from a thread of its own, so placing and closing take turns.
        self._placing = threading.Lock()
        self._closed = False

    def call(self, leaf: Leaf, args: tuple[object, ...], kwargs: Mapping[str, object]) -> Awaitable[JsonValue]:
        """Place one call of ``leaf``; refusals before placing raise in the guest at the call."""
        return self.place(leaf, args, kwargs).coroutine

    def place(self, leaf: Leaf, args: tuple[object, ...], kwargs: Mapping[str, object]) -> _Call:
        """Place one call of ``leaf`` and own it; raise what the guest gets for a call refused before placing."""
        if len(self.calls) + self.earlier_calls >= self._max_calls:
            raise RuntimeError(f"this run made more than {self._max_calls} operation calls")
        if self.worker is not None:
            self.worker.seen()
        callback = self._callbacks.get(leaf)
        if callback is None:
            callback = self._callbacks[leaf] = self._bindings[leaf.transport][leaf.relative]
        if not self._unsettled.enter():
            raise RuntimeError(
                f"this run has {self._max_in_flight} operation calls still running; await some before starting more"
            )
        try:
            value = guest_input(
                leaf.path, args, kwargs, positional_name(callback), max_bytes=self._max_input, strings=_conversion
            )
            pending = callback(value)
        except BaseException as exc:
            self._unsettled.leave()  # refused before it was placed (not JSON, too large, ...)
            if isinstance(exc, InvalidInput):
                raise ValueError(str(exc)) from None
            raise
        return self.track(leaf.path, pending, entered=True)

    def track(self, path: str, pending: Awaitable[JsonValue], *, entered: bool = False) -> _Call:
        """Own ``pending``, a call of ``path`` already placed with its binding."""
        if not entered:
            self._unsettled.enter()  # a resumed run's paused call: over the limit for a moment at most
        tracked = _Call(path, pending, self._unsettled, self.pausing)
        with self._placing:
            if self._closed:  # the run ended while this call was on its way: it never starts
                tracked.cancel()
                raise RuntimeError("the run is over")
            self.calls.append(tracked)
        return tracked

    def all_settled(self) -> bool:
        """Whether every call placed so far has settled (then :meth:`finish_started` has nothing to wait for)."""
        return all(call.settled for call in self.calls)

    async def finish_started(self, printed: _PrintBuffer) -> None:
        """Let the calls the program placed but never awaited finish, and say so in the output.

        A call is placed when it is made: a write the program forgot to await still happens,
        and the run settles only after it has.
        """
        left = [call for call in self.calls if not call.settled]
        for call in left:
            await call.finish()
        if left:
            printed.note(
                f"{_paths(left)}: called without `await`; the run waited for "
                f"{'it' if len(left) == 1 else 'them'} to finish, but the result was not used"
            )

    async def stop_unsettled(self, printed: _PrintBuffer) -> None:
        """Stop every call still running once the run is over (it failed or was stopped), and say
        which in the output; a call placed after this is refused."""
        with self._placing:
            self._closed = True
        running = [call for call in self.calls if not call.settled and call.task is not None]
        if running:
            printed.note(
                f"{_paths(running)}: still running when the run ended, and stopped; it may or may not have taken effect"
            )
        # In batches, with a trip round the loop between them: thousands of calls cancelled at
        # once would all unwind in one loop turn and stall the host. A run whose calls all
        # settled (the common end) has nothing to stop and takes no trip.
        unsettled = [call for call in self.calls if not call.settled]
        for start in range(0, len(unsettled), _CANCEL_BATCH):
            batch = unsettled[start : start + _CANCEL_BATCH]
            for call in batch:
                call.cancel()
            for call in batch:
                await call.wait()
            await asyncio.sleep(0)

    def result(self, value: object, limit: int | None) -> JsonValue:
        """The program's value, if it is JSON within ``limit``; else the failure that keeps it out."""
        try:
            json_size(value, limit=limit, strings=_conversion)
        except JsonTooLarge as exc:
            raise SandboxError(ResultTooLarge(size=exc.size, limit=exc.limit)) from None
        except NotJson as exc:
            if _UNAWAITED_REASON in str(exc):
                raise SandboxError(
                    GuestException(
                        type_name="TypeError",
                        message=f"the result holds an operation call that was never awaited ({self.called()}); "
                        "write `await` before every operation call",
                    )
                ) from None
            raise SandboxError(InvalidResult(reason=str(exc))) from None
        return value  # type: ignore[return-value]  # json_size proved it is JSON

    def host_failures(self) -> list[OperationFailed]:
        """Every host failure a call of this run settled with, its earlier parts' included."""
        return [call.failure for call in self.calls if call.failure is not None] + self.earlier_failures

    def called(self) -> str:
        """Which operations this run called, for a message about a call that was never awaited."""
        # Monty numbers its futures among all suspensions (imports, sleeps), so the
        # placeholder cannot say which call it was: name the operations this run called.
        return f"called: {_paths(self.calls)}" if self.calls else "no operation was called"


class _Call:
    """One operation call a guest placed, owned until it settles.

    ``pending`` is the host's awaitable for the call. The coroutine handed to Monty wraps it;
    whoever ends up driving the call (Monty, or :meth:`finish` for a call nobody awaited)
    awaits it exactly once, and a call never started is closed, never left unawaited.
    """

    __slots__ = ("_pausing", "_unsettled", "_waiter", "coroutine", "failure", "path", "pending", "settled", "task")

    def __init__(
        self, path: str, pending: Awaitable[JsonValue], unsettled: _Unsettled, pausing: _Pausing | None = None
    ) -> None:
        self.path = path
        self.pending = pending
        self._unsettled = unsettled
        self._pausing = pausing
        self.task: asyncio.Task[Any] | None = None
        self.settled = False
        self._waiter: anyio.Event | None = None  # made only for a call the run left behind
        self.failure: OperationFailed | None = None
        self.coroutine = self._run()

    async def _run(self) -> JsonValue:
        self.task = asyncio.current_task()
        guest_error: Exception
        try:
            return await self.pending
        except DecisionDeferred as exc:
            if self._pausing is None:  # a stepped run collects it from the task
                raise
            await self._pausing(self, exc)
        except InvalidInput as exc:
            guest_error = ValueError(str(exc))
        except ToolError as exc:
            guest_error = RuntimeError(str(exc))
        except OperationFailed as exc:
            self.failure = exc
            guest_error = RuntimeError(str(exc))
        finally:
            self._settle()
        # Raised outside the handlers, so the host's exception is not its __context__: Monty keeps
        # what a call raised for the rest of the run, and that exception's frames hold the call's input.
        raise guest_error

    def _settle(self) -> None:
        if not self.settled:
            self._unsettled.leave()
        self.settled = True
        # A settled call is never cancelled: let go of its task, which keeps the call's outcome
        # (a result, or an error whose traceback holds the input) until the run ends otherwise.
        self.task = None
        if self._waiter is not None:
            self._waiter.set()

    def start(self) -> asyncio.Task[Any]:
        """Drive the call in a task of its own (a stepped run does; Monty drives a fed run's calls)."""
        task = self.task = asyncio.get_running_loop().create_task(self.coroutine)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task[Any]) -> None:
        # The run reads the outcome when the program waits for it, or never (a run stopped
        # meanwhile): it is read here too, so it is never reported as unretrieved.
        if not task.cancelled():
            task.exception()
        # A task cancelled before its first step never ran the call: close what it wraps, and settle.
        if not self.settled:
            _close(self.pending)
            self._settle()

    async def finish(self) -> None:
        """Let a call the program never awaited run to its end (its outcome is not shown)."""
        if self.settled:
            return
        if self.task is None:
            # Nobody started it: drive it here, so a placed write is never silently dropped.
            with contextlib.suppress(Exception):
                await self.coroutine
            return
        await self._settled()

    def cancel(self) -> None:
        """Cancel the call if it is still running (see :meth:`wait`)."""
        if self.settled:
            return
        if self.task is None:
            self.coroutine.close()  # never started: close what it wraps too, so nothing is left unawaited
            _close(self.pending)
            self._settle()
            return
        self.task.cancel()

    async def wait(self) -> None:
        """Return once a cancelled call has settled."""
        await self._settled()

    async def _settled(self) -> None:
        if not self.settled:
            if self._waiter is None:
                self._waiter = anyio.Event()
            await self._waiter.wait()


_Pausing = Callable[[_Call, DecisionDeferred], Awaitable[NoReturn]]
"""Captures a fed run at a call whose decision is deferred, and ends the program there."""


class _Unsettled:
    """How many of a run's calls have not settled. Calls are placed on Monty's thread and settle
    on the event loop, so the count is kept under a lock."""

    __slots__ = ("_count", "_limit", "_lock")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._count = 0
        self._lock = threading.Lock()

    def enter(self) -> bool:
        """Count one more, unless the limit is reached."""
        with self._lock:
            if self._count >= self._limit:
                return False
            self._count += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self._count -= 1


def _close(pending: Awaitable[JsonValue]) -> None:
    """Close a call's awaitable that will never be awaited (no "never awaited" warning)."""
    if inspect.iscoroutine(pending):
        pending.close()


def _paths(calls: list[_Call]) -> str:
    paths = sorted({call.path for call in calls})
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
