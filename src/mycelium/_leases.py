"""Leases: one captured graph revision, held for a run, and the runtime's table of them.

A :class:`Lease` captures one revision; its catalog, execute tool and direct tools
describe that revision for the lease's whole life. The runtime's :class:`LeaseTable`
knows every lease it handed out: how many are held, where each was acquired (so a
``close()`` that waits long can say which it waits for), and the ones the garbage
collector found unreleased, whose hold it gives back.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Self

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.abc import TaskGroup

from ._direct_tools import DirectTool, GatedTool
from ._discovery import Catalog
from ._exceptions import LeaseReleased, RuntimeClosed
from ._execute import ExecuteServices, ExecuteTool, RevisionView
from ._graph import OperationGraph
from ._handed_out import HandedOut
from ._sources import Capabilities, Revision

__all__ = ["Holds", "Lease", "LeaseTable"]

logger = logging.getLogger("mycelium")

_ACQUIRED_AT_FRAMES = 3
_NAMED_AT_MOST = 10
# Frames in these files are the library's own (``lease()``'s context manager included):
# where a lease was acquired means the host's frames.
_OWN_FILES = (os.path.dirname(os.path.abspath(__file__)) + os.sep, contextlib.__file__)


class Holds:
    """Counts holders of something and lets one wait until there are none."""

    def __init__(self) -> None:
        self.count = 0
        self._idle: anyio.Event | None = None  # made only when somebody waits

    @contextmanager
    def held(self) -> Iterator[None]:
        """Count one holder in for the length of the block."""
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def acquire(self) -> None:
        self.count += 1

    def release(self) -> None:
        self.count -= 1
        if self.count == 0 and self._idle is not None:
            self._idle.set()
            self._idle = None

    async def wait_idle(self) -> None:
        """Return once nothing holds it."""
        while self.count:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()


@dataclass(eq=False)
class _LeaseRecord:
    """What the table keeps of a held lease: its revision and where it was acquired."""

    revision: Revision
    acquired_at: tuple[tuple[str, int, str], ...]
    """The host's innermost frames that acquired it: (file, line, function)."""

    def describe(self) -> str:
        where = " <- ".join(f"{file}:{line} in {function}" for file, line, function in self.acquired_at)
        return f"the lease of revision {self.revision.number} acquired at {where or 'an unknown place'}"


class LeaseTable:
    """The runtime's leases: the held ones, where each was acquired, and the lost ones given back.

    A lease the garbage collector finds unreleased is given back by a task in the runtime's
    task group (``tasks``), started from whichever thread the collector ran in.
    """

    def __init__(self, capabilities: Capabilities, tasks: TaskGroup) -> None:
        self._capabilities = capabilities
        self._tasks = tasks
        self._token = anyio.lowlevel.current_token()
        self._loop_thread = threading.get_ident()
        self._holds = Holds()
        self._unreleased: set[_LeaseRecord] = set()
        self.stopped = False
        """Whether the runtime has stopped running: its leases raise :class:`RuntimeClosed`."""

    @property
    def held(self) -> int:
        """How many leases are held now, acquisitions under way included."""
        return self._holds.count

    def reserve(self) -> None:
        """Count an acquisition in before it captures anything, so ``close()`` waits for it."""
        self._holds.acquire()

    def unreserve(self) -> None:
        """Count out an acquisition that failed before it made a lease."""
        self._holds.release()

    def record(self, revision: Revision, acquired_at: tuple[tuple[str, int, str], ...]) -> _LeaseRecord:
        """Record a lease just made of ``revision``, acquired by the host's frames ``acquired_at``."""
        record = _LeaseRecord(revision, acquired_at)
        self._unreleased.add(record)
        return record

    async def release(self, record: _LeaseRecord) -> None:
        """Give a released lease's hold back, releasing the snapshots only its revision used.

        Once per record: a second release (a copy of the lease, say) gives nothing back twice.
        After :meth:`stop` there is nothing left to give back.
        """
        if record not in self._unreleased:
            return
        self._unreleased.discard(record)
        try:
            if not self.stopped:
                await self._capabilities.release(record.revision)
        finally:
            self._holds.release()

    def stop(self) -> None:
        """The runtime has stopped: what its leases still hold was closed with it."""
        self.stopped = True

    def lost(self, record: _LeaseRecord) -> None:
        """A lease was garbage-collected unreleased: give its hold back, and say so.

        Called from ``Lease.__del__``, in whatever thread the garbage collector runs.
        """
        if self.stopped:
            return  # its runtime has stopped: nothing is held any more
        try:
            if threading.get_ident() == self._loop_thread:
                self._tasks.start_soon(self._release_lost, record)
            else:
                anyio.from_thread.run_sync(self._tasks.start_soon, self._release_lost, record, token=self._token)
        except RuntimeError:
            return  # its runtime has stopped running: nothing can wait for it any more
        text = f"{record.describe()} was garbage-collected without being released; release every lease"
        logger.warning("%s", text)
        warnings.warn(text, ResourceWarning, stacklevel=2)

    async def _release_lost(self, record: _LeaseRecord) -> None:
        try:
            await self.release(record)
        except Exception:
            # Nobody awaits a lost lease's release: its failure can only be logged.
            logger.exception("releasing the snapshots of a garbage-collected lease failed")

    async def wait_idle(self) -> None:
        """Return once no lease is held."""
        await self._holds.wait_idle()

    def describe_held(self) -> str:
        """The held leases, for a ``close()`` that has waited long: which, and where they were acquired."""
        records = sorted(self._unreleased, key=lambda record: (record.revision.number, record.acquired_at))
        named = "; ".join(record.describe() for record in records[:_NAMED_AT_MOST])
        more = f"; and {len(records) - _NAMED_AT_MOST} more" if len(records) > _NAMED_AT_MOST else ""
        acquiring = self._holds.count - len(records)
        still = f"; and {acquiring} acquire() call(s) in progress" if acquiring > 0 else ""
        return (
            f"{len(records)} unreleased lease(s): {named}{more}{still}. "
            "Release every lease (`async with runtime.lease()` does it for you)"
        )


