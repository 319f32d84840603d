"""Direct tools: labelled tools a host offers next to ``execute``, behind the same access checks.

``Runtime(tools=[direct_tool(...)])`` puts each tool on ``lease.tools`` with a ``definition``
(name, description, input schema) and an async ``call(arguments, tool_call_id=None)`` that
returns a :class:`ToolResult`. The grant is looked up under ``grant_key`` (its name by
default), then a person is asked for ``confirm=True``; a refusal is an ordinary result
holding the refusal's JSON form, and nothing of the tool ran.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from mycelium import (
    Access,
    ConfirmRequest,
    DefinitionError,
    DirectTool,
    InvocationContext,
    LeaseReleased,
    OperationEvidence,
    RefusedCall,
    Runtime,
    Session,
    ToolResult,
    direct_tool,
)
from mycelium.testing import rejecting_sandbox

SECRET = "s3cr3t-index-password"


class Recorder:
    def __init__(self) -> None:
        self.decoded: list[str] = []
        self.ran: list[InvocationContext] = []
        self.asked: list[ConfirmRequest] = []
        self.refused: list[RefusedCall] = []
        self.errors: list[OperationEvidence] = []

    def tool(
        self,
        name: str = "search",
        *,
        access: str | None = None,
        confirm: bool = False,
        grant_key: str | None = None,
        fail: bool = False,
    ) -> DirectTool:
        decoded = self.decoded
        ran = self.ran

        class Query(BaseModel):
            query: str
            limit: int = 3

            @field_validator("query")
            @classmethod
            def _record_decoding(cls, value: str) -> str:
                decoded.append(value)
                return value

        class Hits(BaseModel):
            hits: list[str]

        async def search(query: Query, ctx: InvocationContext) -> Hits:
            ran.append(ctx)
            if fail:
                raise RuntimeError(f"index offline: {SECRET}")
            return Hits(hits=[f"{query.query}-{i}" for i in range(query.limit)])

        return direct_tool(
            name=name,
            description="Search the notes index.",
            input=Query,
            output=Hits,
            execute=search,
            access=access,  # type: ignore[arg-type]
            confirm=confirm,
            grant_key=grant_key,
        )

    def confirm_with(self, answer: bool) -> Any:
        async def confirm(request: ConfirmRequest) -> bool:
            self.asked.append(request)
            return answer

        return confirm


def runtime_with(*tools: DirectTool, access: Access | None = None, **options: Any) -> Runtime:
    return Runtime(sandbox=rejecting_sandbox(), tools=list(tools), access=access, **options)


async def call_once(runtime: Runtime, arguments: Mapping[str, object] | str, **kwargs: Any) -> ToolResult:
    async with runtime, runtime.lease() as lease:
        [tool] = lease.tools
        return await tool.call(arguments, **kwargs)


# ------------------------------------------------------------------------------------------
# Definition and a successful call
# ------------------------------------------------------------------------------------------


async def test_direct_tools_appear_on_lease_tools_with_their_definition() -> None:
    recorder = Recorder()
    search = recorder.tool("search", access="read")
    archive = recorder.tool("archive_notes", access="write")
    async with runtime_with(search, archive) as runtime, runtime.lease() as lease:
        tools = lease.tools
        assert [tool.definition.name for tool in tools] == ["search", "archive_notes"]
        definition = tools[0].definition
        assert definition.description == "Search the notes index."
        assert definition.input_schema["type"] == "object"
        assert set(definition.input_schema["properties"]) == {"query", "limit"}
        assert definition.input_schema["required"] == ["query"]
        # The execute tool is still there, separately.
        assert lease.execute_tool.definition.name == "execute"


async def test_a_direct_tool_call_returns_compact_json_text() -> None:
    recorder = Recorder()
    result = await call_once(runtime_with(recorder.tool(access="read")), {"query": "q", "limit": 2}, tool_call_id="c1")
    assert isinstance(result, ToolResult)
    assert result.is_error is False
    assert result.value == {"hits": ["q-0", "q-1"]}
    assert result.text == '{"hits":["q-0","q-1"]}'
    assert recorder.decoded == ["q"]
    [ctx] = recorder.ran
    assert ctx.tool_call_id == "c1"


async def test_a_direct_tool_accepts_arguments_as_json_text() -> None:
    recorder = Recorder()
    result = await call_once(runtime_with(recorder.tool(access="read")), json.dumps({"query": "q", "limit": 1}))
    assert result.is_error is False
    assert result.value == {"hits": ["q-0"]}


# ------------------------------------------------------------------------------------------
# Behind the same checks: grant (by grant_key, default its name), then the person
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grant", "label", "reason"),
    [
        ("none", "read", "not-granted"),
        ("read", "write", "read-only-grant"),
        ("read", None, "read-only-grant"),
        ("read", "read", None),
        ("write", "write", None),
    ],
)
async def test_a_direct_tool_grant_is_looked_up_under_its_name(
    grant: str, label: str | None, reason: str | None
) -> None:
    recorder = Recorder()
    access = Access(grants={"search": grant}, on_refused=recorder.refused.append)  # type: ignore[dict-item]
    result = await call_once(runtime_with(recorder.tool(access=label), access=access), {"query": "q", "limit": 1})
    assert result.is_error is False
    if reason is None:
        assert result.value == {"hits": ["q-0"]}
        assert recorder.refused == []
    else:
        assert isinstance(result.value, dict)
        assert result.value["refused"] is True
        assert result.value["reason"] == reason
        assert result.value["operation"] == "search"
        assert set(result.value) == {"refused", "module", "operation", "reason", "message"}
        assert result.text == json.dumps(result.value, separators=(",", ":"), ensure_ascii=False)
        assert recorder.decoded == []
        assert recorder.ran == []
        assert [seen.refusal.to_json() for seen in recorder.refused] == [result.value]


def assert_plain_sentences(message: str, name: str) -> None:
    """Whole sentences naming the tool: no empty slot, no doubled space or stray punctuation."""
    assert name in message
    assert message.endswith(".")
    assert message[0].isupper() or message.startswith(name)
    for flaw in ("  ", " .", " ,", "..", "{", "}"):
        assert flaw not in message, f"{flaw!r} in {message!r}"


@pytest.mark.parametrize(
    ("label", "confirm", "access_options", "reason"),
    [
        ("read", False, {"grants": {"archive_notes": "none"}}, "not-granted"),
        ("write", False, {"grants": {"archive_notes": "read"}}, "read-only-grant"),
        (None, False, {"grants": {"archive_notes": "read"}}, "read-only-grant"),
        ("write", True, {}, "confirmation-unavailable"),
        ("write", True, {"confirm": lambda request: False}, "confirmation-declined"),
    ],
)
async def test_every_refusal_message_of_a_direct_tool_is_plain_sentences_naming_the_tool(
    label: str | None, confirm: bool, access_options: dict[str, Any], reason: str
) -> None:
    recorder = Recorder()
    tool = recorder.tool("archive_notes", access=label, confirm=confirm)
    result = await call_once(runtime_with(tool, access=Access(**access_options)), {"query": "q"})
    assert isinstance(result.value, dict)
    assert result.value["reason"] == reason
    assert_plain_sentences(result.value["message"], "archive_notes")
    assert recorder.ran == []


async def test_a_direct_tool_grant_is_looked_up_under_its_grant_key() -> None:
    recorder = Recorder()
    tool = recorder.tool(access="write", grant_key="extension-1")
    # Its own name no longer counts; the wider key does.
    access = Access(grants={"extension-1": "read", "search": "write"})
    result = await call_once(runtime_with(tool, access=access), {"query": "q"})
    assert isinstance(result.value, dict)
    assert result.value["reason"] == "read-only-grant"
    assert recorder.ran == []


async def test_a_direct_tool_grant_key_fails_closed_when_required() -> None:
    recorder = Recorder()
    access = Access(required={"extension-1"})
    result = await call_once(
        runtime_with(recorder.tool(access="read", grant_key="extension-1"), access=access), {"query": "q"}
    )
    assert isinstance(result.value, dict)
    assert result.value["reason"] == "not-granted"


async def test_a_direct_tool_the_host_does_not_name_keeps_full_access() -> None:
    recorder = Recorder()
    access = Access(grants={"other": "none"}, required={"other"})
    result = await call_once(runtime_with(recorder.tool(), access=access), {"query": "q", "limit": 1})
    assert result.value == {"hits": ["q-0"]}


async def test_a_direct_tool_session_grant_overrides_and_is_read_at_every_call() -> None:
    recorder = Recorder()
    store: dict[str, Any] = {"search": "write"}
    access = Access(grants={"search": "none"}, session_grants=lambda: store)
    async with runtime_with(recorder.tool(), access=access) as runtime, runtime.lease() as lease:
        [tool] = lease.tools
        first = await tool.call({"query": "a", "limit": 1})
        store["search"] = "none"
        second = await tool.call({"query": "b", "limit": 1})
    assert first.value == {"hits": ["a-0"]}
    assert isinstance(second.value, dict)
    assert second.value["reason"] == "not-granted"
    assert recorder.decoded == ["a"]


@pytest.mark.parametrize(
    ("callback", "reason"),
    [("absent", "confirmation-unavailable"), ("declining", "confirmation-declined"), ("approving", None)],
)
async def test_a_confirm_direct_tool_asks_a_person(callback: str, reason: str | None) -> None:
    recorder = Recorder()
    confirm = None if callback == "absent" else recorder.confirm_with(callback == "approving")
    access = Access(confirm=confirm)
    runtime = runtime_with(recorder.tool(access="write", confirm=True), access=access, session=Session("session-1"))
    result = await call_once(runtime, {"query": "q", "limit": 1}, tool_call_id="call-9")
    if reason is None:
        assert result.value == {"hits": ["q-0"]}
    else:
        assert isinstance(result.value, dict)
        assert result.value["reason"] == reason
        assert recorder.decoded == []
        assert recorder.ran == []
    if callback != "absent":
        [request] = recorder.asked
        assert request.module_name == "search"
        assert request.operation == "search"
        assert request.access == "write"
        assert request.session_id == "session-1"
        assert request.tool_call_id == "call-9"
        assert request.arguments == {"query": "q", "limit": 1}


async def test_a_confirm_direct_tool_is_not_asked_when_the_grant_refuses() -> None:
    recorder = Recorder()
    access = Access(grants={"search": "none"}, confirm=recorder.confirm_with(True))
    result = await call_once(runtime_with(recorder.tool(access="read", confirm=True), access=access), {"query": "q"})
    assert isinstance(result.value, dict)
    assert result.value["reason"] == "not-granted"
    assert recorder.asked == []


async def test_a_refused_direct_tool_is_refused_before_its_arguments_are_decoded() -> None:
    recorder = Recorder()
    access = Access(grants={"search": "none"})
    result = await call_once(runtime_with(recorder.tool(), access=access), {"limit": "not a number"})
    assert result.is_error is False
    assert isinstance(result.value, dict)
    assert result.value["reason"] == "not-granted"


# ------------------------------------------------------------------------------------------
# Failures
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [{"limit": 1}, {"query": 5}, {"query": "q", "limit": "many"}, "{not json", "[1, 2]"],
    ids=["missing-field", "wrong-type", "bad-limit", "invalid-json-text", "json-array"],
)
async def test_invalid_arguments_to_a_direct_tool_are_invalid_arguments(arguments: object) -> None:
    recorder = Recorder()
    result = await call_once(runtime_with(recorder.tool(access="read")), arguments)  # type: ignore[arg-type]
    assert result.is_error is True
    assert result.failure is not None
    assert result.failure.code == "invalid-arguments"
    assert result.text.startswith("The search call was malformed")
    assert "code" not in result.text  # the execute tool's argument has nothing to do with it
    assert recorder.ran == []


async def test_a_raising_direct_tool_is_capability_failed_without_host_detail() -> None:
    recorder = Recorder()
    runtime = runtime_with(recorder.tool(access="read", fail=True), on_operation_error=recorder.errors.append)
    result = await call_once(runtime, {"query": "q"})
    assert result.is_error is True
    assert result.failure is not None
    assert result.failure.code == "capability-failed"
    assert SECRET not in result.text
    assert "index offline" not in result.text
    [evidence] = recorder.errors
    assert evidence.stage == "execute"
    assert isinstance(evidence.exception, RuntimeError)
    assert result.reference == evidence.reference


async def test_a_raising_confirm_callback_for_a_direct_tool_is_a_failure_not_an_allow() -> None:
    recorder = Recorder()

    async def confirm(request: ConfirmRequest) -> bool:
        raise RuntimeError(f"approvals down: {SECRET}")

    runtime = runtime_with(
        recorder.tool(access="read", confirm=True),
        access=Access(confirm=confirm),
        on_operation_error=recorder.errors.append,
    )
    result = await call_once(runtime, {"query": "q"})
    assert result.is_error is True
    assert result.failure is not None
    assert result.failure.code == "capability-failed"
    assert SECRET not in result.text
    assert [evidence.stage for evidence in recorder.errors] == ["access"]
    assert recorder.decoded == []
    assert recorder.ran == []


# ------------------------------------------------------------------------------------------
# Definition errors and lifecycle
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["execute", "", "has space", "x" * 65, "dotted.name", 5], ids=repr)
def test_a_direct_tool_with_a_bad_name_is_a_definition_error(name: object) -> None:
    with pytest.raises(DefinitionError):
        direct_tool(name=name, description="d", execute=lambda: 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["x" * 64, "a", "search-notes_2"])
def test_a_direct_tool_name_of_up_to_64_allowed_characters_is_accepted(name: str) -> None:
    assert direct_tool(name=name, description="d", execute=lambda: 1).definition.name == name


@pytest.mark.parametrize("description", ["", "   ", None])
def test_a_direct_tool_needs_a_description(description: object) -> None:
    with pytest.raises(DefinitionError):
        direct_tool(name="search", description=description, execute=lambda: 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(("access", "confirm"), [("admin", False), ("read", "yes")])
def test_a_direct_tool_with_bad_labels_is_a_definition_error(access: object, confirm: object) -> None:
    with pytest.raises(DefinitionError):
        direct_tool(name="search", description="d", execute=lambda: 1, access=access, confirm=confirm)  # type: ignore[arg-type]


def test_duplicate_direct_tool_names_are_a_value_error() -> None:
    recorder = Recorder()
    with pytest.raises(ValueError, match="search"):
        runtime_with(recorder.tool("search"), recorder.tool("search"))


async def test_a_released_leases_tools_raise_lease_released() -> None:
    recorder = Recorder()
    async with runtime_with(recorder.tool(access="read")) as runtime:
        lease = await runtime.acquire()
        [tool] = lease.tools
        await lease.release()
        with pytest.raises(LeaseReleased):
            lease.tools  # noqa: B018
        with pytest.raises(LeaseReleased):
            await tool.call({"query": "q"})
    assert recorder.ran == []
