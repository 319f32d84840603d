"""Red team: the agent-framework adapters attacked by a hostile model and a careless host.

The model writes the programs and the tool-call arguments (ids included, through scripted
models of each framework); the host approves, retries, shares and re-enters as a careless
one might. Each test is named after the rule it checks. The host is the frameworks' one
(:mod:`frameworks.scenario`): notes in a SQLite file whose journal records every write, a
``delete`` a person confirms, every confirmation deferred to the person.
"""

from __future__ import annotations

import gc
import json
import warnings
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import Agent as OpenAIAgent
from agents import RunContextWrapper, RunHooks, Runner, RunState, Tool
from anyio.abc import TaskStatus
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from openai.types.responses import ResponseFunctionToolCall
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mycelium import Acquired, MemorySuspensions, Runtime, Session, StoredSuspension, source
from mycelium._sources import AcquireContext
from mycelium.integrations.langchain import mycelium_tool
from mycelium.integrations.openai_agents import MyceliumTools
from mycelium.integrations.pydantic_ai import MyceliumToolset
from mycelium.sandbox.monty import MontySandbox
from tests.integrations.scenario import App, hosted
from tests.integrations.test_langchain import CONFIG, ask
from tests.integrations.test_langchain import ScriptedModel as ScriptedChatModel
from tests.integrations.test_langchain import answer as approve_the_interrupt
from tests.integrations.test_openai_agents import ScriptedModel as ScriptedOpenAIModel
from tests.integrations.test_openai_agents import _call, _response, agent_for
from tests.support.suspend_worker import Crm
from tests.support.suspend_worker import host as crm_host

TWO_DELETES = """
a = await crm.create(title="a")
b = await crm.create(title="b")
return [await crm.delete(id=a["id"]), await crm.delete(id=b["id"])]
"""
"""Two confirmations in one program: the person decides each on its own."""

THREE_DELETES = """
a = await crm.create(title="a")
b = await crm.create(title="b")
c = await crm.create(title="c")
return [await crm.delete(id=a["id"]), await crm.delete(id=b["id"]), await crm.delete(id=c["id"])]
"""

DSN_SECRET = "postgres://admin:hunter2@db.internal:5432/suspensions"
"""What the failing store says about itself: the host's, never the model's to read."""


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[App]:
    """The frameworks' shared host for one test."""
    async with hosted(tmp_path) as held:
        yield held


def deletes(app: App) -> list[str]:
    """The ids of the notes a delete ran for, in order."""
    return [arg for op, arg, *_ in app.crm.journal() if op == "delete"]


# pydantic-ai


