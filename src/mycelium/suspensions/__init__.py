"""Where suspended runs wait for a decision: the store contract and its three stores.

A run that reaches a confirmation nobody can answer yet is sealed and kept in a
:class:`SuspensionStore` until it is resumed or expires: :class:`MemorySuspensions` in
this process, :class:`SqliteSuspensions` in a file that survives a restart, and
:class:`PostgresSuspensions` in a database several server instances share.
"""

from .memory import MemorySuspensions
from .postgres import PostgresSuspensions
from .sqlite import SqliteSuspensions
from .store import StoredSuspension, SuspensionLimitReached, SuspensionStore

__all__ = [
    "MemorySuspensions",
    "PostgresSuspensions",
    "SqliteSuspensions",
    "StoredSuspension",
    "SuspensionLimitReached",
    "SuspensionStore",
]