def host_frames() -> tuple[tuple[str, int, str], ...]:
    """The caller's innermost frames outside the library. Cheap: it reads no source lines."""
    found: list[tuple[str, int, str]] = []
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and len(found) < _ACQUIRED_AT_FRAMES:
        code = frame.f_code
        if not code.co_filename.startswith(_OWN_FILES):
            found.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return tuple(found)


class Lease(HandedOut):
    """One captured graph revision, held for a run. Get it from ``Runtime.acquire()`` or ``Runtime.lease()``.

    Its ``revision``, ``catalog`` and ``execute_tool`` describe the same graph for the
    lease's whole life. After :meth:`release`, using it raises :class:`LeaseReleased`.
    """

    _handed_out_by = "Runtime.acquire() or Runtime.lease()"
    # Released until made whole: a lease that failed half-way holds nothing for __del__ to give back.
    _released = True
    graph: OperationGraph
    """The captured operation graph (host-side; models see the catalog)."""
    revision: int
    """The revision's number: a new one each time the graph changes."""
    _table: LeaseTable
    _record: _LeaseRecord
    _catalog: Catalog
    _runs: Holds
    _execute_tool: ExecuteTool
    _tools: tuple[GatedTool, ...]

    @classmethod
    def _handed_out(
        cls,
        table: LeaseTable,
        record: _LeaseRecord,
        view: RevisionView,
        services: ExecuteServices,
        tools: tuple[DirectTool, ...],
    ) -> Lease:
        lease = cls.__new__(cls)
        lease._table = table
        lease._record = record
        lease.graph = record.revision.graph
        lease.revision = record.revision.number
        lease._catalog = view.catalog
        lease._runs = Holds()
        lease._execute_tool = ExecuteTool._for_lease(view, services, lease._hold)
        lease._tools = tuple(
            GatedTool._for_lease(
                tool,
                invoker=services.invoker,
                session_id=services.session_id,
                max_result_bytes=services.options.max_result_bytes,
                hold=lease._hold,
            )
            for tool in tools
        )
        lease._released = False
        return lease

    @property
    def released(self) -> bool:
        """Whether :meth:`release` has been called."""
        return self._released

    @property
    def catalog(self) -> Catalog:
        """The discovery catalog of this lease's revision."""
        self._check()
        return self._catalog

    @property
    def tools(self) -> tuple[GatedTool, ...]:
        """The host's direct tools, behind the same access checks as every operation."""
        self._check()
        return self._tools

    @property
    def execute_tool(self) -> ExecuteTool:
        """The one ``execute`` tool, bound to this lease's revision."""
        self._check()
        return self._execute_tool

    async def release(self) -> None:
        """Release the lease. Idempotent; waits for executes already running on it to settle.

        Releasing the last lease of a stale revision releases the snapshots only it used;
        a failure there is raised here (:class:`MyceliumSourceError`, phase ``"release"``).
        """
        if self._released:
            return
        self._released = True
        # The tools hold this lease (their hold is its method); dropping them here, where nothing may
        # read them any more, ends that cycle, so a released lease is freed as soon as it is dropped
        # instead of at the collector's next full pass.
        del self._execute_tool, self._tools
        try:
            await self._runs.wait_idle()
        finally:
            await self._table.release(self._record)

    def __del__(self) -> None:
        if not self._released:
            self._table.lost(self._record)

    @contextmanager
    def _hold(self) -> Iterator[None]:
        self._check()
        with self._runs.held():
            yield

    def _check(self) -> None:
        if self._released:
            raise LeaseReleased(f"lease of revision {self.revision} was released; acquire a new one")
        if self._table.stopped:
            raise RuntimeClosed(f"the runtime of this lease (revision {self.revision}) has closed")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.release()

    def __repr__(self) -> str:
        return f"<Lease revision={self.revision}{' released' if self._released else ''}>"
