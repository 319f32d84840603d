"""A LangGraph agent (LangChain's ``create_agent``) using a Mycelium app, driven offline by a scripted chat model.

The scenario is :mod:`frameworks.scenario`'s; the person approves or declines the delete
through LangGraph's own ``interrupt()``, with an in-memory checkpointer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.middleware.types import InputAgentState
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import Field, ValidationError

from mycelium import ExecutionOptions, Runtime
from mycelium._execute import EXECUTE_INPUT_SCHEMA
from mycelium.integrations.langchain import MyceliumTool, mycelium_tool
from mycelium.sandbox.monty import MontySandbox
from tests.integrations.scenario import HANG, PROGRAM, SECRET, App, assert_released_on_cancel

CONFIG: RunnableConfig = {"configurable": {"thread_id": "notes"}}

TWO_DELETES = """
one = await crm.create(title="one")
two = await crm.create(title="two")
return [await crm.delete(id=one["id"]), await crm.delete(id=two["id"])]
"""
"""A program with two confirmations: each pauses it in turn."""


class ScriptedModel(GenericFakeChatModel):
    """A chat model that answers with its scripted messages in turn, recording what it was shown."""

    seen: list[ToolMessage] = Field(default_factory=list)
    """Every tool result the model read, in order."""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """The tools as the model was shown them (OpenAI's format)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        self.tools = [convert_to_openai_tool(tool) for tool in tools]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        answered: list[ToolMessage] = []
        for message in reversed(messages):  # the results of the model's last turn
            if not isinstance(message, ToolMessage):
                break
            answered.insert(0, message)
        self.seen.extend(answered)
        return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop, **kwargs)


def model(*codes: str, then: str = "done") -> ScriptedModel:
    """A model that runs each program in turn (tool calls ``call-1``, ``call-2``, ...), then says ``then``."""
    calls = [
        AIMessage("", tool_calls=[{"name": "execute", "args": {"code": code}, "id": f"call-{n}"}])
        for n, code in enumerate(codes, 1)
    ]
    return ScriptedModel(messages=iter([*calls, AIMessage(then)]))


def ask(text: str) -> InputAgentState:
    """What the user says to start the agent."""
    return {"messages": [HumanMessage(text)]}


def answer(result: dict[str, Any], *, approved: bool) -> Command[Any]:
    """The person's decision on the one call the graph stopped for."""
    (pending,) = result["__interrupt__"]
    return Command(resume={"suspension_id": pending.value["suspension_id"], "approved": approved})


async def test_an_approved_delete_resumes_the_program_and_every_write_happens_once(app: App) -> None:
    scripted = model(PROGRAM)
    saver = InMemorySaver()

    async with mycelium_tool(app.runtime) as tool:
        first = await create_agent(scripted, tools=[tool], checkpointer=saver).ainvoke(ask("tidy my notes"), CONFIG)
    (interrupted,) = first["__interrupt__"]
    pending = interrupted.value
    assert (pending["path"], pending["arguments"], pending["tool_call_id"]) == (
        "crm.delete",
        app.pending_delete(),
        "call-1",
    )
    app.assert_released()  # the stopped graph holds no lease while the person decides

    async with mycelium_tool(app.runtime) as tool:  # a new lease continues the graph from its checkpoint
        second = await create_agent(scripted, tools=[tool], checkpointer=saver).ainvoke(
            answer(first, approved=True), CONFIG
        )

    (result,) = scripted.seen
    assert (result.tool_call_id, result.status) == ("call-1", "success")
    assert f'"gone":{{"deleted":{pending["arguments"]["id"]}}},"last":{{"id":4}}}}' in result.text
    # The model reads the output beside the value, and the failed operation as the guest saw it.
    assert "Printed:\nfound crm.create\nmail failed: RuntimeError" in result.text
    assert SECRET not in str([message.content for message in second["messages"]]) + str(pending)
    (shown,) = scripted.tools
    assert shown["function"]["name"] == "execute"
    assert shown["function"]["parameters"] == EXECUTE_INPUT_SCHEMA
    assert "forage.search" in shown["function"]["description"]  # the model was told how to discover operations
    assert second["messages"][-1].text == "done"
    app.assert_ran_once_each(approved=True)
    app.assert_released()


async def test_a_declined_delete_never_runs_and_nothing_after_it_runs(app: App) -> None:
    scripted = model(PROGRAM)
    async with mycelium_tool(app.runtime) as tool:
        agent = create_agent(scripted, tools=[tool], checkpointer=InMemorySaver())
        first = await agent.ainvoke(ask("tidy my notes"), CONFIG)
        await agent.ainvoke(answer(first, approved=False), CONFIG)

    (result,) = scripted.seen
    assert result.status == "error"  # as LangChain's own human-in-the-loop reports a rejected call
    assert result.text.startswith("The person declined crm.delete, so the program stopped at that call")
    app.assert_ran_once_each(approved=False)
    app.assert_released()