def calls_then_answers(*parts: ToolCallPart) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """A pydantic-ai model that makes ``parts`` once, then answers with the last tool result it read."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=list(parts))
        last = messages[-1].parts[-1]
        return ModelResponse(parts=[TextPart(str(getattr(last, "content", "nothing")))])

    return respond


def pydantic_agent(toolset: MyceliumToolset, *parts: ToolCallPart) -> Agent[None, str | DeferredToolRequests]:
    return Agent(FunctionModel(calls_then_answers(*parts)), toolsets=[toolset], output_type=[str, DeferredToolRequests])


async def test_pydantic_ai_an_approval_delivered_twice_approves_only_the_call_the_person_saw(app: App) -> None:
    agent = pydantic_agent(MyceliumToolset(app.runtime), ToolCallPart("execute", {"code": TWO_DELETES}, "c1"))
    first = await agent.run("delete both")
    assert isinstance(first.output, DeferredToolRequests)
    seen = first.output.metadata["c1"]["arguments"]
    # The host approves what the person saw, echoing what pydantic-ai asked with.
    approval = DeferredToolResults(approvals={"c1": True}, metadata=first.output.metadata)

    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=approval)
    assert isinstance(second.output, DeferredToolRequests)  # the program paused again, at the other delete
    # The same approval arrives once more (a retried request, a double click).
    await agent.run(message_history=first.all_messages(), deferred_tool_results=approval)

    assert deletes(app) == [str(seen["id"])], "a second delete ran that no person approved"
    app.assert_released()


@pytest.mark.parametrize("how", ["forged", "other code", "override_args"])
async def test_pydantic_ai_an_approval_runs_only_the_program_that_paused(app: App, how: str) -> None:
    """An approval for a call that never paused, or for other code than the paused call's, runs nothing."""
    paused_code = "return await crm.delete(id=1)"
    other_code = "return await crm.delete(id=2)"
    agent = pydantic_agent(MyceliumToolset(app.runtime), ToolCallPart("execute", {"code": paused_code}, "c1"))
    if how == "forged":
        # A history that names a call nothing ever ran, as someone who can edit the stored history could write.
        history: list[ModelMessage] = [
            ModelRequest(parts=[UserPromptPart("tidy")]),
            ModelResponse(parts=[ToolCallPart("execute", {"code": paused_code}, "never-ran")]),
        ]
        approvals: dict[str, bool | ToolApproved] = {"never-ran": True}
        metadata = {"never-ran": {"suspension_id": "a-suspension-nobody-made"}}
        paused = None
    else:
        first = await agent.run("delete one")
        assert isinstance(first.output, DeferredToolRequests)
        paused = first.output.metadata["c1"]["suspension_id"]
        metadata = first.output.metadata
        history = first.all_messages()
        if how == "other code":  # the stored history is edited between the pause and the approval
            history[-1] = ModelResponse(parts=[ToolCallPart("execute", {"code": other_code}, "c1")])
            approvals = {"c1": True}
        else:
            approvals = {"c1": ToolApproved(override_args={"code": other_code})}

    result = await agent.run(
        message_history=history, deferred_tool_results=DeferredToolResults(approvals=approvals, metadata=metadata)
    )

    assert isinstance(result.output, str)
    assert "cannot continue" in result.output
    assert deletes(app) == []
    if paused is not None:
        assert await app.runtime.suspension(paused) is not None  # the call the person saw still waits for them
    app.assert_released()


async def test_pydantic_ai_an_approval_delivered_to_another_sessions_agent_runs_nothing(app: App) -> None:
    code = "return await crm.delete(id=1)"
    mine = pydantic_agent(
        MyceliumToolset(app.runtime, session=Session("mine")), ToolCallPart("execute", {"code": code}, "c1")
    )
    first = await mine.run("delete one")
    assert isinstance(first.output, DeferredToolRequests)
    theirs = pydantic_agent(MyceliumToolset(app.runtime, session=Session("theirs")))

    approval = DeferredToolResults(approvals={"c1": True}, metadata=first.output.metadata)
    result = await theirs.run(message_history=first.all_messages(), deferred_tool_results=approval)

    assert isinstance(result.output, str)
    assert "cannot continue" in result.output
    assert deletes(app) == []
    pending = first.output.metadata["c1"]["suspension_id"]
    assert await app.runtime.suspension(pending, session=Session("mine")) is not None  # still the owner's to decide


@pytest.mark.parametrize("arguments", ["not json", "[1, 2]"])
@pytest.mark.parametrize("max_retries", [0, 2])
async def test_pydantic_ai_malformed_arguments_never_end_the_agent_run(
    app: App, arguments: str, max_retries: int
) -> None:
    read: list[str] = []

    def stubborn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """A model that sends the same malformed arguments until it is answered without a retry."""
        last = messages[-1].parts[-1]
        if isinstance(last, RetryPromptPart | ToolReturnPart):
            read.append(str(last.model_response() if isinstance(last, RetryPromptPart) else last.content))
        if isinstance(last, ToolReturnPart) and last.outcome != "retried":
            return ModelResponse(parts=[TextPart(read[-1])])
        return ModelResponse(parts=[ToolCallPart("execute", arguments, f"c{len(messages)}")])

    agent = Agent(FunctionModel(stubborn), toolsets=[MyceliumToolset(app.runtime, max_retries=max_retries)])

    result = await agent.run("add a note")

    assert result.output == read[-1]
    assert app.crm.journal() == []
    app.assert_released()


