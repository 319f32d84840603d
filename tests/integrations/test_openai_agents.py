"""An OpenAI Agents SDK agent using a Mycelium app, driven offline by a scripted model.

The scenario is :mod:`frameworks.scenario`'s; the person approves or rejects the delete
through the SDK's own interruptions (``result.interruptions``, ``RunState.approve``).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    Model,
    ModelResponse,
    ModelSettings,
    Runner,
    RunResult,
    RunState,
    Tool,
    Usage,
    set_tracing_disabled,
)
from agents.items import TResponseInputItem, TResponseStreamEvent
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from mycelium import Runtime, SqliteSuspensions
from mycelium.failures import SuspensionFailed
from mycelium.integrations.openai_agents import MyceliumTools
from mycelium.sandbox.monty import MontySandbox
from tests.integrations.scenario import HANG, PROGRAM, SECRET, App, assert_released_on_cancel, mail
from tests.support.suspend_worker import Crm, host

set_tracing_disabled(True)

TWO_CONFIRMS = """
import asyncio
made = await asyncio.gather(crm.create(title="one"), crm.create(title="two"), crm.create(title="three"))
first = await crm.delete(id=made[0]["id"])
second = await crm.delete(id=made[2]["id"])
return {"first": first, "second": second, "last": await crm.create(title="four")}
"""
"""Two deletes in one program: the person approves (or rejects) each on its own."""

_RESUME_CALL = re.compile(r'call resume with \{"suspension_id": "([^"]+)"\}')


class ScriptedModel(Model):
    """A model that writes the given programs in turn (and calls ``resume`` when a program asks it
    to), then answers with the last tool output it read."""

    def __init__(self, *programs: str | tuple[str, ...]) -> None:
        self.programs = list(programs)  # a tuple is several execute calls in one response
        self.seen: list[str] = []  # every tool output the model read, in order
        self.described: dict[str, str] = {}
        self.calls = 0

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.described = {tool.name: getattr(tool, "description", "") for tool in tools}
        items = [] if isinstance(input, str) else input
        self.seen = [str(item["output"]) for item in items if item.get("type") == "function_call_output"]
        answered = bool(items) and items[-1].get("type") == "function_call_output"
        self.calls += 1
        call_id = f"call-{self.calls}"
        paused = _RESUME_CALL.search(self.seen[-1]) if answered else None
        if paused is not None:
            return _response(_call(call_id, "resume", {"suspension_id": paused.group(1)}))
        if self.programs and (answered or not self.seen):
            program = self.programs.pop(0)
            codes = program if isinstance(program, tuple) else (program,)
            return _response(*(_call(f"{call_id}-{n}", "execute", {"code": code}) for n, code in enumerate(codes)))
        text = self.seen[-1] if self.seen else "nothing"
        content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
        return _response(
            ResponseOutputMessage(id="answer", type="message", role="assistant", status="completed", content=content)
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("these tests never stream")


def _call(call_id: str, name: str, arguments: dict[str, str]) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", id=f"fc-{call_id}", call_id=call_id, name=name, arguments=json.dumps(arguments)
    )


def _response(*items: ResponseFunctionToolCall | ResponseOutputMessage) -> ModelResponse:
    return ModelResponse(output=list(items), usage=Usage(), response_id=None)


def agent_for(mycelium: MyceliumTools, model: ScriptedModel) -> Agent[None]:
    return Agent(name="notes", model=model, tools=mycelium.tools)


async def approve_each(mycelium: MyceliumTools, agent: Agent[None], result: RunResult) -> list[Any]:
    """Approve every interruption until the run finishes: what the person was shown each time, then the answer."""
    shown = []
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            pending = await mycelium.pending(item)
            assert pending is not None
            shown.append((pending.path, pending.arguments))
            state.approve(item)
        result = await Runner.run(agent, state)
    shown.append(result.final_output)
    return shown


async def test_an_approved_delete_resumes_the_program_and_every_write_happens_once(app: App) -> None:
    model = ScriptedModel(PROGRAM)
    mycelium = MyceliumTools(app.runtime)
    async with mycelium:
        agent = agent_for(mycelium, model)
        first = await Runner.run(agent, "tidy my notes")
    app.assert_released()  # the person decides while no lease is held
    (item,) = first.interruptions
    pending = await mycelium.pending(item)
    assert pending is not None
    assert (pending.path, pending.arguments) == ("crm.delete", app.pending_delete())

    state = first.to_state()
    state.approve(item)
    async with mycelium:  # as a later request would: the state resumes the agent that made it
        second = await Runner.run(agent, state)

    assert f'"gone":{{"deleted":{pending.arguments["id"]}}},"last":{{"id":4}}}}' in second.final_output
    # The model reads the output beside the value, and the failed operation as the guest saw it.
    assert "Printed:\nfound crm.create\nmail failed: RuntimeError" in second.final_output
    assert SECRET not in "".join(model.seen)
    assert "forage.search" in model.described["execute"]  # the model was told how to discover operations
    app.assert_ran_once_each(approved=True)
    app.assert_released()


async def test_a_rejected_delete_never_runs_and_cannot_be_approved_later(app: App) -> None:
    async with MyceliumTools(app.runtime) as mycelium:
        agent = agent_for(mycelium, ScriptedModel(PROGRAM))
        first = await Runner.run(agent, "tidy my notes")
        (item,) = first.interruptions
        pending = await mycelium.pending(item)
        assert pending is not None
        state = first.to_state()
        await mycelium.reject(state, item, rejection_message="not that one")
        second = await Runner.run(agent, state)

    assert second.final_output == "not that one"
    late = await app.runtime.resume(pending.id, approved=True)
    assert late.failure == SuspensionFailed(suspension_id=pending.id, reason="decided-otherwise")
    app.assert_ran_once_each(approved=False)
    app.assert_released()


async def test_a_program_with_two_confirms_asks_the_person_for_each_and_runs_every_write_once(app: App) -> None:
    model = ScriptedModel(TWO_CONFIRMS)
    async with MyceliumTools(app.runtime) as mycelium:
        agent = agent_for(mycelium, model)
        first = await Runner.run(agent, "tidy my notes")
        ids = {title: number for number, title in enumerate(app.crm.titles(), start=1)}
        shown = await approve_each(mycelium, agent, first)

    delete_one, delete_three, answer = shown
    assert delete_one == ("crm.delete", {"id": ids["one"]})
    assert delete_three == ("crm.delete", {"id": ids["three"]})
    assert f'"first":{{"deleted":{ids["one"]}}},"second":{{"deleted":{ids["three"]}}}' in answer
    assert any("Paused for approval: crm.delete" in output for output in model.seen)  # why it called resume
    ran = [entry[:2] for entry in app.crm.journal()]
    assert sorted(ran[:3]) == [("create", "one"), ("create", "three"), ("create", "two")]
    assert ran[3:] == [("delete", str(ids["one"])), ("delete", str(ids["three"])), ("create", "four")]
    app.assert_released()


async def test_a_program_that_finished_beside_a_paused_one_does_not_run_again_on_approval(app: App) -> None:
    model = ScriptedModel(("return await crm.create(title='beside')", PROGRAM))
    async with MyceliumTools(app.runtime) as mycelium:
        agent = agent_for(mycelium, model)
        first = await Runner.run(agent, "tidy my notes")
        (item,) = first.interruptions  # only the paused program asks the person
        assert json.loads(item.raw_item.arguments)["code"] == PROGRAM
        *_, answer = await approve_each(mycelium, agent, first)

    assert '"last":{"id":5}' in answer
    assert sorted(app.crm.titles()) == ["beside", "four", "one", "three"]
    assert (app.crm.ran("create"), app.crm.ran("delete")) == (5, 1)
    app.assert_released()


async def test_a_rejected_second_confirm_never_runs_nor_anything_after_it(app: App) -> None:
    model = ScriptedModel(TWO_CONFIRMS)
    async with MyceliumTools(app.runtime) as mycelium:
        agent = agent_for(mycelium, model)
        first = await Runner.run(agent, "tidy my notes")
        state = first.to_state()
        state.approve(first.interruptions[0])
        second = await Runner.run(agent, state)
        (item,) = second.interruptions
        assert item.name == "resume"
        state = second.to_state()
        await mycelium.reject(state, item, rejection_message="keep three")
        third = await Runner.run(agent, state)

    assert third.final_output == "keep three"
    assert sorted(app.crm.titles()) == ["three", "two"]
    assert (app.crm.ran("create"), app.crm.ran("delete")) == (3, 1)
    app.assert_released()


async def test_a_run_state_saved_as_json_is_approved_in_another_runtime_sharing_the_store(tmp_path: Path) -> None:
    crm = Crm(tmp_path / "crm.sqlite")
    stores = [SqliteSuspensions(tmp_path / "suspensions.sqlite") for _ in range(2)]
    try:
        async with host(crm, stores[0], extra=[mail()]) as runtime, MyceliumTools(runtime) as mycelium:
            first = await Runner.run(agent_for(mycelium, ScriptedModel(PROGRAM)), "tidy my notes")
            saved = json.dumps(first.to_state().to_json())

        # Another process: a new runtime on the same notes and suspension store, a new agent.
        async with host(crm, stores[1], extra=[mail()]) as runtime, MyceliumTools(runtime) as mycelium:
            agent = agent_for(mycelium, ScriptedModel())
            state = await RunState.from_json(agent, json.loads(saved))
            (item,) = state.get_interruptions()
            pending = await mycelium.pending(item)
            assert pending is not None
            assert pending.path == "crm.delete"
            state.approve(item)
            second = await Runner.run(agent, state)
    finally:
        for store in stores:
            await store.aclose()

    assert f'"gone":{{"deleted":{pending.arguments["id"]}}}' in second.final_output
    App(runtime, crm).assert_ran_once_each(approved=True)


async def test_a_program_the_model_can_fix_is_answered_so_that_it_tries_again(app: App) -> None:
    model = ScriptedModel("return (", "raise ValueError('still wrong')", "return await crm.create(title='fixed')")
    async with MyceliumTools(app.runtime) as mycelium:
        result = await Runner.run(agent_for(mycelium, model), "add a note")

    assert "syntax error" in model.seen[0]
    assert "ValueError: still wrong" in model.seen[1]
    assert result.final_output == '{"id":1}'
    assert app.crm.titles() == ["fixed"]


async def test_failures_are_tool_output_however_many_come_in_a_row(app: App) -> None:
    failing = ["return ("] * 6 + ["return await mail.send(to='team')"]
    model = ScriptedModel(*failing)
    async with MyceliumTools(app.runtime) as mycelium:
        result = await Runner.run(agent_for(mycelium, model), "send the notes", max_turns=len(failing) + 1)

    assert all("syntax error" in output for output in model.seen[:6])
    assert "mail.send failed on the host" in result.final_output  # a host failure too, without its detail
    assert SECRET not in result.final_output


async def test_the_blocks_lease_is_released_when_the_model_fails(app: App) -> None:
    class Breaking(ScriptedModel):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            if self.calls:  # after the tool ran, the model itself breaks
                raise RuntimeError("the model broke")
            return await super().get_response(*args, **kwargs)

    with pytest.raises(RuntimeError, match="the model broke"):
        async with MyceliumTools(app.runtime) as mycelium:
            await Runner.run(agent_for(mycelium, Breaking("return await crm.create(title='one')")), "add a note")
    assert app.crm.titles() == ["one"]
    app.assert_released()


async def test_the_blocks_lease_is_released_when_the_run_is_cancelled() -> None:
    async def run(runtime: Runtime) -> None:
        async with MyceliumTools(runtime) as mycelium:
            await Runner.run(agent_for(mycelium, ScriptedModel(HANG)), "wait")

    await assert_released_on_cancel(run)


async def test_resume_is_offered_only_when_a_program_can_pause(app: App) -> None:
    async with MyceliumTools(app.runtime) as mycelium:
        assert [tool.name for tool in mycelium.tools] == ["execute", "resume"]
    plain = Runtime(modules=[mail()], sandbox=MontySandbox())
    async with plain, MyceliumTools(plain) as mycelium:
        assert [tool.name for tool in mycelium.tools] == ["execute"]


async def test_the_tools_are_refused_outside_their_block_and_bad_arguments_are_named(app: App) -> None:
    mycelium = MyceliumTools(app.runtime)
    with pytest.raises(RuntimeError, match="outside its block"):
        agent_for(mycelium, ScriptedModel())
    with pytest.raises(ValueError, match="needs a Runtime, got str"):
        MyceliumTools("runtime")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="session must be a Session"):
        MyceliumTools(app.runtime, session="me")  # type: ignore[arg-type]
