"""Calling upstream tools from a program: results, the server's own errors, host failures, deadlines, cancellation."""

from __future__ import annotations

import anyio
import pytest

from mycelium import CallContext, OperationEvidence, OperationFailed, Runtime
from mycelium._signals import AbortController
from mycelium.mcp._upstream import MAX_MESSAGE_BYTES, MAX_RESULT_CHARS
from mycelium.sandbox.monty import MontySandbox

from .conftest import TRANSPORTS, runtime, upstream

both = pytest.mark.parametrize("transport", TRANSPORTS)


@both
async def test_structured_content_is_the_result_and_concurrent_calls_share_one_session(transport: str) -> None:
    program = "import asyncio\nreturn await asyncio.gather(*[up.add(a=i, b=1) for i in range(8)])"
    async with upstream(transport) as (source, _), runtime(source) as rt, rt.lease() as lease:
        result = await lease.execute_tool.run(program)
    assert result.value == [{"sum": i + 1} for i in range(8)]


@both
async def test_text_content_is_json_decoded_when_it_is_json_and_several_blocks_make_a_list(transport: str) -> None:
    program = "return [await up.echo(text='plain'), await up.echo(text='[1, {\"a\": null}]'), await up.texts()]"
    async with upstream(transport) as (source, _), runtime(source) as rt, rt.lease() as lease:
        result = await lease.execute_tool.run(program)
    assert result.value == ["plain", [1, {"a": None}], [1, "two", {"a": [1, 2]}]]


@both
async def test_images_audio_and_resources_become_small_typed_values_without_their_data(transport: str) -> None:
    async with upstream(transport) as (source, _), runtime(source) as rt, rt.lease() as lease:
        media = await lease.execute_tool.run("return await up.media()")
        empty = await lease.execute_tool.run("return await up.empty()")
    assert media.value == [
        "caption",
        {"type": "image", "mimeType": "image/png", "bytes": 10},
        {"type": "audio", "mimeType": "audio/wav", "bytes": 4},
        {"type": "resource", "uri": "file:///a.txt", "mimeType": "text/plain", "text": "A"},
        {"type": "resource", "uri": "file:///b.bin", "mimeType": None, "bytes": 10},
        {"type": "resource_link", "uri": "file:///c.txt", "name": "c", "mimeType": "text/plain"},
    ]
    assert empty.value is None


@both
async def test_an_upstream_is_error_result_reaches_the_program_as_the_servers_own_words(transport: str) -> None:
    errors: list[OperationEvidence] = []
    program = "try:\n    await up.fail(text='no such issue: 7')\nexcept RuntimeError as e:\n    return str(e)"
    async with upstream(transport) as (source, _):
        rt = Runtime(sources=[source], sandbox=MontySandbox(), on_operation_error=errors.append)
        async with rt, rt.lease() as lease:
            result = await lease.execute_tool.run(program)
    assert result.value == "up.fail failed; server 'up' says: no such issue: 7"
    assert errors == []


@both
async def test_a_protocol_error_is_a_host_failure_the_program_sees_only_by_reference(transport: str) -> None:
    errors: list[OperationEvidence] = []
    async with upstream(transport) as (source, _):
        rt = Runtime(sources=[source], sandbox=MontySandbox(), on_operation_error=errors.append)
        async with rt, rt.lease() as lease:
            result = await lease.execute_tool.run("return await up.protocol_error()")
    assert result.is_error
    assert "the upstream broke" not in result.text
    assert result.failure is not None
    assert result.failure.code == "capability-failed"
    (error,) = errors  # the operator's evidence carries the server's (redacted) words
    assert type(error.exception).__name__ == "UpstreamError"
    assert "the upstream broke" in str(error.exception)


@both
async def test_a_call_timeout_is_a_host_failure_and_the_upstream_is_told_to_stop(transport: str) -> None:
    errors: list[OperationEvidence] = []
    async with upstream(transport, call_timeout_ms=300) as (source, _server):
        rt = Runtime(sources=[source], sandbox=MontySandbox(), on_operation_error=errors.append)
        async with rt, rt.lease() as lease:
            result = await lease.execute_tool.run("return await up.slow()")
            assert result.failure is not None
            assert result.failure.code == "capability-failed"
            assert "timed out" in str(errors[0].exception)
            # The courtesy notifications/cancelled reaches the handler: it counts itself cancelled.
            seen = await lease.execute_tool.run("return await up.cancelled()")
    assert seen.value == 1


@both
async def test_the_execute_deadline_cancels_the_upstream_call_with_notifications_cancelled(transport: str) -> None:
    async with upstream(transport) as (source, server), runtime(source, timeout_ms=1_500) as rt:
        async with rt.lease() as lease:
            stopped = await lease.execute_tool.run("return await up.slow()")
        assert stopped.failure is not None
        assert stopped.failure.code == "deadline-exceeded"
        async with rt.lease() as lease:
            seen = await lease.execute_tool.run("return await up.cancelled()")
    assert seen.value == 1
    if server is not None:
        assert server.calls[:1] == ["slow"]
        assert server.cancelled == 1


@both
async def test_input_is_checked_on_the_host_before_the_call_leaves(transport: str) -> None:
    async with upstream(transport) as (source, server), runtime(source) as rt, rt.lease() as lease:
        result = await lease.execute_tool.run("return await up.add(a='one', b=2)")
    assert result.is_error
    assert "Invalid input for up.add" in result.text
    if server is not None:
        assert server.calls == []


# Past MAX_MESSAGE_BYTES the answer is dropped unread on either transport: the same advice, the session intact.
@pytest.mark.parametrize("chars", [2_000_000, 6_000_000])
@both
async def test_a_huge_result_fails_typed_never_a_crash_or_hang_and_the_session_keeps_working(
    transport: str, chars: int
) -> None:
    program = (
        f"try:\n    await up.huge(chars={chars})\nexcept RuntimeError as e:\n    said = str(e)\n"
        "return [said, await up.echo(text='still here')]"
    )
    async with upstream(transport) as (source, _), runtime(source) as rt, rt.lease() as lease:
        result = await lease.execute_tool.run(program)
    caught, after = result.value  # type: ignore[misc]
    assert after == "still here"
    if chars < MAX_MESSAGE_BYTES:
        assert caught.startswith(f"up.huge failed: the result is {chars + 2} characters of JSON")
        assert str(MAX_RESULT_CHARS) in caught
    else:
        assert caught.startswith(f"up.huge failed: the server sent a message over {MAX_MESSAGE_BYTES} bytes")
        assert caught.endswith("Ask for less (a narrower query, a page, a limit).")


async def test_a_direct_invoke_stopped_by_its_signal_cancels_the_upstream_handler() -> None:
    controller = AbortController()
    async with upstream("http") as (source, server), runtime(source) as rt:
        assert server is not None
        failed: list[BaseException] = []

        async def invoke() -> None:
            try:
                await rt.invoke("up", "slow", context=CallContext(signal=controller.signal))
            except OperationFailed as exc:
                failed.append(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(invoke)
            await server.slow_started.wait()
            controller.abort("the caller stopped")
        with anyio.fail_after(10):
            await server.slow_cancelled.wait()
    assert len(failed) == 1
    assert server.cancelled == 1


@both
async def test_text_too_deep_to_decode_stays_text_and_fails_no_worse_than_the_runtimes_bounds(transport: str) -> None:
    async with upstream(transport) as (source, _), runtime(source) as rt, rt.lease() as lease:
        result = await lease.execute_tool.run("v = await up.deep()\nreturn [type(v).__name__, len(v)]")
    assert result.value == ["str", 200_000]