# OpenAI Agents SDK


async def approve_every_interruption(
    mycelium: MyceliumTools, agent: OpenAIAgent[None], result: Any, *, always_resume: bool = False
) -> list[Any]:
    """Approve each interruption as the person would, showing them ``pending(item)``; what they were shown."""
    shown = []
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            pending = await mycelium.pending(item)
            assert pending is not None
            shown.append(pending.arguments)
            state.approve(item, always_approve=always_resume and item.name == "resume")
        result = await Runner.run(agent, state)
    return shown


async def test_openai_agents_a_run_state_approved_twice_approves_only_the_call_the_person_saw(app: App) -> None:
    async with MyceliumTools(app.runtime) as mycelium:
        agent = agent_for(mycelium, ScriptedOpenAIModel(TWO_DELETES))
        first = await Runner.run(agent, "delete both")
        (item,) = first.interruptions
        seen = await mycelium.pending(item)
        assert seen is not None
        state = first.to_state()
        state.approve(item)
        saved = state.to_json()

        second = await Runner.run(agent, state)
        assert [paused.name for paused in second.interruptions] == ["resume"]  # the other delete waits
        # The host runs the saved, approved state once more (a retried request).
        await Runner.run(agent, await RunState.from_json(agent, saved))

    assert isinstance(seen.arguments, dict)
    assert deletes(app) == [str(seen.arguments["id"])], "a second delete ran that no person approved"
    app.assert_released()


async def test_openai_agents_always_approving_resume_never_runs_a_call_the_person_was_not_shown(app: App) -> None:
    async with MyceliumTools(app.runtime) as mycelium:
        agent = agent_for(mycelium, ScriptedOpenAIModel(THREE_DELETES))
        first = await Runner.run(agent, "delete all three")
        shown = await approve_every_interruption(mycelium, agent, first, always_resume=True)

    ran = [{"id": int(note)} for note in deletes(app)]
    assert [call for call in ran if call not in shown] == [], f"shown {shown}, ran {ran}"


async def test_openai_agents_a_paused_run_state_for_changed_code_shows_the_person_nothing(app: App) -> None:
    paused = "return await crm.delete(id=1)"
    async with MyceliumTools(app.runtime) as mycelium:
        agent = agent_for(mycelium, ScriptedOpenAIModel(paused))
        first = await Runner.run(agent, "delete one")
        (item,) = first.interruptions
        suspension = await mycelium.pending(item)
        assert suspension is not None
        # Someone who can edit the saved state changes the program the person is about to approve.
        text = json.dumps(first.to_state().to_json())
        changed = text.replace(json.dumps(paused)[1:-1], json.dumps("return await crm.delete(id=2)")[1:-1])
        (edited,) = (await RunState.from_json(agent, json.loads(changed))).get_interruptions()

        assert await mycelium.pending(edited) is None
    assert deletes(app) == []
    assert await app.runtime.suspension(suspension.id) == suspension


async def test_openai_agents_resume_with_another_sessions_suspension_asks_nobody_and_runs_nothing(app: App) -> None:
    async with app.runtime.lease(session=Session("mine")) as lease:
        paused = await lease.execute_tool.run("return await crm.delete(id=1)", tool_call_id="t1")
    suspension = paused.suspension
    assert suspension is not None

    class Resumer(ScriptedOpenAIModel):
        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            if not self.calls:
                self.calls += 1
                return _response(_call("r1", "resume", {"suspension_id": suspension.id}))
            return await super().get_response(*args, **kwargs)

    model = Resumer()
    async with MyceliumTools(app.runtime, session=Session("theirs")) as mycelium:
        result = await Runner.run(agent_for(mycelium, model), "resume it")

    assert result.interruptions == []
    assert "cannot continue" in result.final_output
    assert deletes(app) == []
    assert await app.runtime.suspension(suspension.id, session=Session("mine")) == suspension


