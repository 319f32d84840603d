"""Access: labels, grants, session grants, required keys, confirmation by a person, refusals.

The rules (issue 5, seed section "Access labels and grants"):

- The effective grant of a call is the session store's value for the module's grant key if
  the store names it; else ``grants``' value; else ``"none"`` if the key is ``required``;
  else ``"write"`` (a module the host does not name keeps full access).
- ``"none"`` refuses every operation (``not-granted``); ``"read"`` refuses write and
  unlabelled operations (``read-only-grant``).
- Only then is a person asked, for ``confirm=True`` operations: no ``confirm`` callback
  refuses (``confirmation-unavailable``), a callback that does not return ``True`` refuses
  (``confirmation-declined``).
- Both checks come before the input decoder; a refused call decodes and runs nothing, is
  an ordinary result (``AccessRefusal``; its JSON form inside a sandbox), is seen by
  ``on_refused`` and consumes its ordinal.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from pydantic import BaseModel, field_validator

from mycelium import (
    Access,
    AccessRefusal,
    ConfirmRequest,
    DefinitionError,
    InvocationContext,
    Module,
    OperationEvidence,
    OperationFailed,
    RefusedCall,
    Runtime,
    Session,
    grant_as,
    operation,
)
from mycelium.testing import direct_sandbox, rejecting_sandbox

MID = "notes-module"
NAME = "notes"
REASONS = {"not-granted", "read-only-grant", "confirmation-unavailable", "confirmation-declined"}


# --------------------------------------------------------------------------------------
# A recording operation: did its decoder run, did its body run, what context did it see.
# --------------------------------------------------------------------------------------


@dataclass
class Probe:
    decoded: list[str] = field(default_factory=list)
    ran: list[InvocationContext] = field(default_factory=list)
    asked: list[ConfirmRequest] = field(default_factory=list)
    refused: list[RefusedCall] = field(default_factory=list)
    errors: list[OperationEvidence] = field(default_factory=list)

    def input_model(self) -> type[BaseModel]:
        decoded = self.decoded

        class NoteInput(BaseModel):
            text: str

            @field_validator("text")
            @classmethod
            def _record_decoding(cls, value: str) -> str:
                decoded.append(value)
                return value

        return NoteInput

    def operation(self, *, access: str | None = None, confirm: bool = False) -> Any:
        ran = self.ran

        async def body(note: Any, ctx: InvocationContext) -> dict[str, str]:
            ran.append(ctx)
            return {"echo": note.text}

        return operation(
            input=self.input_model(),
            execute=body,
            access=access,  # type: ignore[arg-type]
            confirm=confirm,
        )

    def confirmer(self, answer: object) -> Callable[[ConfirmRequest], Any]:
        async def confirm(request: ConfirmRequest) -> Any:
            self.asked.append(request)
            return answer

        return confirm


def notes_module(ops: Mapping[str, Any], *, module_id: str = MID) -> Module:
    return Module(id=module_id, name=NAME, operations=dict(ops))


# --------------------------------------------------------------------------------------
# 1. The matrix: label x confirm x grants x session grant x required, one case per cell.
# --------------------------------------------------------------------------------------

LABELS = {"read": "read", "write": "write", "unlabelled": None}
CONFIRMS = ["off", "no-callback", "approving", "declining"]
GRANTS = ["write", "read", "none", "absent"]
SESSIONS = ["absent", "up", "down"]  # up overrides to "write", down overrides to "none"
REQUIRED = ["named", "not-named"]

SESSION_VALUE = {"absent": None, "up": "write", "down": "none"}


def effective_grant(grants: str, session: str, required: str) -> str:
    """Session key overrides grants key; else grants; else "none" if required, else "write"."""
    if SESSION_VALUE[session] is not None:
        return SESSION_VALUE[session]  # type: ignore[return-value]
    if grants != "absent":
        return grants
    return "none" if required == "named" else "write"


def oracle(label: str, confirm: str, grants: str, session: str, required: str) -> tuple[str | None, bool]:
    """(refusal reason or None if allowed, whether the person is asked)."""
    grant = effective_grant(grants, session, required)
    if grant == "none":
        return "not-granted", False
    if grant == "read" and label != "read":  # unlabelled is write
        return "read-only-grant", False
    if confirm == "off":
        return None, False
    if confirm == "no-callback":
        return "confirmation-unavailable", False
    if confirm == "declining":
        return "confirmation-declined", True
    return None, True


CELLS = [
    pytest.param(*cell, id=f"label={cell[0]}-confirm={cell[1]}-grants={cell[2]}-session={cell[3]}-required={cell[4]}")
    for cell in itertools.product(LABELS, CONFIRMS, GRANTS, SESSIONS, REQUIRED)
]
assert len(CELLS) == 288


@pytest.mark.parametrize(("label", "confirm", "grants", "session", "required"), CELLS)
async def test_access_matrix_grant_first_then_person_before_decoding(
    label: str, confirm: str, grants: str, session: str, required: str
) -> None:
    probe = Probe()
    store: dict[str, Any] = {"some-other-module": "none"}  # an unrelated key changes nothing
    if SESSION_VALUE[session] is not None:
        store[MID] = SESSION_VALUE[session]
    answer = {"off": False, "no-callback": None, "approving": True, "declining": False}[confirm]
    access = Access(
        grants={} if grants == "absent" else {MID: grants},  # type: ignore[dict-item]
        session_grants=lambda: store,
        required={MID} if required == "named" else {"some-other-module"},
        # With confirm off, a (declining) callback is present and must never be asked.
        confirm=None if confirm == "no-callback" else probe.confirmer(answer),
        on_refused=probe.refused.append,
    )
    op = probe.operation(access=LABELS[label], confirm=confirm != "off")
    runtime = Runtime(modules=[notes_module({"op": op})], sandbox=rejecting_sandbox(), access=access)
    async with runtime:
        outcome = await runtime.invoke(MID, "op", {"text": "hi"})

    reason, asked = oracle(label, confirm, grants, session, required)

    # The person is asked only when the grant allowed the call (grant first, then the person).
    assert len(probe.asked) == (1 if asked else 0)
    if asked:
        request = probe.asked[0]
        assert request.module_id == MID
        assert request.operation == "op"
        assert request.access == ("read" if label == "read" else "write")
        assert request.arguments == {"text": "hi"}
    if reason is None:
        assert outcome == {"echo": "hi"}
        assert probe.decoded == ["hi"]
        assert len(probe.ran) == 1
        assert probe.refused == []
    else:
        assert isinstance(outcome, AccessRefusal)
        assert outcome.reason == reason
        assert outcome.reason in REASONS
        assert outcome.module == MID
        assert outcome.operation == "op"
        assert outcome.message
        # A refused operation's decoder and body never ran.
        assert probe.decoded == []
        assert probe.ran == []
        # on_refused saw exactly this refusal, with the call's context.
        assert len(probe.refused) == 1
        seen = probe.refused[0]
        assert isinstance(seen, RefusedCall)
        assert seen.refusal == outcome
        assert seen.context.module_id == MID
        assert seen.context.operation == "op"


# --------------------------------------------------------------------------------------
# 2. The refusal is an ordinary result: JSON form inside a sandbox, the object via invoke.
# --------------------------------------------------------------------------------------


async def test_refusal_inside_a_sandbox_is_its_json_form_and_the_execute_succeeds() -> None:
    probe = Probe()

    async def program(bindings: Any, signal: Any) -> Any:
        return await bindings.notes.op(text="hi")

    access = Access(grants={MID: "read"})
    module = notes_module({"op": probe.operation(access="write")})
    async with Runtime(modules=[module], sandbox=direct_sandbox(program), access=access) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("return notes.op(text='hi')", tool_call_id="call-1")

    assert result.is_error is False
    assert result.failure is None
    assert isinstance(result.value, dict)
    assert set(result.value) == {"refused", "module", "operation", "reason", "message"}
    assert result.value["refused"] is True
    assert result.value["module"] == MID
    assert result.value["operation"] == "op"
    assert result.value["reason"] == "read-only-grant"
    assert isinstance(result.value["message"], str)
    assert result.value["message"]
    assert probe.decoded == []
    assert probe.ran == []


async def test_refusal_through_runtime_invoke_is_the_access_refusal_object() -> None:
    probe = Probe()
    access = Access(grants={MID: "none"})
    module = notes_module({"op": probe.operation(access="read")})
    async with Runtime(modules=[module], sandbox=rejecting_sandbox(), access=access) as runtime:
        outcome = await runtime.invoke(MID, "op", {"text": "hi"})
    assert isinstance(outcome, AccessRefusal)
    assert outcome.reason == "not-granted"
    assert outcome.to_json() == {
        "refused": True,
        "module": MID,
        "operation": "op",
        "reason": "not-granted",
        "message": outcome.message,
    }


async def test_labels_are_fixed_at_definition_so_a_held_lease_still_refuses_a_write_under_a_read_grant() -> None:
    probe = Probe()
    op = probe.operation(access="write", confirm=True)
    access = Access(grants={MID: "read"}, confirm=probe.confirmer(True))

    async def program(bindings: Any, signal: Any) -> Any:
        return await bindings.notes.op(text="hi")

    runtime = Runtime(modules=[notes_module({"op": op})], sandbox=direct_sandbox(program), access=access)
    async with runtime:
        async with runtime.lease() as lease:
            target = lease.graph.module(MID).operations["op"]  # type: ignore[union-attr]
            for name, value in (("access", "read"), ("confirm", False)):
                with pytest.raises(AttributeError):
                    setattr(op, name, value)
                with pytest.raises(AttributeError):
                    setattr(target.operation, name, value)
            # Nor can the installed graph swap the operation or its module for another.
            with pytest.raises(AttributeError):
                target.operation = operation(execute=lambda: None, access="read")  # type: ignore[misc]
            with pytest.raises(AttributeError):
                target.module.grant_key = "someone-else"  # type: ignore[misc]
            with pytest.raises(TypeError):
                target.module.operations["op"] = target  # type: ignore[index]
            result = await lease.execute_tool.run("return notes.op(text='hi')")
    assert isinstance(result.value, dict)
    assert result.value["reason"] == "read-only-grant"
    assert probe.asked == []
    assert probe.ran == []


# --------------------------------------------------------------------------------------
# 3. A refusal consumes its ordinal.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("refusal", ["read-only-grant", "confirmation-declined"])
async def test_a_refusal_consumes_its_ordinal(refusal: str) -> None:
    probe = Probe()
    next_ran: list[InvocationContext] = []

    async def look(ctx: InvocationContext) -> str:
        next_ran.append(ctx)
        return "ok"

    guarded = probe.operation(access="write", confirm=refusal == "confirmation-declined")
    module = notes_module({"guarded": guarded, "look": operation(execute=lambda _, ctx: look(ctx), access="read")})
    access = Access(
        grants={MID: "read" if refusal == "read-only-grant" else "write"},
        confirm=probe.confirmer(False),
        on_refused=probe.refused.append,
    )

    async def program(bindings: Any, signal: Any) -> Any:
        first = await bindings.notes.guarded(text="x")
        second = await bindings.notes.look()
        return [first, second]

    async with Runtime(modules=[module], sandbox=direct_sandbox(program), access=access) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("...", tool_call_id="call-1")

    assert result.is_error is False
    first, second = cast(list[Any], result.value)
    assert first["reason"] == refusal
    assert second == "ok"
    assert probe.refused[0].context.operation_ordinal == 0
    assert [ctx.operation_ordinal for ctx in next_ran] == [1]
    if refusal == "confirmation-declined":
        assert [request.operation_ordinal for request in probe.asked] == [0]


# --------------------------------------------------------------------------------------
# 4. Revocation mid-execute: the session store is read at every call.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("store_kind", ["sync", "async"])
async def test_a_grant_revoked_mid_execute_refuses_the_very_next_call(store_kind: str) -> None:
    probe = Probe()
    store: dict[str, Any] = {MID: "write"}

    def read_sync() -> Mapping[str, Any]:
        return store

    async def read_async() -> Mapping[str, Any]:
        return store

    access = Access(session_grants=read_sync if store_kind == "sync" else read_async, on_refused=probe.refused.append)

    async def program(bindings: Any, signal: Any) -> Any:
        first = await bindings.notes.op(text="one")
        store[MID] = "none"  # the host revokes the grant while the execute is running
        second = await bindings.notes.op(text="two")
        return [first, second]

    module = notes_module({"op": probe.operation(access="write")})
    async with Runtime(modules=[module], sandbox=direct_sandbox(program), access=access) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("...", tool_call_id="call-1")

    assert result.is_error is False
    first, second = cast(list[Any], result.value)
    assert first == {"echo": "one"}
    assert second["refused"] is True
    assert second["reason"] == "not-granted"
    assert probe.decoded == ["one"]
    assert [ctx.operation_ordinal for ctx in probe.ran] == [0]
    assert [seen.context.operation_ordinal for seen in probe.refused] == [1]


@pytest.mark.parametrize("store_kind", ["sync", "async"])
async def test_a_grant_given_mid_execute_allows_the_very_next_call(store_kind: str) -> None:
    probe = Probe()
    store: dict[str, Any] = {MID: "read"}

    async def read_async() -> Mapping[str, Any]:
        return store

    access = Access(session_grants=(lambda: store) if store_kind == "sync" else read_async)

    async def program(bindings: Any, signal: Any) -> Any:
        first = await bindings.notes.op(text="one")
        store[MID] = "write"
        second = await bindings.notes.op(text="two")
        return [first, second]

    module = notes_module({"op": probe.operation()})  # unlabelled: write
    async with Runtime(modules=[module], sandbox=direct_sandbox(program), access=access) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("...")

    first, second = cast(list[Any], result.value)
    assert first["reason"] == "read-only-grant"
    assert second == {"echo": "two"}
    assert probe.decoded == ["two"]


# --------------------------------------------------------------------------------------
# 5. ConfirmRequest, and strictly True approves.
# --------------------------------------------------------------------------------------


async def test_confirm_request_carries_identity_label_and_raw_arguments() -> None:
    asked: list[ConfirmRequest] = []
    seen: list[InvocationContext] = []

    class Target(BaseModel):
        id: int

    async def delete(target: Target, ctx: InvocationContext) -> int:
        seen.append(ctx)
        return target.id

    async def confirm(request: ConfirmRequest) -> bool:
        asked.append(request)
        return True

    module = Module(
        id=MID,
        name=NAME,
        namespace=["apps"],
        operations={
            "ping": operation(execute=lambda: "pong", access="read"),
            "drafts.delete": operation(input=Target, execute=delete, access="write", confirm=True),
        },
    )

    async def program(bindings: Any, signal: Any) -> Any:
        await bindings.env.apps.notes.ping()
        # "7" decodes to 7 (lax mode): the person is shown what the caller actually sent.
        return await bindings.env.apps.notes.drafts.delete(id="7")

    async with Runtime(
        modules=[module],
        sandbox=direct_sandbox(program),
        access=Access(confirm=confirm),
        session=Session("session-1"),
    ) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("...", tool_call_id="call-7")

    assert result.value == 7
    [request] = asked
    [ctx] = seen
    assert request.module_id == MID
    assert request.module_name == NAME
    assert request.operation == "drafts.delete"
    assert request.path == "apps.notes.drafts.delete"
    assert request.access == "write"
    assert request.session_id == "session-1"
    assert request.execution_id == ctx.execution_id
    assert request.tool_call_id == "call-7"
    assert request.operation_ordinal == 1 == ctx.operation_ordinal
    assert request.arguments == {"id": "7"}


async def test_confirm_request_through_invoke_carries_the_callers_context() -> None:
    from mycelium import CallContext

    probe = Probe()
    module = notes_module({"op": probe.operation(access="read", confirm=True)})
    access = Access(confirm=probe.confirmer(True))
    async with Runtime(
        modules=[module], sandbox=rejecting_sandbox(), access=access, session=Session("session-2")
    ) as runtime:
        outcome = await runtime.invoke(
            MID,
            "op",
            {"text": "hi"},
            context=CallContext(execution_id="exec-host", tool_call_id="call-host", operation_ordinal=4),
        )
    assert outcome == {"echo": "hi"}
    [request] = probe.asked
    assert (request.session_id, request.execution_id, request.tool_call_id, request.operation_ordinal) == (
        "session-2",
        "exec-host",
        "call-host",
        4,
    )
    assert request.access == "read"
    assert request.module_name == NAME


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (1, "declined"),
        ("yes", "declined"),
        ([True], "declined"),
        ({"ok": True}, "declined"),
        (False, "declined"),
        (0, "declined"),
        (None, "unavailable"),
    ],
    ids=repr,
)
async def test_only_strictly_true_approves_a_confirmation_and_none_means_nobody_could_be_asked(
    answer: object, reason: str
) -> None:
    probe = Probe()
    module = notes_module({"op": probe.operation(access="read", confirm=True)})
    access = Access(confirm=probe.confirmer(answer), on_refused=probe.refused.append)
    async with Runtime(modules=[module], sandbox=rejecting_sandbox(), access=access) as runtime:
        outcome = await runtime.invoke(MID, "op", {"text": "hi"})
    assert isinstance(outcome, AccessRefusal)
    assert outcome.reason == f"confirmation-{reason}"
    assert len(probe.asked) == 1
    assert probe.decoded == []
    assert probe.ran == []
    assert [seen.refusal for seen in probe.refused] == [outcome]


# --------------------------------------------------------------------------------------
# 6. on_refused observes; its exceptions are logged and change nothing.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_on_refused_that_raises_changes_nothing_and_is_logged(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    probe = Probe()

    def sync_observer(event: RefusedCall) -> None:
        raise RuntimeError("meter is down")

    async def async_observer(event: RefusedCall) -> None:
        raise RuntimeError("meter is down")

    module = notes_module({"op": probe.operation(access="write")})
    access = Access(grants={MID: "read"}, on_refused=sync_observer if kind == "sync" else async_observer)
    with caplog.at_level(logging.ERROR, logger="mycelium"):
        async with Runtime(modules=[module], sandbox=rejecting_sandbox(), access=access) as runtime:
            outcome = await runtime.invoke(MID, "op", {"text": "hi"})

    assert isinstance(outcome, AccessRefusal)
    assert outcome.reason == "read-only-grant"
    assert probe.decoded == []
    assert probe.ran == []
    records = [record for record in caplog.records if record.name == "mycelium" and "on_refused" in record.getMessage()]
    assert len(records) == 1
    assert records[0].exc_info is not None
    assert isinstance(records[0].exc_info[1], RuntimeError)


async def test_an_async_on_refused_observes_each_refusal() -> None:
    probe = Probe()
    seen: list[RefusedCall] = []

    async def observer(event: RefusedCall) -> None:
        seen.append(event)

    module = notes_module({"op": probe.operation(access="write")})
    async with Runtime(
        modules=[module], sandbox=rejecting_sandbox(), access=Access(grants={MID: "none"}, on_refused=observer)
    ) as runtime:
        first = await runtime.invoke(MID, "op", {"text": "a"})
        second = await runtime.invoke(MID, "op", {"text": "b"})
    assert [event.refusal for event in seen] == [first, second]


# --------------------------------------------------------------------------------------
# 7. grant_as, unnamed modules, required keys, and a runtime without Access.
# --------------------------------------------------------------------------------------


async def test_grant_as_looks_the_grant_up_under_the_wider_key() -> None:
    probe = Probe()
    module = notes_module({"write": probe.operation(access="write"), "read": probe.operation(access="read")})
    assert grant_as(module, "extension-1") is module
    # The module's own id is no longer the key: its "write" here does not apply.
    access = Access(grants={"extension-1": "read", MID: "write"}, on_refused=probe.refused.append)
    async with Runtime(modules=[module], sandbox=rejecting_sandbox(), access=access) as runtime:
        refused = await runtime.invoke(MID, "write", {"text": "w"})
        allowed = await runtime.invoke(MID, "read", {"text": "r"})
    assert isinstance(refused, AccessRefusal)
    assert refused.reason == "read-only-grant"
    assert refused.module == MID  # the refusal still names the module's own id
    assert allowed == {"echo": "r"}
    assert probe.decoded == ["r"]


async def test_grant_as_key_is_also_the_session_store_key() -> None:
    probe = Probe()
    module = grant_as(notes_module({"op": probe.operation(access="read")}), "extension-1")
    access = Access(grants={"extension-1": "write"}, session_grants=lambda: {"extension-1": "none"})
    async with Runtime(modules=[module], sandbox=rejecting_sandbox(), access=access) as runtime:
        outcome = await runtime.invoke(MID, "op", {"text": "hi"})
    assert isinstance(outcome, AccessRefusal)
    assert outcome.reason == "not-granted"


async def test_grant_as_key_fails_closed_when_required() -> None:
    probe = Probe()
    module = grant_as(notes_module({"op": probe.operation(access="read")}), "extension-1")
    access = Access(required={"extension-1"})
    async with Runtime(modules=[module], sandbox=rejecting_sandbox(), access=access) as runtime:
        outcome = await runtime.invoke(MID, "op", {"text": "hi"})
    assert isinstance(outcome, AccessRefusal)
    assert outcome.reason == "not-granted"
    assert probe.decoded == []


def test_grant_as_refuses_an_empty_key() -> None:
    with pytest.raises(DefinitionError):
        grant_as(notes_module({}), "")


async def test_a_module_the_host_does_not_name_keeps_full_access() -> None:
    probe = Probe()
    module = notes_module({"op": probe.operation()})  # unlabelled: write
    access = Access(
        grants={"other-module": "none"}, session_grants=lambda: {"other-module": "none"}, required={"other-module"}
    )
    async with Runtime(modules=[module], sandbox=rejecting_sandbox(), access=access) as runtime:
        outcome = await runtime.invoke(MID, "op", {"text": "hi"})
    assert outcome == {"echo": "hi"}


@pytest.mark.parametrize("label", ["read", "write", None])
async def test_required_keys_fail_closed(label: str | None) -> None:
    probe = Probe()
    module = notes_module({"op": probe.operation(access=label)})
    access = Access(required=[MID], on_refused=probe.refused.append)
    async with Runtime(modules=[module], sandbox=rejecting_sandbox(), access=access) as runtime:
        outcome = await runtime.invoke(MID, "op", {"text": "hi"})
    assert isinstance(outcome, AccessRefusal)
    assert outcome.reason == "not-granted"
    assert probe.decoded == []
    assert probe.ran == []
    assert len(probe.refused) == 1


async def test_without_access_a_confirm_operation_is_refused_and_others_run() -> None:
    probe = Probe()
    module = notes_module(
        {
            "ask": probe.operation(access="read", confirm=True),
            "read": probe.operation(access="read"),
            "write": probe.operation(access="write"),
            "plain": probe.operation(),
        }
    )
    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        asked = await runtime.invoke(MID, "ask", {"text": "a"})
        read = await runtime.invoke(MID, "read", {"text": "r"})
        write = await runtime.invoke(MID, "write", {"text": "w"})
        plain = await runtime.invoke(MID, "plain", {"text": "p"})
    assert isinstance(asked, AccessRefusal)
    assert asked.reason == "confirmation-unavailable"
    assert (read, write, plain) == ({"echo": "r"}, {"echo": "w"}, {"echo": "p"})
    assert probe.decoded == ["r", "w", "p"]


# --------------------------------------------------------------------------------------
# 8. Access validation, and a malformed stored grant fails closed.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["admin", "READ", "", None, True, 1, ["write"], {"grant": "write"}], ids=repr)
def test_a_bad_grant_value_is_a_value_error_naming_the_key(value: object) -> None:
    with pytest.raises(ValueError, match="notes-module"):
        Access(grants={"notes-module": value})  # type: ignore[dict-item]


def test_grants_must_be_a_mapping() -> None:
    with pytest.raises(ValueError, match="grants"):
        Access(grants=[("notes-module", "write")])  # type: ignore[arg-type]


def test_required_given_as_a_string_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="required"):
        Access(required="notes-module")


@pytest.mark.parametrize("name", ["session_grants", "confirm", "on_refused"])
def test_access_callbacks_must_be_callable(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        Access(**{name: "not callable"})  # type: ignore[arg-type]


@pytest.mark.parametrize("stored", ["admin", "WRITE", "write ", None, True, 1, ["write"], {"grant": "write"}], ids=repr)
async def test_a_malformed_value_in_the_session_store_fails_closed(stored: object) -> None:
    probe = Probe()
    module = notes_module({"op": probe.operation(access="read")})
    # Even over an explicit "write" grant: the store names the key, and its value is not a grant.
    store: dict[str, Any] = {MID: stored}
    access = Access(grants={MID: "write"}, session_grants=lambda: store, on_refused=probe.refused.append)
    async with Runtime(modules=[module], sandbox=rejecting_sandbox(), access=access) as runtime:
        outcome = await runtime.invoke(MID, "op", {"text": "hi"})
    assert isinstance(outcome, AccessRefusal)
    assert outcome.reason == "not-granted"
    assert probe.decoded == []
    assert probe.ran == []


# --------------------------------------------------------------------------------------
# 9. A host callback that raises is a host error, never a silent allow.
# --------------------------------------------------------------------------------------


class StoreDown(Exception):
    pass


def _raise_sync() -> Mapping[str, Any]:
    raise StoreDown("session store unreachable")


async def _raise_async() -> Mapping[str, Any]:
    raise StoreDown("session store unreachable")


async def _raise_confirm(request: ConfirmRequest) -> bool:
    raise StoreDown("approval service unreachable")


@pytest.mark.parametrize(
    "where",
    ["session_grants-sync", "session_grants-async", "confirm"],
)
async def test_a_raising_access_callback_is_operation_failed_at_stage_access(where: str) -> None:
    probe = Probe()
    if where == "confirm":
        access = Access(confirm=_raise_confirm, on_refused=probe.refused.append)
    else:
        access = Access(
            session_grants=_raise_sync if where == "session_grants-sync" else _raise_async,
            on_refused=probe.refused.append,
        )
    module = notes_module({"op": probe.operation(access="read", confirm=where == "confirm")})
    async with Runtime(
        modules=[module], sandbox=rejecting_sandbox(), access=access, on_operation_error=probe.errors.append
    ) as runtime:
        with pytest.raises(OperationFailed) as raised:
            await runtime.invoke(MID, "op", {"text": "hi"})

    assert "unreachable" not in str(raised.value)
    [evidence] = probe.errors
    assert evidence.stage == "access"
    assert isinstance(evidence.exception, StoreDown)
    assert evidence.reference == raised.value.reference
    assert evidence.module_id == MID
    assert probe.decoded == []
    assert probe.ran == []
    assert probe.refused == []  # a host error is not a refusal


async def test_a_raising_session_store_inside_an_execute_is_a_capability_failure() -> None:
    probe = Probe()

    async def program(bindings: Any, signal: Any) -> Any:
        return await bindings.notes.op(text="hi")

    module = notes_module({"op": probe.operation(access="read")})
    access = Access(session_grants=_raise_async)
    async with Runtime(
        modules=[module], sandbox=direct_sandbox(program), access=access, on_operation_error=probe.errors.append
    ) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("...")

    assert result.is_error is True
    assert result.failure is not None
    assert result.failure.code == "capability-failed"
    assert "unreachable" not in result.text
    assert [evidence.stage for evidence in probe.errors] == ["access"]
    assert probe.decoded == []
    assert probe.ran == []
