"""A paused run's byte form: what :class:`~mycelium.sandbox.Suspended` carries, and reading it back.

The state is opaque to the host but is handed back to :meth:`MontySandbox.resume
<mycelium.sandbox.monty.MontySandbox.resume>`, possibly by another process of this version:
its header is checked as it is read, and a state this adapter did not write is refused as
``Unrestorable``.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from ..._exceptions import OperationFailed
from .._contract import Unrestorable
from ._outcomes import _Outcome, _settled_form

_STATE_MAGIC = b"MYCMONTY"
_STATE_VERSION = 1


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

    def pack(self) -> bytes:
        """The byte form: the magic, the header's length (4 bytes, big-endian), the header (JSON), Monty's snapshot."""
        header = json.dumps(
            {
                "v": _STATE_VERSION,
                "ready": list(self.ready.items()),
                "deferred": list(self.deferred.items()),
                "slept": self.slept,
                "calls_made": self.calls_made,
                "failures": [[f.module, f.operation, f.path, f.reference] for f in self.failures],
            },
            separators=(",", ":"),
            allow_nan=False,
        ).encode()
        return _STATE_MAGIC + len(header).to_bytes(4, "big") + header + self.snapshot

    @classmethod
    def unpack(cls, state: bytes) -> _Paused:
        """Read the byte form back; raise :class:`Unrestorable` for anything else."""
        try:
            if not state.startswith(_STATE_MAGIC):
                raise ValueError("not a paused Monty run")
            start = len(_STATE_MAGIC) + 4
            end = start + int.from_bytes(state[len(_STATE_MAGIC) : start], "big")
            header = json.loads(state[start:end])
            if header["v"] != _STATE_VERSION:
                raise ValueError(f"state version {header['v']!r}")
            ready = {int(call_id): _settled_form(outcome) for call_id, outcome in header["ready"]}
            deferred = {int(call_id): str(path) for call_id, path in header["deferred"]}
            slept = float(header["slept"])
            calls_made = int(header["calls_made"])
            failures = [
                OperationFailed(module=module, operation=operation, path=path, reference=reference)
                for module, operation, path, reference in header["failures"]
            ]
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise Unrestorable(f"the paused run's state cannot be read: {exc}") from None
        if not deferred or len(state) <= end:
            raise Unrestorable("the paused run's state is incomplete")
        return cls(state[end:], ready, deferred, slept, calls_made, failures)