@pytest.mark.parametrize("tool", ["execute", "resume"])
@pytest.mark.parametrize("arguments", ["not json", "[1]", "null"])
async def test_openai_agents_a_malformed_call_runs_nothing_however_the_person_answers(
    app: App, tool: str, arguments: str
) -> None:
    class Malformed(ScriptedOpenAIModel):
        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            if not self.calls:
                self.calls += 1
                call = ResponseFunctionToolCall(
                    type="function_call", id="fc-m", call_id="m1", name=tool, arguments=arguments
                )
                return _response(call)
            return await super().get_response(*args, **kwargs)

    model = Malformed()
    async with MyceliumTools(app.runtime) as mycelium:
        agent = agent_for(mycelium, model)
        result = await Runner.run(agent, "go")
        for item in result.interruptions:  # the SDK asks a person about arguments it cannot read
            assert await mycelium.pending(item) is None  # there is nothing to show them
            state = result.to_state()
            state.approve(item)
            result = await Runner.run(agent, state)

    assert "malformed" in result.final_output
    assert app.crm.journal() == []


class _Ordered(RunHooks[Any]):
    """Tool-start hooks that order two concurrent runs: ``before`` is set, then ``after`` is awaited."""

    def __init__(self, before: anyio.Event, after: anyio.Event | None) -> None:
        self.before = before
        self.after = after

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: OpenAIAgent[Any], tool: Tool) -> None:
        self.before.set()
        if self.after is not None:
            await self.after.wait()


async def test_openai_agents_runs_sharing_a_block_never_run_a_program_twice_nor_read_each_others_result(
    app: App,
) -> None:
    class OneCall(ScriptedOpenAIModel):
        """A model whose provider numbers tool calls per response, as some do: its first is ``call_0``."""

        def __init__(self, code: str) -> None:
            super().__init__()
            self.code = code

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            if not self.calls:
                self.calls += 1
                return _response(_call("call_0", "execute", {"code": self.code}))
            return await super().get_response(*args, **kwargs)

    first_checked, second_started = anyio.Event(), anyio.Event()
    outputs: dict[str, str] = {}
    async with MyceliumTools(app.runtime) as mycelium:

        async def run(title: str, hooks: RunHooks[Any]) -> None:
            model = OneCall(f"return await crm.create(title={title!r})")
            result = await Runner.run(OpenAIAgent(name=title, model=model, tools=mycelium.tools), "add", hooks=hooks)
            outputs[title] = result.final_output

        async with anyio.create_task_group() as group:
            # The first run's program finishes in the SDK's approval check, then the second's does,
            # before the SDK asks the first run's tool for its result.
            group.start_soon(run, "first", _Ordered(first_checked, second_started))
            await first_checked.wait()
            group.start_soon(run, "second", _Ordered(second_started, None))

    assert sorted(title for op, title, *_ in app.crm.journal()) == ["first", "second"], "a program ran twice"
    assert outputs["first"] != outputs["second"]


# LangChain / LangGraph


