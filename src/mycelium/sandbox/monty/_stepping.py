"""Driving a run one Monty step at a time, so that it can pause at a call awaiting a person's
decision and be captured, and going on with a captured run later.

A suspendable run is driven here instead of being fed whole: each call becomes a future the
host settles, each sleep is the driver's to cap and count, and the run's state can be dumped
between steps.
"""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

import anyio
from pydantic_monty import (
    AsyncFunctionSnapshot,
    AsyncFutureSnapshot,
    AsyncMontySession,
    AsyncSnapshot,
    ExternalResult,
    MontyComplete,
    MontyError,
    MountDir,
)

from ..._access import DecisionDeferred, HandedOff
from ...failures import BadResponse, SandboxError
from .._contract import PendingCalls, Suspended, Unrestorable
from ._calls import _Call, _GuestRun
from ._errors import _clip
from ._namespaces import _GuestModules
from ._outcomes import _Outcome, _raised
from ._output import _PrintBuffer
from ._paused import _Paused

_FIRST = asyncio.FIRST_COMPLETED
_UNAWAITED = {
    False: "needed a person's decision, but the program ended without awaiting it, and a run that has "
    "ended cannot wait for one",
    True: "placed while the server, stopping, handed the run off, but the program ended without awaiting it",
}
"""Why a deferred call a finished program never awaited did not run, by whether it was handed off."""


class _Restore(NamedTuple):
    """A paused run to go on with: its state, and what starts each call it paused at again."""

    paused: _Paused
    pending: PendingCalls


