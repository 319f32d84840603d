"""Operation identity: the InvocationContext every call receives, and ordinals within an execute."""

from __future__ import annotations

import dataclasses

import anyio
import pytest

from mycelium import (
    AbortController,
    CallContext,
    InvocationContext,
    MissingExecuteIdentity,
    Module,
    Runtime,
    Session,
    operation,
)
from mycelium._signals import AbortSignal
from mycelium.sandbox._namespaces import GuestNamespace
from mycelium.testing import direct_sandbox, rejecting_sandbox


class Recorder:
    """Two modules whose operations record the context of every call."""

    def __init__(self) -> None:
        self.contexts: list[InvocationContext] = []
        self.gate = anyio.Event()

    def record(self, input: object, ctx: InvocationContext) -> dict[str, object]:
        self.contexts.append(ctx)
        return {"ordinal": ctx.operation_ordinal}

    async def record_when_released(self, input: object, ctx: InvocationContext) -> dict[str, object]:
        # Every concurrent call waits here, so completion order says nothing about ordinals.
        await self.gate.wait()
        return self.record(input, ctx)

    def modules(self) -> list[Module]:
        return [
            Module(id="mod-a", name="a", operations={"one": operation(execute=self.record)}),
            Module(
                id="mod-b",
                name="b",
                operations={
                    "two": operation(execute=self.record),
                    "slow": operation(execute=self.record_when_released),
                },
            ),
        ]


async def sequential(bindings: GuestNamespace, signal: AbortSignal) -> list[object]:
    return [await bindings.a.one(), await bindings.b.two(), await bindings.a.one()]


async def test_one_zero_based_ordinal_counter_spans_all_modules_in_an_execute() -> None:
    recorder = Recorder()
    async with Runtime(modules=recorder.modules(), sandbox=direct_sandbox(sequential)) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("...", tool_call_id="call-1")
    assert result.value == [{"ordinal": 0}, {"ordinal": 1}, {"ordinal": 2}]
    assert [(c.module_id, c.operation) for c in recorder.contexts] == [
        ("mod-a", "one"),
        ("mod-b", "two"),
        ("mod-a", "one"),
    ]


async def test_ordinals_are_allocated_when_the_binding_is_called_not_when_it_finishes() -> None:
    recorder = Recorder()

    async def concurrent(bindings: GuestNamespace, signal: AbortSignal) -> list[object]:
        # Started in this order; all complete only after the gate opens, in arbitrary order.
        first = bindings.b.slow()
        second = bindings.a.one()
        third = bindings.b.slow()
        results: list[object] = [None, None, None]

        async def settle(index: int, call: object) -> None:
            results[index] = await call  # type: ignore[misc]

        async with anyio.create_task_group() as tg:
            tg.start_soon(settle, 2, third)
            tg.start_soon(settle, 0, first)
            tg.start_soon(settle, 1, second)
            await anyio.wait_all_tasks_blocked()
            recorder.gate.set()
        return results

    async with Runtime(modules=recorder.modules(), sandbox=direct_sandbox(concurrent)) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("...", tool_call_id="call-1")
    assert result.value == [{"ordinal": 0}, {"ordinal": 1}, {"ordinal": 2}]


async def test_replaying_an_execute_gives_the_same_ordinals_with_a_fresh_execution_id() -> None:
    recorder = Recorder()
    async with Runtime(modules=recorder.modules(), sandbox=direct_sandbox(sequential)) as runtime:
        async with runtime.lease() as lease:
            first = await lease.execute_tool.run("...", tool_call_id="call-1")
            second = await lease.execute_tool.run("...", tool_call_id="call-1")
    assert first.value == second.value
    first_ids = {c.execution_id for c in recorder.contexts[:3]}
    second_ids = {c.execution_id for c in recorder.contexts[3:]}
    assert len(first_ids) == 1
    assert len(second_ids) == 1
    assert first_ids != second_ids


async def test_each_call_sees_the_tool_call_id_session_id_and_execution_signal() -> None:
    recorder = Recorder()
    runtime = Runtime(modules=recorder.modules(), sandbox=direct_sandbox(sequential), session=Session("s-1"))
    async with runtime, runtime.lease() as lease:
        await lease.execute_tool.run("...", tool_call_id="call-7")
    assert {(c.tool_call_id, c.session_id) for c in recorder.contexts} == {("call-7", "s-1")}
    assert all(isinstance(c.signal, AbortSignal) for c in recorder.contexts)


async def test_a_session_free_runtime_gives_session_id_none() -> None:
    recorder = Recorder()
    async with Runtime(modules=recorder.modules(), sandbox=direct_sandbox(sequential)) as runtime:
        async with runtime.lease() as lease:
            await lease.execute_tool.run("...")
    assert {c.session_id for c in recorder.contexts} == {None}


async def test_an_argument_shape_error_consumes_no_ordinal() -> None:
    recorder = Recorder()

    async def misuse(bindings: GuestNamespace, signal: AbortSignal) -> object:
        with pytest.raises(TypeError):
            bindings.a.one({}, extra=1)
        return await bindings.a.one()

    async with Runtime(modules=recorder.modules(), sandbox=direct_sandbox(misuse)) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("...")
    assert result.value == {"ordinal": 0}


def test_invocation_context_is_frozen() -> None:
    context = InvocationContext("e", "t", None, 0, "m", "op", AbortController().signal)
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.operation_ordinal = 5  # type: ignore[misc]


async def test_direct_invoke_uses_the_callers_context_and_may_leave_ordinal_and_tool_call_id_unset() -> None:
    recorder = Recorder()
    controller = AbortController()
    async with Runtime(modules=recorder.modules(), sandbox=rejecting_sandbox(), session=Session("s-2")) as runtime:
        await runtime.invoke("mod-a", "one")
        await runtime.invoke(
            "mod-b",
            "two",
            {},
            context=CallContext(execution_id="e-1", tool_call_id="t-1", operation_ordinal=4, signal=controller.signal),
        )
    bare, supplied = recorder.contexts
    assert (bare.tool_call_id, bare.operation_ordinal, bare.session_id) == (None, None, "s-2")
    assert bare.execution_id
    assert (supplied.execution_id, supplied.tool_call_id, supplied.operation_ordinal) == ("e-1", "t-1", 4)
    assert supplied.signal is controller.signal


@pytest.mark.parametrize(
    ("tool_call_id", "ordinal", "missing"),
    [(None, 0, "tool_call_id"), ("t", None, "operation_ordinal"), (None, None, "tool_call_id, operation_ordinal")],
)
def test_require_execute_identity_refuses_when_part_is_missing(
    tool_call_id: str | None, ordinal: int | None, missing: str
) -> None:
    context = InvocationContext("e", tool_call_id, None, ordinal, "m", "op", AbortController().signal)
    with pytest.raises(MissingExecuteIdentity, match=missing):
        context.require_execute_identity()


def test_require_execute_identity_returns_the_pair_when_present() -> None:
    context = InvocationContext("e", "t-1", None, 3, "m", "op", AbortController().signal)
    identity = context.require_execute_identity()
    assert (identity.tool_call_id, identity.operation_ordinal) == ("t-1", 3)