async def test_each_confirmation_of_a_program_is_its_own_interrupt_and_each_write_happens_once(app: App) -> None:
    scripted = model(TWO_DELETES)
    async with mycelium_tool(app.runtime) as tool:
        agent = create_agent(scripted, tools=[tool], checkpointer=InMemorySaver())
        first = await agent.ainvoke(ask("delete both"), CONFIG)
        second = await agent.ainvoke(answer(first, approved=True), CONFIG)
        (one,), (two,) = first["__interrupt__"], second["__interrupt__"]
        assert (one.value["arguments"], two.value["arguments"]) == ({"id": 1}, {"id": 2})
        assert one.value["suspension_id"] != two.value["suspension_id"]
        await agent.ainvoke(answer(second, approved=True), CONFIG)

    (result,) = scripted.seen
    assert result.text == '[{"deleted":1},{"deleted":2}]'
    ran = [entry[:2] for entry in app.crm.journal()]
    assert ran == [("create", "one"), ("create", "two"), ("delete", "1"), ("delete", "2")]
    assert len({entry[3] for entry in app.crm.journal()}) == 1  # one program, resumed twice
    app.assert_released()


async def test_an_answer_decides_only_the_call_it_names(app: App) -> None:
    scripted = model(TWO_DELETES)
    async with mycelium_tool(app.runtime) as tool:
        agent = create_agent(scripted, tools=[tool], checkpointer=InMemorySaver())
        first = await agent.ainvoke(ask("delete both"), CONFIG)
        second = await agent.ainvoke(answer(first, approved=True), CONFIG)
        # LangGraph hands the rerun tool both answers in order; the approval of the first is not the second's.
        await agent.ainvoke(answer(second, approved=False), CONFIG)

    (result,) = scripted.seen
    assert result.text.startswith("The person declined crm.delete")
    assert [entry[:2] for entry in app.crm.journal()] == [("create", "one"), ("create", "two"), ("delete", "1")]
    assert app.crm.titles() == ["two"]


async def test_a_call_that_finished_beside_a_paused_one_does_not_run_again(app: App) -> None:
    both = AIMessage(
        "",
        tool_calls=[
            {"name": "execute", "args": {"code": PROGRAM}, "id": "call-1"},
            {"name": "execute", "args": {"code": "return await crm.create(title='beside')"}, "id": "call-2"},
        ],
    )
    scripted = ScriptedModel(messages=iter([both, AIMessage("done")]))
    async with mycelium_tool(app.runtime) as tool:
        agent = create_agent(scripted, tools=[tool], checkpointer=InMemorySaver())
        first = await agent.ainvoke(ask("tidy my notes"), CONFIG)
        await agent.ainvoke(answer(first, approved=True), CONFIG)

    assert sorted(seen.tool_call_id for seen in scripted.seen) == ["call-1", "call-2"]
    assert app.crm.ran("create") == 5  # one, two, three, four and beside: each once


async def test_a_malformed_answer_is_refused_and_the_call_can_be_answered_again(app: App) -> None:
    scripted = model(PROGRAM)
    async with mycelium_tool(app.runtime) as tool:
        agent = create_agent(scripted, tools=[tool], checkpointer=InMemorySaver())
        first = await agent.ainvoke(ask("tidy my notes"), CONFIG)
        with pytest.raises(ValidationError, match="Approval"):
            await agent.ainvoke(Command(resume=True), CONFIG)
        app.assert_ran_once_each(approved=False)

        await agent.ainvoke(answer(first, approved=True), CONFIG)

    assert scripted.seen[0].status == "success"
    app.assert_ran_once_each(approved=True)


async def test_an_answer_naming_another_suspension_decides_nothing_and_the_call_is_asked_again(app: App) -> None:
    scripted = model(PROGRAM)
    async with mycelium_tool(app.runtime) as tool:
        agent = create_agent(scripted, tools=[tool], checkpointer=InMemorySaver())
        first = await agent.ainvoke(ask("tidy my notes"), CONFIG)
        again = await agent.ainvoke(Command(resume={"suspension_id": "susp-other", "approved": True}), CONFIG)

        (asked,), (asked_again,) = first["__interrupt__"], again["__interrupt__"]
        assert asked_again.value == asked.value
        app.assert_ran_once_each(approved=False)
        await agent.ainvoke(answer(again, approved=True), CONFIG)

    app.assert_ran_once_each(approved=True)