class _Stepper:
    """Drives a run one Monty step at a time, so it can pause at a call awaiting a decision.

    Each call the program makes is placed like any other (:meth:`_GuestRun.place`) and
    handed to Monty as a future; its outcome is delivered when the program waits for it.
    Sleeps, which Monty leaves to whoever drives it, are capped and counted as a fed run's
    are. Once a call's decision is deferred, the run goes on only as far as the calls
    already placed take it: at the program's next new call, or when nothing is left to
    wait for but deferred calls, everything still running settles and the run is captured.
    """

    def __init__(self, run: _GuestRun, guest: _GuestModules, sleep_max: float, total_sleep: float) -> None:
        self._run = run
        self._guest = guest
        self._running: dict[int, asyncio.Task[Any]] = {}  # calls and sleeps, by Monty's call id
        self._paths: dict[int, str] = {}  # the operation path of each call
        self._ready: dict[int, _Outcome] = {}
        self._deferred: dict[int, DecisionDeferred] = {}
        self._sleep_max = sleep_max
        self._sleep_total = total_sleep
        self._slept = 0.0  # the whole run's, its earlier parts included

    async def drive(
        self,
        session: AsyncMontySession,
        program: str,
        printed: _PrintBuffer,
        mount: MountDir | None,
        restore: _Restore | None,
    ) -> object:
        """Run to the program's value; raise :class:`Suspended` if it pauses."""
        try:
            if restore is None:
                snap = await session.feed_start(
                    program, print_callback=printed.write, mount=mount, skip_type_check=True
                )
            else:
                snap = await self._restore(session, printed, mount, restore)
            while not isinstance(snap, MontyComplete):
                if isinstance(snap, AsyncFutureSnapshot):
                    snap = await self._deliver(snap)
                elif not isinstance(snap, AsyncFunctionSnapshot):  # a name: Monty answers it itself
                    snap = await snap.resume_auto()
                elif snap.function_name == "system.sleep":
                    snap = await snap.resume(await self._sleep(snap.args))
                elif snap.function_name == "system.async_sleep":
                    snap = await snap.resume(self._start_sleep(snap.call_id, snap.args))
                elif snap.is_os_function:  # imports and mounted files
                    snap = await snap.resume_auto()
                elif self._deferred:
                    raise await self._pause(snap)
                else:
                    snap = await snap.resume(self._place(snap))
            return snap.output
        finally:
            # Calls are the run's to stop (they may have taken effect); sleeps are only ours.
            sleeps = [task for call_id, task in self._running.items() if call_id not in self._paths]
            for task in sleeps:
                task.cancel()
            if sleeps:
                await asyncio.wait(sleeps)

    async def _restore(
        self, session: AsyncMontySession, printed: _PrintBuffer, mount: MountDir | None, restore: _Restore
    ) -> AsyncSnapshot:
        paused = restore.paused
        try:
            snap = await session.load_snapshot(paused.snapshot, mount=mount, print_callback=printed.write)
        except (MontyError, ValueError, RuntimeError, TypeError) as exc:
            raise Unrestorable(f"Monty could not restore the paused run: {type(exc).__name__}") from None
        self._ready.update(paused.ready)
        self._slept = paused.slept
        self._run.earlier_calls = paused.calls_made - len(paused.deferred)  # those are placed again now
        self._run.earlier_failures = paused.failures
        if paused.announced:
            return await self._announced(snap, paused, restore.pending)
        for call_id, path in paused.deferred.items():
            self._start(call_id, self._run.track(path, restore.pending[call_id]()))
        return snap

    async def _announced(self, snap: AsyncSnapshot, paused: _Paused, pending: PendingCalls) -> AsyncSnapshot:
        """Go on with a run paused from inside its deferred call (see ``_fed_pause``): loading it
        announces that call again, under Monty's own id; it runs as the call the pause kept, and
        the program waits for it as for any call."""
        ((kept, path),) = paused.deferred.items()
        leaf = self._guest.leaves.get(snap.function_name) if isinstance(snap, AsyncFunctionSnapshot) else None
        if not isinstance(snap, AsyncFunctionSnapshot) or leaf is None or leaf.path != path:
            raise Unrestorable("the paused run does not wait at the call it paused at")
        self._start(snap.call_id, self._run.track(path, pending[kept]()))
        return await snap.resume({"future": ...})

    def _place(self, snap: AsyncFunctionSnapshot) -> ExternalResult:
        leaf = self._guest.leaves.get(snap.function_name)
        if leaf is None:
            return {"exc_type": "NameError", "message": f"{_clip(str(snap.function_name))} is not an operation"}
        try:
            call = self._run.place(leaf, tuple(snap.args), dict(snap.kwargs))
        except Exception as exc:  # refused before it was placed: the guest gets it at the call
            return _raised(exc)
        self._start(snap.call_id, call)
        return {"future": ...}

    def _start(self, call_id: int, call: _Call) -> None:
        self._running[call_id] = call.start()
        self._paths[call_id] = call.path

    def _sleep_for(self, args: tuple[object, ...]) -> float | _Outcome:
        """How long a sleep lasts (capped), or what the guest gets instead."""
        wanted = args[0] if len(args) == 1 else None
        if not isinstance(wanted, int | float) or isinstance(wanted, bool) or wanted != wanted:
            return {"exc_type": "TypeError", "message": "sleep() takes one number of seconds"}
        if wanted < 0:
            return {"exc_type": "ValueError", "message": "sleep length must be non-negative"}
        length = min(float(wanted), self._sleep_max)
        self._slept += length
        if self._slept > self._sleep_total:
            limit = f"{round(self._slept * 1000)}ms > {round(self._sleep_total * 1000)}ms"
            return {"exc_type": "TimeoutError", "message": f"sleep limit exceeded: {limit}"}
        return length

    async def _sleep(self, args: tuple[object, ...]) -> _Outcome:
        length = self._sleep_for(args)
        if not isinstance(length, float):
            return length
        await asyncio.sleep(length)
        return {"return_value": None}

    def _start_sleep(self, call_id: int, args: tuple[object, ...]) -> ExternalResult:
        length = self._sleep_for(args)
        if not isinstance(length, float):
            return length
        self._running[call_id] = asyncio.get_running_loop().create_task(asyncio.sleep(length))
        return {"future": ...}

    async def _deliver(self, snap: AsyncFutureSnapshot) -> AsyncSnapshot:
        """Hand the program the outcomes it waits for, waiting for at least one if none is ready."""
        waited = snap.pending_call_ids
        # A call usually settles while Monty hands over the future: collected first, it is
        # delivered without a wait (and the loop trips a wait costs).
        self._collect()
        if not any(call_id in self._ready for call_id in waited):
            running = [self._running[call_id] for call_id in waited if call_id in self._running]
            if not running:
                if self._deferred:
                    raise await self._pause(snap)
                raise SandboxError(BadResponse())  # Monty waits for a call it never announced
            await asyncio.wait(running, return_when=_FIRST)
            self._collect()
        outcomes = {call_id: self._ready.pop(call_id) for call_id in waited if call_id in self._ready}
        return await snap.resume(outcomes) if outcomes else snap

    def _collect(self) -> None:
        """Move every settled call's outcome to where the program will find it."""
        for call_id, task in list(self._running.items()):
            if not task.done():
                continue
            del self._running[call_id]
            exc = None if task.cancelled() else task.exception()
            if isinstance(exc, DecisionDeferred):
                self._deferred[call_id] = exc
            elif task.cancelled():
                self._ready[call_id] = {"exc_type": "RuntimeError", "message": "the call was stopped"}
            elif exc is not None:
                self._ready[call_id] = _raised(exc)
            else:
                self._ready[call_id] = {"return_value": task.result()}

    def note_undecided(self, printed: _PrintBuffer) -> None:
        """Say which deferred calls a finished program never awaited: they did not run."""
        self._collect()
        for handed_off, why in _UNAWAITED.items():
            paths = {
                self._paths[call]
                for call, deferral in self._deferred.items()
                if isinstance(deferral, HandedOff) is handed_off
            }
            if paths:
                printed.note(f"{', '.join(sorted(paths))}: {why}: it did not run")

    async def _pause(self, snap: AsyncFunctionSnapshot | AsyncFutureSnapshot) -> Suspended:
        """Let every call still running settle, then capture the run."""
        if self._running:
            await asyncio.wait(self._running.values())
        self._collect()
        # In the order the program placed them: the first placed is the first to decide.
        order = sorted(self._deferred.items(), key=lambda item: item[1].request.operation_ordinal or 0)
        deferred = {call_id: self._paths[call_id] for call_id, _ in order}
        # A big heap takes a while to serialise: not on the event loop.
        snapshot = await anyio.to_thread.run_sync(snap.dump)
        run = self._run
        made = len(run.calls) + run.earlier_calls
        paused = _Paused(snapshot, self._ready, deferred, self._slept, made, run.host_failures())
        return Suspended(paused.pack(), dict(order))
