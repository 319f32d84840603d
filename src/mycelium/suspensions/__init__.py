"""Suspensions: runs paused at a person's decision, kept sealed until the decision comes.

A runtime opts in with ``Runtime(suspensions=Suspensions(...))`` and a ``confirm`` callback
that answers ``"defer"`` (:func:`~mycelium.defer` always does). When a program calls a
``confirm=True`` operation and the host defers, the run does not wait in memory: the
calls it has in flight settle, the sandbox captures the run, and the execute settles at
once with a :class:`~mycelium.ToolResult` whose ``suspension`` names the pending call.
Later (minutes or days, in this process or another sharing the store) the host resumes
it with the person's decision: the pending call runs or is refused, and the program goes
on from where it stopped. Nothing that already ran runs again.

A paused run waits in a :class:`SuspensionStore`: :class:`MemorySuspensions` in this
process, :class:`SqliteSuspensions` in a file that survives a restart, and
:class:`PostgresSuspensions` in a database several server instances share.
"""

from ._memory import MemorySuspensions
from ._postgres import PostgresSuspensions
from ._records import Suspension
from ._sqlite import SqliteSuspensions
from ._store import StoredSuspension, SuspensionLimitReached, SuspensionStore
from ._suspensions import StoreUnavailable, Suspensions

__all__ = [
    "MemorySuspensions",
    "PostgresSuspensions",
    "SqliteSuspensions",
    "StoreUnavailable",
    "StoredSuspension",
    "Suspension",
    "SuspensionLimitReached",
    "SuspensionStore",
    "Suspensions",
]