@pytest.mark.parametrize(
    ("mode", "approve"),
    [("batched", {"decisions": [{"type": "approve"}]}), ("per_call", {"type": "approve"})],
)
async def test_human_in_the_loop_middleware_approves_the_program_and_the_interrupt_the_pending_call(
    app: App, mode: Literal["batched", "per_call"], approve: dict[str, Any]
) -> None:
    scripted = model(PROGRAM)
    async with mycelium_tool(app.runtime) as tool:
        review = HumanInTheLoopMiddleware(interrupt_on={"execute": True}, interrupt_mode=mode)
        agent = create_agent(scripted, tools=[tool], middleware=[review], checkpointer=InMemorySaver())
        program = await agent.ainvoke(ask("tidy my notes"), CONFIG)
        (review_request,) = program["__interrupt__"]
        assert "suspension_id" not in review_request.value  # the middleware's own request, for the program
        assert app.crm.journal() == []  # the person reviews the program before any of it runs

        paused = await agent.ainvoke(Command(resume=approve), CONFIG)
        assert paused["__interrupt__"][0].value["arguments"] == app.pending_delete()
        await agent.ainvoke(answer(paused, approved=True), CONFIG)

    assert scripted.seen[0].status == "success"
    app.assert_ran_once_each(approved=True)


async def test_a_program_the_model_can_fix_goes_back_to_it_as_an_error(app: App) -> None:
    scripted = model("return (", "raise ValueError('still wrong')", "return await crm.create(title='fixed')")
    async with mycelium_tool(app.runtime) as tool:
        await create_agent(scripted, tools=[tool]).ainvoke(ask("add a note"))

    assert [(seen.tool_call_id, seen.status) for seen in scripted.seen] == [
        ("call-1", "error"),
        ("call-2", "error"),
        ("call-3", "success"),
    ]
    assert "syntax error" in scripted.seen[0].text
    assert "ValueError: still wrong" in scripted.seen[1].text
    assert scripted.seen[2].text == '{"id":1}'
    assert app.crm.titles() == ["fixed"]


async def test_a_failure_the_model_cannot_fix_is_a_plain_tool_result() -> None:
    slow = Runtime(sandbox=MontySandbox(), execution=ExecutionOptions(timeout_ms=200))
    scripted = model("while True:\n    pass")
    async with slow, mycelium_tool(slow) as tool:
        await create_agent(scripted, tools=[tool]).ainvoke(ask("wait"))

    (result,) = scripted.seen
    assert result.status == "success"
    assert "did not finish within 200 ms" in result.text


async def test_the_lease_is_released_when_the_graph_run_fails(app: App) -> None:
    class Breaking(ScriptedModel):
        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            if isinstance(messages[-1], ToolMessage):  # after the tool ran, the model itself breaks
                raise RuntimeError("the model broke")
            return super()._generate(messages, *args, **kwargs)

    call = AIMessage("", tool_calls=[{"name": "execute", "args": {"code": "return 1"}, "id": "call-1"}])
    scripted = Breaking(messages=iter([call]))
    with pytest.raises(RuntimeError, match="the model broke"):
        async with mycelium_tool(app.runtime) as tool:
            await create_agent(scripted, tools=[tool]).ainvoke(ask("add a note"))
    app.assert_released()


async def test_the_lease_is_released_when_the_graph_run_is_cancelled() -> None:
    async def run(runtime: Runtime) -> None:
        async with mycelium_tool(runtime) as tool:
            await create_agent(model(HANG), tools=[tool]).ainvoke(ask("wait"))

    await assert_released_on_cancel(run)


async def test_the_tool_needs_a_runtime_a_held_lease_a_tool_call_id_and_a_graph_to_pause_in(app: App) -> None:
    with pytest.raises(ValueError, match="needs a Runtime, got str"):
        async with mycelium_tool("runtime"):  # type: ignore[arg-type]
            pass
    with pytest.raises(ValueError, match="needs a Lease, got Runtime"):
        MyceliumTool(app.runtime)  # type: ignore[arg-type]

    async with mycelium_tool(app.runtime) as tool:
        with pytest.raises(NotImplementedError, match="asynchronous"):
            tool.invoke({"type": "tool_call", "name": "execute", "args": {"code": "return 1"}, "id": "sync"})
        with pytest.raises(ValueError, match="ToolCall"):
            await tool.ainvoke({"code": "return 1"})
        with pytest.raises(RuntimeError, match="only a LangGraph graph with a checkpointer can ask"):
            await tool.ainvoke({"type": "tool_call", "name": "execute", "args": {"code": PROGRAM}, "id": "alone"})
        assert app.crm.ran("delete") == 0
    with pytest.raises(RuntimeError, match="lease was released"):
        await tool.ainvoke({"type": "tool_call", "name": "execute", "args": {"code": "return 1"}, "id": "late"})
