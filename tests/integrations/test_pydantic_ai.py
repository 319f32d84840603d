"""A pydantic-ai agent using a Mycelium app, driven offline by a scripted FunctionModel.

The scenario is :mod:`frameworks.scenario`'s; the person approves or denies the delete
through pydantic-ai's own deferred-tool approval.
"""

from __future__ import annotations

import json

import pytest
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from mycelium import Runtime, direct_tool
from mycelium.integrations.pydantic_ai import MyceliumToolset
from mycelium.sandbox.monty import MontySandbox
from tests.integrations.scenario import HANG, PROGRAM, SECRET, App, assert_released_on_cancel


class ScriptedModel:
    """A model that writes the given programs in turn, then repeats the last tool result as its answer."""

    def __init__(self, *programs: str) -> None:
        self.programs = list(programs)
        self.seen: list[str] = []  # what the model read back: tool results and retry prompts
        self.described: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.described = [tool.description or "" for tool in info.function_tools]
        last = messages[-1]
        if isinstance(last, ModelRequest):
            for part in last.parts:
                if isinstance(part, ToolReturnPart | RetryPromptPart):
                    self.seen.append(str(part.content if isinstance(part, ToolReturnPart) else part.model_response()))
        answered = isinstance(last.parts[-1], ToolReturnPart) and last.parts[-1].outcome != "retried"
        if self.programs and not answered:
            code = self.programs.pop(0)
            return ModelResponse(parts=[ToolCallPart("execute", {"code": code}, tool_call_id=f"call-{len(self.seen)}")])
        return ModelResponse(parts=[TextPart(self.seen[-1] if self.seen else "nothing")])


def agent_for(runtime: Runtime, model: ScriptedModel) -> Agent[None, str | DeferredToolRequests]:
    return Agent(FunctionModel(model), toolsets=[MyceliumToolset(runtime)], output_type=[str, DeferredToolRequests])


async def test_an_approved_delete_resumes_the_program_and_every_write_happens_once(app: App) -> None:
    model = ScriptedModel(PROGRAM)
    agent = agent_for(app.runtime, model)

    first = await agent.run("tidy my notes")
    assert isinstance(first.output, DeferredToolRequests)
    (request,) = first.output.approvals
    pending = first.output.metadata[request.tool_call_id]
    assert (pending["path"], pending["arguments"]) == ("crm.delete", app.pending_delete())
    app.assert_released()  # the paused run holds no lease while the person decides

    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={request.tool_call_id: True}, metadata=first.output.metadata
        ),
    )

    assert f'"gone":{{"deleted":{pending["arguments"]["id"]}}},"last":{{"id":4}}}}' in second.output
    # The model reads the output beside the value, and the failed operation as the guest saw it.
    assert "Printed:\nfound crm.create\nmail failed: RuntimeError" in second.output
    assert SECRET not in "".join(model.seen)
    assert "forage.search" in model.described[0]  # the model was told how to discover operations
    app.assert_ran_once_each(approved=True)
    app.assert_released()


async def test_a_denied_delete_never_runs_and_nothing_after_it_runs(app: App) -> None:
    agent = agent_for(app.runtime, ScriptedModel(PROGRAM))

    first = await agent.run("tidy my notes")
    assert isinstance(first.output, DeferredToolRequests)
    (request,) = first.output.approvals
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={request.tool_call_id: ToolDenied("not that one")}, metadata=first.output.metadata
        ),
    )

    assert second.output == "not that one"
    app.assert_ran_once_each(approved=False)
    app.assert_released()


async def test_a_program_the_model_can_fix_goes_back_to_it_as_a_retry(app: App) -> None:
    model = ScriptedModel("return (", "raise ValueError('still wrong')", "return await crm.create(title='fixed')")
    agent = Agent(FunctionModel(model), toolsets=[MyceliumToolset(app.runtime, max_retries=2)])

    result = await agent.run("add a note")

    assert "syntax error" in model.seen[0]
    assert "ValueError: still wrong" in model.seen[1]
    assert result.output == '{"id":1}'
    assert app.crm.titles() == ["fixed"]