async def test_langgraph_answers_swapped_between_two_paused_calls_decide_nothing(app: App) -> None:
    def deleting(title: str) -> str:
        return f"made = await crm.create(title={title!r})\nreturn await crm.delete(id=made['id'])"

    both = AIMessage(
        "",
        tool_calls=[
            {"name": "execute", "args": {"code": deleting("one")}, "id": "call-1"},
            {"name": "execute", "args": {"code": deleting("two")}, "id": "call-2"},
        ],
    )
    async with mycelium_tool(app.runtime) as tool:
        agent = create_agent(
            ScriptedChatModel(messages=iter([both, AIMessage("done")])), tools=[tool], checkpointer=InMemorySaver()
        )
        first = await agent.ainvoke(ask("delete both"), CONFIG)
        one, two = first["__interrupt__"]
        swapped = {
            one.id: {"suspension_id": two.value["suspension_id"], "approved": True},
            two.id: {"suspension_id": one.value["suspension_id"], "approved": True},
        }
        again = await agent.ainvoke(Command(resume=swapped), CONFIG)

        assert deletes(app) == []
        asked = {interrupt.value["tool_call_id"]: interrupt.value for interrupt in again["__interrupt__"]}
        assert asked == {one.value["tool_call_id"]: one.value, two.value["tool_call_id"]: two.value}  # unchanged
        fitting = {i.id: {"suspension_id": i.value["suspension_id"], "approved": True} for i in again["__interrupt__"]}
        await agent.ainvoke(Command(resume=fitting), CONFIG)
    assert sorted(deletes(app)) == ["1", "2"]


async def test_langgraph_a_tool_call_rerun_after_it_finished_runs_nothing_again(app: App) -> None:
    """Once a paused run has resumed and finished, its tombstone stays until the pause would have
    expired: a rerun of the node from an earlier checkpoint (time travel) replays the approval, which
    is refused as already resumed, and nothing of the program runs again."""
    code = "made = await crm.create(title='once')\nreturn await crm.delete(id=made['id'])"
    call = AIMessage("", tool_calls=[{"name": "execute", "args": {"code": code}, "id": "call-1"}])
    model = ScriptedChatModel(messages=iter([call, AIMessage("done"), AIMessage("done again")]))
    async with mycelium_tool(app.runtime) as tool:
        agent = create_agent(model, tools=[tool], checkpointer=InMemorySaver())
        first = await agent.ainvoke(ask("add and delete"), CONFIG)
        approval = approve_the_interrupt(first, approved=True)
        await agent.ainvoke(approval, CONFIG)
        assert [op for op, *_ in app.crm.journal()] == ["create", "delete"]

        # The host retries from the checkpoint where the graph waited for the person (time travel).
        waiting = [snapshot async for snapshot in agent.aget_state_history(CONFIG) if snapshot.interrupts]
        rerun = await agent.ainvoke(approval, waiting[0].config)

    assert [(op, ordinal) for op, _, ordinal, _ in app.crm.journal()] == [("create", 0), ("delete", 1)]
    (answer,) = [message for message in rerun["messages"] if isinstance(message, ToolMessage)]
    assert "cannot continue" in str(answer.content), answer.content


# Every adapter


async def model_reads(adapter: str, runtime: Runtime, arguments: dict[str, Any]) -> list[str]:
    """What a model read after making one ``execute`` call with ``arguments`` through ``adapter``."""
    if adapter == "pydantic-ai":
        read: list[str] = []

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if len(messages) == 1:
                return ModelResponse(parts=[ToolCallPart("execute", arguments, "c1")])
            for part in messages[-1].parts:
                if isinstance(part, ToolReturnPart | RetryPromptPart):
                    read.append(str(part.model_response() if isinstance(part, RetryPromptPart) else part.content))
            return ModelResponse(parts=[TextPart("done")])

        await Agent(FunctionModel(respond), toolsets=[MyceliumToolset(runtime)]).run("go")
        return read
    if adapter == "openai-agents":

        class OneCall(ScriptedOpenAIModel):
            async def get_response(self, *args: Any, **kwargs: Any) -> Any:
                if not self.calls:
                    self.calls += 1
                    return _response(_call("c1", "execute", arguments))
                return await super().get_response(*args, **kwargs)

        model = OneCall()
        async with MyceliumTools(runtime) as mycelium:
            await Runner.run(agent_for(mycelium, model), "go")
        return model.seen
    chat = ScriptedChatModel(
        messages=iter(
            [AIMessage("", tool_calls=[{"name": "execute", "args": arguments, "id": "c1"}]), AIMessage("done")]
        )
    )
    async with mycelium_tool(runtime) as tool:
        await create_agent(chat, tools=[tool]).ainvoke(ask("go"))
    return [message.text for message in chat.seen]


