"""A paused run's byte form: what :class:`~mycelium.sandbox.Suspended` carries, and reading it back.

The state is opaque to the host but is handed back to :meth:`MontySandbox.resume
<mycelium.sandbox.monty.MontySandbox.resume>`, possibly by another process of this version:
its header is checked as it is read, and a state this adapter did not write is refused as
``Unrestorable``.
"""

from __future__ import annotations

from typing import NamedTuple

from ..._exceptions import OperationFailed
from ..._framing import frame, unframe
from .._contract import Unrestorable
from ._outcomes import _Outcome, _settled_form

_STATE_MAGIC = b"MYCMONTY"
_STATE_VERSION = 1
# A state whose call is announced again on loading: a process of a release before it refuses it.
_ANNOUNCED_VERSION = 2
ANNOUNCED = 0
"""The id a run paused from inside its deferred call keeps that call under: Monty's own id for it
is not known until the state is loaded and the call announced again."""


class _Paused(NamedTuple):
    """A paused run as :class:`~mycelium.sandbox.Suspended` carries it, and its byte form.

    ``ready`` holds the outcomes of calls that settled while the run was pausing, not yet
    handed to the program; ``deferred`` names the calls awaiting a decision (call id ->
    path), the first of them the one the run paused at.
    """

    snapshot: bytes
    ready: dict[int, _Outcome]
    deferred: dict[int, str]
    slept: float
    """Seconds the program has slept so far: its sleep budget is the whole run's."""
    calls_made: int
    """Operation calls placed so far, the deferred ones included: the limit is the whole run's."""
    failures: list[OperationFailed]
    """The host failures calls settled with so far, to report one the program leaves unhandled."""
    announced: bool = False
    """Paused from inside the deferred call of a fed run (one, under :data:`ANNOUNCED`): loading
    the state announces that call again, where a stepped run's state waits for its future."""

    def pack(self) -> bytes:
        """The byte form (see :mod:`mycelium._framing`): a JSON header, then Monty's snapshot."""
        header = {
            "v": _ANNOUNCED_VERSION if self.announced else _STATE_VERSION,
            "ready": list(self.ready.items()),
            "deferred": list(self.deferred.items()),
            "slept": self.slept,
            "calls_made": self.calls_made,
            "failures": [[f.module, f.operation, f.path, f.reference] for f in self.failures],
        }
        return frame(_STATE_MAGIC, header, self.snapshot)

    @classmethod
    def unpack(cls, state: bytes) -> _Paused:
        """Read the byte form back; raise :class:`Unrestorable` for anything else."""
        try:
            header, snapshot = unframe(_STATE_MAGIC, state)
            if header["v"] not in (_STATE_VERSION, _ANNOUNCED_VERSION):
                raise ValueError(f"state version {header['v']!r}")
            ready = {int(call_id): _settled_form(outcome) for call_id, outcome in header["ready"]}
            deferred = {int(call_id): str(path) for call_id, path in header["deferred"]}
            slept = float(header["slept"])
            calls_made = int(header["calls_made"])
            failures = [
                OperationFailed(module=module, operation=operation, path=path, reference=reference)
                for module, operation, path, reference in header["failures"]
            ]
            announced = header["v"] == _ANNOUNCED_VERSION
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise Unrestorable(f"the paused run's state cannot be read: {exc}") from None
        if not deferred or not snapshot or (announced and list(deferred) != [ANNOUNCED]):
            raise Unrestorable("the paused run's state is incomplete")
        return cls(snapshot, ready, deferred, slept, calls_made, failures, announced)