async def test_a_failure_past_the_retry_budget_is_a_tool_result_not_a_crash(app: App) -> None:
    model = ScriptedModel("return (", "return (")
    agent = Agent(FunctionModel(model), toolsets=[MyceliumToolset(app.runtime, max_retries=1)])

    result = await agent.run("add a note")

    assert "syntax error" in result.output


async def test_the_runs_lease_is_released_when_the_model_fails(app: App) -> None:
    model = ScriptedModel("return await crm.create(title='one')")

    def failing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:  # after the tool ran, the model itself breaks
            raise RuntimeError("the model broke")
        return model(messages, info)

    agent = Agent(FunctionModel(failing), toolsets=[MyceliumToolset(app.runtime)])
    with pytest.raises(RuntimeError, match="the model broke"):
        await agent.run("add a note")
    app.assert_released()


async def test_the_runs_lease_is_released_when_the_run_is_cancelled() -> None:
    async def run(runtime: Runtime) -> None:
        await Agent(FunctionModel(ScriptedModel(HANG)), toolsets=[MyceliumToolset(runtime)]).run("wait")

    await assert_released_on_cancel(run)


async def test_the_hosts_direct_tools_are_offered_beside_execute_and_called_by_the_model() -> None:
    def clock() -> str:
        return "09:30"

    extra = Runtime(
        tools=[direct_tool(name="now", description="The time on the host.", output=str, execute=clock, access="read")],
        sandbox=MontySandbox(),
    )
    offered: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered[:] = [tool.name for tool in info.function_tools]
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(str(last.content))])
        return ModelResponse(parts=[ToolCallPart("now", {}, tool_call_id="call-now")])

    async with extra:
        result = await Agent(FunctionModel(model), toolsets=[MyceliumToolset(extra)]).run("what time is it?")
    assert offered == ["execute", "now"]
    assert result.output == '"09:30"'


TWO_DELETES = """
one = await crm.create(title="one")
two = await crm.create(title="two")
return [await crm.delete(id=one["id"]), await crm.delete(id=two["id"])]
"""


async def test_each_pause_of_one_program_is_approved_on_its_own_and_each_write_happens_once(app: App) -> None:
    agent = agent_for(app.runtime, ScriptedModel(TWO_DELETES))
    result = await agent.run("delete both")
    shown = []
    while isinstance(result.output, DeferredToolRequests):
        (request,) = result.output.approvals
        shown.append(result.output.metadata[request.tool_call_id]["arguments"])
        answer = DeferredToolResults(approvals={request.tool_call_id: True}, metadata=result.output.metadata)
        result = await agent.run(message_history=result.all_messages(), deferred_tool_results=answer)

    assert shown == [{"id": 1}, {"id": 2}]
    assert result.output == '[{"deleted":1},{"deleted":2}]'
    assert [entry[:2] for entry in app.crm.journal()] == [
        ("create", "one"),
        ("create", "two"),
        ("delete", "1"),
        ("delete", "2"),
    ]


async def test_an_approval_that_does_not_name_its_pause_is_refused_and_runs_nothing(app: App) -> None:
    agent = agent_for(app.runtime, ScriptedModel(PROGRAM))
    first = await agent.run("tidy my notes")
    assert isinstance(first.output, DeferredToolRequests)
    (request,) = first.output.approvals

    with pytest.raises(UserError, match=r"metadata=requests\.metadata"):
        await agent.run(
            message_history=first.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: True}),
        )
    assert app.crm.ran("delete") == 0
    app.assert_released()


async def test_pydantic_ais_schema_driven_test_model_sends_a_program_that_runs(app: App) -> None:
    # TestModel fills the execute schema from its examples: a program valid in any catalog.
    agent = Agent(TestModel(), toolsets=[MyceliumToolset(app.runtime)])
    answer = await agent.run("What can you do?")
    [call] = [part for message in answer.all_messages() for part in message.parts if isinstance(part, ToolReturnPart)]
    assert isinstance(json.loads(str(call.content)), list)  # forage.search's ranked entries, not a failure
