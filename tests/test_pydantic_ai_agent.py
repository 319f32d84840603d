"""A pydantic-ai agent using a Mycelium app, driven offline by a scripted FunctionModel.

The model reads the execute tool's description, writes a program that searches the
catalog, adds notes concurrently and deletes one (a confirm operation), and the person
approves or denies the delete through pydantic-ai's own deferred-tool approval. The notes
live in a SQLite file whose journal counts what ran: each write happens exactly once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
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

from mycelium import MemorySuspensions, Module, Runtime
from mycelium.integrations.pydantic_ai import MyceliumToolset
from mycelium.sandbox.monty import MontySandbox
from suspend_worker import Crm, host

PROGRAM = """
import asyncio
found = await forage.search("add a note")
made = await asyncio.gather(crm.create(title="one"), crm.create(title="two"), crm.create(title="three"))
print("found", found[0]["path"])
gone = await crm.delete(id=made[1]["id"])
last = await crm.create(title="four")
return {"made": made, "gone": gone, "last": last}
"""


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


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[tuple[Runtime, Crm]]:
    crm = Crm(tmp_path / "crm.sqlite")
    runtime = host(crm, MemorySuspensions())
    yield runtime, crm
    with anyio.fail_after(10):  # every lease was released: close() does not wait
        await runtime.close()


def agent_for(runtime: Runtime, model: ScriptedModel) -> Agent[None, str | DeferredToolRequests]:
    return Agent(FunctionModel(model), toolsets=[MyceliumToolset(runtime)], output_type=[str, DeferredToolRequests])


async def test_an_approved_delete_resumes_the_program_and_every_write_happens_once(
    runtime: tuple[Runtime, Crm],
) -> None:
    app, crm = runtime
    model = ScriptedModel(PROGRAM)
    agent = agent_for(app, model)

    first = await agent.run("tidy my notes")
    assert isinstance(first.output, DeferredToolRequests)
    (request,) = first.output.approvals
    pending = first.output.metadata[request.tool_call_id]
    two = crm.titles().index("two") + 1  # the creates ran concurrently: "two" has whichever id it got
    assert (pending["path"], pending["arguments"]) == ("crm.delete", {"id": two})
    assert sorted(crm.titles()) == ["one", "three", "two"]  # the program stopped at the delete

    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: True}),
    )

    assert f'"gone":{{"deleted":{two}}},"last":{{"id":4}}}}' in second.output
    assert "Printed:\nfound crm.create" in second.output  # the model reads the output beside the value
    assert "forage.search" in model.described[0]  # the model was told how to discover operations
    ran = [entry[:2] for entry in crm.journal()]
    assert sorted(ran[:3]) == [("create", "one"), ("create", "three"), ("create", "two")]
    assert ran[3:] == [("delete", str(two)), ("create", "four")]


async def test_a_denied_delete_never_runs_and_nothing_after_it_runs(runtime: tuple[Runtime, Crm]) -> None:
    app, crm = runtime
    agent = agent_for(app, ScriptedModel(PROGRAM))

    first = await agent.run("tidy my notes")
    assert isinstance(first.output, DeferredToolRequests)
    (request,) = first.output.approvals
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: ToolDenied("not that one")}),
    )

    assert second.output == "not that one"
    assert crm.ran("delete") == 0
    assert sorted(crm.titles()) == ["one", "three", "two"]


async def test_a_program_the_model_can_fix_goes_back_to_it_as_a_retry(runtime: tuple[Runtime, Crm]) -> None:
    app, crm = runtime
    model = ScriptedModel("return (", "raise ValueError('still wrong')", "return await crm.create(title='fixed')")
    agent = Agent(FunctionModel(model), toolsets=[MyceliumToolset(app, max_retries=2)])

    result = await agent.run("add a note")

    assert "syntax error" in model.seen[0]
    assert "ValueError: still wrong" in model.seen[1]
    assert result.output == '{"id":1}'
    assert crm.titles() == ["fixed"]


async def test_a_failure_past_the_retry_budget_is_a_tool_result_not_a_crash(runtime: tuple[Runtime, Crm]) -> None:
    app, _ = runtime
    model = ScriptedModel("return (", "return (")
    agent = Agent(FunctionModel(model), toolsets=[MyceliumToolset(app, max_retries=1)])

    result = await agent.run("add a note")

    assert "syntax error" in result.output


async def test_the_runs_lease_is_released_when_the_model_fails(runtime: tuple[Runtime, Crm]) -> None:
    app, _ = runtime
    model = ScriptedModel("return await crm.create(title='one')")

    def failing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:  # after the tool ran, the model itself breaks
            raise RuntimeError("the model broke")
        return model(messages, info)

    agent = Agent(FunctionModel(failing), toolsets=[MyceliumToolset(app)])
    with pytest.raises(RuntimeError, match="the model broke"):
        await agent.run("add a note")
    # The fixture closes the runtime, which waits for every lease: it returns at once.


async def test_the_runs_lease_is_released_when_the_run_is_cancelled() -> None:
    started = anyio.Event()
    hang = Module(id="hang", name="hang")

    @hang.operation(access="read")
    async def forever() -> int:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()
        return 0

    extra = Runtime(modules=[hang], sandbox=MontySandbox())  # closing it closes its sandbox
    agent = Agent(FunctionModel(ScriptedModel("return await hang.forever()")), toolsets=[MyceliumToolset(extra)])
    async with anyio.create_task_group() as group:
        group.start_soon(agent.run, "wait")
        await started.wait()
        group.cancel_scope.cancel()
    with anyio.fail_after(10):
        await extra.close()