ADAPTERS = ["pydantic-ai", "openai-agents", "langchain"]


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize(
    "arguments",
    [{"code": 5}, {"code": None}, {}, {"code": "return 1", "extra": 1}, {"code": "x" * 100_000}],
    ids=["code-not-a-string", "code-null", "no-code", "extra-key", "huge-code"],
)
async def test_malformed_arguments_are_a_tool_error_the_model_reads(
    app: App, adapter: str, arguments: dict[str, Any]
) -> None:
    read = await model_reads(adapter, app.runtime, arguments)

    wrong = "extra" if "extra" in arguments else "code"
    assert any(wrong in text for text in read), read  # the model is told which argument to change
    assert app.crm.journal() == []
    app.assert_released()


class FailingStore(MemorySuspensions):
    """A suspension store whose every call a run makes fails, saying where it lives as a careless driver would."""

    async def put(self, suspension: StoredSuspension, *, max_per_session: int) -> None:
        raise ConnectionError(DSN_SECRET)

    async def get(self, suspension_id: str) -> StoredSuspension | None:
        raise ConnectionError(DSN_SECRET)

    async def find(self, session_id: str | None, tool_call_id: str) -> list[StoredSuspension]:
        raise ConnectionError(DSN_SECRET)

    async def claim(self, suspension_id: str, *, now: float, tombstone: bytes) -> StoredSuspension | None:
        raise ConnectionError(DSN_SECRET)


@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_a_failing_store_reaches_no_model_with_host_detail_and_nothing_runs(tmp_path: Path, adapter: str) -> None:
    crm = Crm(tmp_path / "crm.sqlite")
    async with crm_host(crm, FailingStore()) as runtime:
        read = await model_reads(adapter, runtime, {"code": "return await crm.create(title='x')"})

    assert read
    for text in read:
        for detail in ("hunter2", "db.internal", "ConnectionError", "Traceback"):
            assert detail not in text, text
    assert crm.journal() == []  # whether this call paused before is unknown: it is not run again


# Leases


@pytest.mark.parametrize("adapter", ["pydantic-ai", "openai-agents"])
async def test_entering_the_same_adapter_twice_at_once_loses_no_lease(tmp_path: Path, adapter: str) -> None:
    crm = Crm(tmp_path / "crm.sqlite")
    open_source = anyio.Event()

    async def acquire(context: AcquireContext) -> Acquired:
        await open_source.wait()  # every lease waits here until both blocks are entering

        async def release() -> None:
            pass

        return Acquired(version="1", modules=[crm.module()], release=release)

    async with Runtime(sources=[source(id="notes", acquire=acquire)], sandbox=MontySandbox()) as runtime:
        entered: Any = MyceliumToolset(runtime) if adapter == "pydantic-ai" else MyceliumTools(runtime)
        leave = anyio.Event()
        refused: list[str] = []

        async def block(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            task_status.started()
            try:
                async with entered:
                    await leave.wait()
            except RuntimeError as refusal:  # one block at a time may be refused: it must then hold nothing
                refused.append(str(refusal))

        try:
            async with anyio.create_task_group() as group:
                await group.start(block)
                await group.start(block)
                await anyio.wait_all_tasks_blocked()
                open_source.set()
                await anyio.wait_all_tasks_blocked()  # both blocks are in (or refused) before either leaves
                leave.set()
            held = runtime.leases_held
        finally:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ResourceWarning)
                gc.collect()  # a lost lease gives its hold back when collected, so the runtime can close
            with anyio.fail_after(10):
                await runtime.close()
        assert held == 0, "a lease was lost: only the garbage collector gives it back"
        assert all("already entered" in refusal for refusal in refused)
