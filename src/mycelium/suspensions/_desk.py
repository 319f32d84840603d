"""Where one lease's execute tool hands in paused runs, and collects them again to resume.

A :class:`SuspensionDesk` serves one session against one revision (its module digests).
It keeps a pause (sealed, within the store's bounds and the run's deadline), finds the
pause of a tool call a framework replays, checks whether a suspension may resume with a
decision, and claims it for exactly one resume, leaving its tombstone so that a retry
is refused as ``already-resumed``. It never runs anything: the execute tool does, with
what the desk hands it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass

import anyio

from .._signals import AbortSignal
from ..failures import ResumeRefusal
from . import _records
from ._records import Suspension, SuspensionRecord
from ._store import StoredSuspension, SuspensionLimitReached
from ._suspensions import Suspensions

__all__ = ["Replay", "Resumable", "ResumeRefused", "SuspensionDesk"]

logger = logging.getLogger("mycelium")


class ResumeRefused(Exception):
    """A suspension cannot resume, for ``reason``; nothing of it ran."""

    def __init__(self, reason: ResumeRefusal) -> None:
        self.reason: ResumeRefusal = reason
        super().__init__(reason)


@dataclass(frozen=True)
class Resumable:
    """A suspension checked to resume now, and the decision on the call it waits at."""

    stored: StoredSuspension
    record: SuspensionRecord
    approved: bool | None
    """``None`` for a handed-off run, which nobody decides."""


@dataclass(frozen=True)
class Replay:
    """What a replayed tool call that paused before gets.

    Either ``waiting`` (the pause still waits for its decision: answer with it again, run
    nothing) or a resume of ``suspension_id`` with ``approved`` (``None``: the decision the
    store holds, or a refusal saying why there is none).
    """

    suspension_id: str
    approved: bool | None = None
    waiting: Suspension | None = None


class SuspensionDesk:
    """One lease's access to its runtime's suspensions: its session, its revision's digests."""

    def __init__(self, suspensions: Suspensions, *, session_id: str | None, digests: Mapping[str, str]) -> None:
        self.suspensions = suspensions
        self._session_id = session_id
        self._digests = digests

    def new_record_id(self) -> str:
        """A fresh id for a pause about to be kept."""
        return self.suspensions.new_id()

    def expiry(self, created: float) -> float:
        """When a pause made at ``created`` stops waiting for its decision."""
        return created + self.suspensions.expires_after_ms / 1000

    async def keep(self, record: SuspensionRecord, *, until: float) -> bool:
        """Seal and store a paused run; whether it was kept.

        ``False`` means nothing was stored and nobody can be asked to wait for it (its state
        is over the bound, or its session holds as many pauses as it may): its deferred calls
        are refused and the program goes on. Raises
        :class:`~mycelium.suspensions.StoreUnavailable` when the store failed or did not
        answer by ``until``: whether it kept the pause is then unknown.
        """
        suspensions = self.suspensions
        limit = suspensions.max_state_bytes
        try:
            if len(record.state) > limit:  # refused before anything is hashed
                raise SuspensionLimitReached(
                    f"the paused run's state is {len(record.state)} bytes; the limit is {limit}"
                )
            stored = await suspensions.seal(record)
            if len(stored.record) > limit:
                raise SuspensionLimitReached(
                    f"the paused run's record is {len(stored.record)} bytes; the limit is {limit}"
                )
            put = functools.partial(suspensions.store.put, stored, max_per_session=suspensions.max_per_session)
            await suspensions.stored(put, until=until)
        except SuspensionLimitReached as exc:
            # The text, not the exception: a log record outlives the call, and the exception's
            # frames hold the paused state.
            logger.warning(
                "execute %s could not pause (%s); its deferred calls are refused", record.execution_id, str(exc)
            )
            return False
        return True

    async def replayed(
        self, tool_call_id: str, code: str, approved: bool | None, suspension_id: str | None
    ) -> Replay | None:
        """What a tool call of ``code`` that a framework replays gets; ``None`` when it never paused.

        A paused call of this code that has expired, was resumed already (its tombstone), or
        whose record fails its seal, is not new either: it is resumed, and so refused, never
        run from the start again. A decision given for another pause (the one before this,
        delivered twice) must not decide this one: it is asked again. A decision naming no
        pause is for the first pause only.
        """
        paused = await self.suspensions.of_call(self._session_id, tool_call_id, code)
        if paused is None:
            return None
        stored, record = paused
        if record is None or record.claimed or record.expires_at <= _records.now():
            return Replay(stored.id)
        meant_for_another = stored.id != suspension_id if suspension_id is not None else record.resumed
        if meant_for_another:
            approved = None
        if record.handed_off:
            return Replay(stored.id)  # nobody decides it: it goes on
        if approved is None and stored.decision is None:
            return Replay(stored.id, waiting=record.suspension())
        return Replay(stored.id, approved)

    async def resumable(self, suspension_id: object, approved: bool | None) -> Resumable:
        """The suspension checked to resume here, and with which decision; :class:`ResumeRefused` if not.

        Nothing changes in the store: a suspension that cannot resume now (undecided, or its
        operations changed) is still there afterwards. A claimed one (its tombstone) is
        ``already-resumed``, expired or not.
        """
        if not isinstance(suspension_id, str):
            raise ResumeRefused("not-found")
        suspensions = self.suspensions
        stored = await suspensions.stored(lambda: suspensions.store.get(suspension_id))
        if stored is None:
            raise ResumeRefused("not-found")
        record = await suspensions.unseal(stored)
        if record is None:
            raise ResumeRefused("tampered")
        if record.session_id != self._session_id:
            raise ResumeRefused("not-found")  # another session's suspension is not this one's to see
        if record.claimed:
            raise ResumeRefused("already-resumed")
        if record.expires_at <= _records.now():
            raise ResumeRefused("expired")
        recorded = suspensions.open_decision(suspension_id, stored.decision)
        if recorded is None and stored.decision is not None:
            raise ResumeRefused("tampered")
        if record.handed_off:
            approved = None  # nobody decides a handed-off run: a decision given for it decides nothing
        elif approved is None:
            if recorded is None:
                raise ResumeRefused("undecided")
            approved = recorded
        elif recorded is not None and recorded != approved:
            raise ResumeRefused("decided-otherwise")  # one person declined, another may not approve over it
        if any(self._digests.get(module_id) != digest for module_id, digest in record.modules.items()):
            raise ResumeRefused("revision-changed")
        return Resumable(stored, record, approved)

    async def claim(self, resumable: Resumable, signal: AbortSignal) -> None:
        """Take a checked suspension from the store for this resume, leaving its tombstone, or raise
        why it cannot be had.

        A run stopped while the claim was under way gives the suspension back (its tombstone
        becomes the suspension again): nothing of it ran.
        """
        suspensions = self.suspensions
        stored = resumable.stored
        tombstone = suspensions.tombstone(resumable.record)
        claimed = await suspensions.stored(
            lambda: suspensions.store.claim(stored.id, now=_records.now(), tombstone=tombstone)
        )
        if claimed is None:
            raise ResumeRefused("already-resumed")
        if claimed.record != stored.record:
            raise ResumeRefused("tampered")
        if signal.aborted:
            with anyio.CancelScope(shield=True):
                await suspensions.stored(lambda: suspensions.store.restore(claimed))
            signal.throw_if_aborted()
