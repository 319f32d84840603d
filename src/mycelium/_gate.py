"""The access gate: before every operation call, the grant, then the person, then the grant again.

It reads the host's decisions (:class:`~mycelium.Access`) for each call, before the input
is decoded: a grant that does not allow the operation refuses it; a ``confirm=True``
operation asks the person; once they approve, the grant is read again, so one revoked
while they were deciding refuses the call. A refusal is an ordinary result, reported to
``on_refused``; nothing of the operation runs.
"""

from __future__ import annotations

import inspect

from ._access import (
    Access,
    AccessRefusal,
    ConfirmRequest,
    Decision,
    DecisionDeferred,
    Grant,
    RefusalReason,
    RefusedCall,
    is_grant,
)
from ._context import InvocationContext
from ._graph import InstalledOperation
from ._hooks import notify
from ._operations import AccessLabel

__all__ = ["AccessGate", "confirm_request"]

_MESSAGES: dict[RefusalReason, str] = {
    "not-granted": "{path} is not available in this session. Do not retry it; tell the user it needs access.",
    "read-only-grant": "{path} changes something, and this session may only read {owner}. "
    "Use read operations, or tell the user it needs write access.",
    "confirmation-unavailable": "{path} needs a person to confirm each call, and nobody can be asked here. "
    "Tell the user instead of retrying.",
    "confirmation-declined": "The person declined {path}. Do not retry it unless they ask you to.",
}
# A direct tool has no module around it to name: its grant is the tool's own.
_DIRECT_TOOL_READ_ONLY = (
    "{path} changes something, and this session has read-only access to it. "
    "Do not retry it; tell the user it needs write access."
)


class AccessGate:
    """Decides, call by call, whether an operation may run."""

    def __init__(self, access: Access) -> None:
        self._access = access

    async def check(
        self,
        target: InstalledOperation,
        context: InvocationContext,
        raw: object,
        *,
        may_defer: bool = False,
        decided: Decision | None = None,
    ) -> AccessRefusal | None:
        """``None`` when the call may proceed, else the refusal (already reported to ``on_refused``).

        ``may_defer``: the caller can pause the run, so a deferred confirmation raises
        :class:`DecisionDeferred` instead of refusing. ``decided``: this very call was already
        decided (a resumed run); nobody is asked, and an approval still needs the grant as it
        reads now. An exception from ``session_grants`` or ``confirm``
        propagates: it is a host failure.
        """
        op = target.operation
        reason = await self._session_refusal(target) if self._per_session else self._host_refusal(target)
        if reason is None and op.confirm:
            if decided is None:
                reason = await self._ask(target, context, raw, may_defer)
            elif decided != "approved":
                reason = "confirmation-declined" if decided == "declined" else "confirmation-unavailable"
            # The person's answer can take long: the grant is read again once they approve.
            if reason is None:
                reason = await self._session_refusal(target) if self._per_session else self._host_refusal(target)
        if reason is None:
            return None
        refusal = AccessRefusal(
            module=target.module.id,
            operation=target.relative,
            reason=reason,
            message=_message(reason, target),
        )
        await notify(self._access.on_refused, RefusedCall(refusal, context), name="on_refused")
        return refusal

    @property
    def _per_session(self) -> bool:
        # Host grants alone (every call's common path) are read without a coroutine.
        return self._access.session_grants is not None

    async def _session_refusal(self, target: InstalledOperation) -> RefusalReason | None:
        return _grant_refusal(await self._session_grant(target.module.grant_key), target.operation.access)

    def _host_refusal(self, target: InstalledOperation) -> RefusalReason | None:
        return _grant_refusal(self._host_grant(target.module.grant_key), target.operation.access)

    async def _session_grant(self, key: str) -> Grant:
        """The grant the session holds for ``key`` now, else the host's."""
        session_grants = self._access.session_grants
        assert session_grants is not None  # only asked when the access has session grants
        stored = session_grants()
        if inspect.isawaitable(stored):
            stored = await stored
        if key in stored:
            grant = stored[key]
            # A malformed stored grant fails closed.
            return grant if is_grant(grant) else "none"
        return self._host_grant(key)

    def _host_grant(self, key: str) -> Grant:
        access = self._access
        if key in access.grants:
            return access.grants[key]
        return "none" if access.explicit or key in access.required else "write"

    async def _ask(
        self, target: InstalledOperation, context: InvocationContext, raw: object, may_defer: bool
    ) -> RefusalReason | None:
        if self._access.confirm is None:
            return "confirmation-unavailable"
        request = confirm_request(target, context, raw)
        approved = self._access.confirm(request)
        if inspect.isawaitable(approved):
            approved = await approved
        if approved == "defer" and may_defer:
            raise DecisionDeferred(request)
        if approved is None or approved == "defer":
            return "confirmation-unavailable"
        return None if approved is True else "confirmation-declined"


def confirm_request(target: InstalledOperation, context: InvocationContext, raw: object) -> ConfirmRequest:
    """The call as a person would be asked about it (or as a paused run keeps it)."""
    return ConfirmRequest(
        module_id=target.module.id,
        module_name=target.module.alias,
        operation=target.relative,
        path=target.path,
        access=target.operation.access,
        session_id=context.session_id,
        execution_id=context.execution_id,
        tool_call_id=context.tool_call_id,
        operation_ordinal=context.operation_ordinal,
        arguments=raw,
    )


def _message(reason: RefusalReason, target: InstalledOperation) -> str:
    """The refusal in plain sentences; a direct tool (installed alone, with no module path) is named by itself."""
    owner = ".".join(target.module.path)
    if reason == "read-only-grant" and not owner:
        return _DIRECT_TOOL_READ_ONLY.format(path=target.path)
    return _MESSAGES[reason].format(path=target.path, owner=owner)


def _grant_refusal(grant: Grant, label: AccessLabel) -> RefusalReason | None:
    if grant == "none":
        return "not-granted"
    if grant == "read" and label == "write":
        return "read-only-grant"
    return None
