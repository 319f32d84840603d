"""Three ``mycelium serve`` replicas behind nginx, one PostgreSQL: what a deployment promises its clients.

Every scenario runs real processes (see conftest.py): the replicas, nginx configured from
``nginx.conf.template``, the session's PostgreSQL. A write is counted in the app's shared
file, never in a replica's memory, so "it happened exactly once" holds across processes.
Scenarios that kill or restart a replica get a deployment of their own; the others share
the module's.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import signal
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mycelium.sandbox._boundary import _RESUME_REFUSALS as RESUME_REFUSALS
from tests.mcp import raw_http as raw

from .conftest import TOKEN, Deployment, Replica, wait_until

# The module starts up to four deployments of three replicas and nginx, on 2 shared cores.
pytestmark = [pytest.mark.timeout(300), pytest.mark.xdist_group("deployment")]

ACCEPT = {"approval": {"action": "accept", "content": {"approve": True}}}
Elicit = Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult]]


def unique(label: str) -> str:
    """A note text no other scenario writes, so a scenario counts only its own writes."""
    return f"{label}-{secrets.token_hex(6)}"


def confirmed_program(text: str) -> str:
    """A write without approval, then one a person approves; returns the replica that ran the approved one."""
    return f"await notes.add(text={text!r})\ndone = await notes.publish(text={text!r})\nreturn done['replica']"


async def post(http: httpx2.AsyncClient, url: str, body: dict[str, Any]) -> raw.Answer:
    """One 2026-07-28 ``tools/call`` of ``execute`` with the deployment's token."""
    return await raw.send(http, "POST", url, sent=raw.modern_headers(TOKEN), body=body)


async def pause(http: httpx2.AsyncClient, url: str, code: str) -> tuple[str, raw.Answer]:
    """Run ``code`` until its approval: the sealed ``requestState`` and the answer that carried it."""
    answer = await post(http, url, raw.modern_call(code))
    assert answer.status == 200, (answer.status, answer.text)
    result = answer.result()
    assert result["resultType"] == "input_required", result
    assert list(result["inputRequests"]) == ["approval"], result
    return str(result["requestState"]), answer


async def approve(http: httpx2.AsyncClient, url: str, code: str, state: str) -> raw.Answer:
    """The client's retry: the same call, the state echoed, the person's approval."""
    return await post(http, url, raw.modern_call(code, request_id=2, request_state=state, input_responses=ACCEPT))


def tool_value(answer: raw.Answer) -> Any:
    """The JSON value a successful execute returned."""
    result = answer.result()
    assert result.get("isError") is False, result
    return json.loads(result["content"][0]["text"])


@asynccontextmanager
async def sdk_client(
    url: str, *, mode: str | None = None, elicitation: Elicit | None = None, seen: list[httpx2.Response] | None = None
) -> AsyncIterator[Client]:
    """The official SDK client through ``url`` (its default mode unless ``mode`` is given: 2026-07-28 against
    this server); every response it receives is appended to ``seen``."""

    async def record(response: httpx2.Response) -> None:
        if seen is not None:
            seen.append(response)

    hooks = {"response": [record]}
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30, event_hooks=hooks) as http:
        options: dict[str, Any] = {} if mode is None else {"mode": mode}
        if elicitation is not None:
            options["elicitation_callback"] = elicitation
        async with Client(streamable_http_client(url, http_client=http), **options) as client:
            yield client


def text_of(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


# --- (a) a run paused on a replica that dies resumes on another ------------------------------


async def test_a_run_paused_on_a_replica_killed_by_sigkill_resumes_on_another_through_nginx_and_writes_once(
    fresh_deployment: Deployment,
) -> None:
    deployment = fresh_deployment
    text = unique("killed-holder")
    code = confirmed_program(text)
    async with httpx2.AsyncClient(timeout=30) as http:
        state, paused = await pause(http, deployment.url, code)
        holder = deployment.answered_by(paused.headers)
        assert deployment.writes(text) == [("add", holder.name)]
        holder.kill()
        resumed = await approve(http, deployment.url, code, state)
    resumer = deployment.answered_by(resumed.headers)
    assert resumer is not holder
    assert tool_value(resumed) == resumer.name
    # The write before the pause ran once, on the replica that died; the approved one once, after it.
    assert deployment.writes(text) == [("add", holder.name), ("publish", resumer.name)]


async def test_the_sdk_client_in_its_default_mode_approves_through_nginx_and_resumes_after_the_pausing_replica_dies(
    fresh_deployment: Deployment,
) -> None:
    deployment = fresh_deployment
    text = unique("sdk-killed-holder")
    seen: list[httpx2.Response] = []
    asked: list[Replica] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        # The person is asked once the input-required answer is in; the replica that paused it dies meanwhile.
        [paused] = [response for response in seen if response.request.headers.get("mcp-method") == "tools/call"]
        holder = deployment.answered_by(paused.headers)
        asked.append(holder)
        holder.kill()
        return types.ElicitResult(action="accept", content={"approve": True})

    async with sdk_client(deployment.url, elicitation=person, seen=seen) as client:
        result = await client.call_tool("execute", {"code": confirmed_program(text)})
    [holder] = asked
    # The SDK lists the tools after a call (for its output schema): the retry is its last tools/call.
    retried = [response for response in seen if response.request.headers.get("mcp-method") == "tools/call"][-1]
    resumer = deployment.answered_by(retried.headers)
    assert retried.request.headers.get("mcp-protocol-version") == raw.MODERN
    assert result.is_error is False, text_of(result)
    assert resumer is not holder
    assert json.loads(text_of(result)) == resumer.name
    assert deployment.writes(text) == [("add", holder.name), ("publish", resumer.name)]


# --- (f) a replica that stops hands its running programs off ---------------------------------


async def test_a_replica_stopped_by_sigterm_hands_its_running_program_off_and_the_sdk_client_gets_it_from_another(
    fresh_deployment: Deployment,
) -> None:
    deployment = fresh_deployment
    text = unique("handed-off")
    gate = deployment.gate("drain")
    code = (
        f"await notes.add(text={text!r})\nawait notes.hold(gate='drain')\n"
        f"after = await notes.add(text={text!r})\nreturn after['replica']"
    )
    outcome: list[types.CallToolResult] = []
    seen: list[httpx2.Response] = []

    async def first_write_by() -> Replica:
        def written() -> bool:
            return bool(deployment.writes(text))

        await anyio.to_thread.run_sync(
            lambda: wait_until(written, within_s=60, what="the first write did not happen", log=deployment.accounts)
        )
        [(_, name)] = deployment.writes(text)
        [holder] = [replica for replica in deployment.replicas if replica.name == name]
        return holder

    async with sdk_client(deployment.url, seen=seen) as client:

        async def run() -> None:
            outcome.append(await client.call_tool("execute", {"code": code}))

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            holder = await first_write_by()
            holder.process.send_signal(signal.SIGTERM)
            # Its drain lets the program run for half of --drain-seconds, then hands off what still runs.
            await anyio.to_thread.run_sync(
                lambda: wait_until(
                    lambda: "handing off what still runs" in holder.log_text(),
                    within_s=60,
                    what="the stopping replica did not hand off",
                    log=deployment.accounts,
                )
            )
            with anyio.fail_after(60):
                await anyio.to_thread.run_sync(gate.write_text, "open", abandon_on_cancel=True)
    exit_code = await anyio.to_thread.run_sync(holder.process.wait, 60)
    [result] = outcome
    assert result.is_error is False, text_of(result)
    resumer = json.loads(text_of(result))
    assert resumer != holder.name
    # Each write once: the first on the replica that stopped, the one after the hand-off on another.
    assert deployment.writes(text) == [("add", holder.name), ("add", resumer)]
    assert exit_code == 0
    assert "paused at notes.add as its host handed it off" in holder.log_text()


# --- (b) hundreds of pending approvals cost the others nothing -------------------------------

PENDING = 200
LATENCY_SAMPLES = 40


async def execute_latencies(http: httpx2.AsyncClient, url: str, samples: int = LATENCY_SAMPLES) -> list[float]:
    """Seconds each of ``samples`` sequential executes (one read each) takes through ``url``."""
    code = "return await notes.count(text='latency-probe')"
    taken: list[float] = []
    for index in range(samples):
        started = time.perf_counter()
        answer = await post(http, url, raw.modern_call(code, request_id=index + 10))
        taken.append(time.perf_counter() - started)
        assert tool_value(answer) == 0
    return taken


async def test_two_hundred_approvals_pending_across_the_replicas_leave_executes_at_their_usual_latency(
    shared_deployment: Deployment,
) -> None:
    deployment = shared_deployment
    texts = [unique(f"pending-{index}") for index in range(PENDING)]
    held: dict[str, int] = {replica.name: 0 for replica in deployment.replicas}
    states: dict[str, str] = {}
    async with httpx2.AsyncClient(timeout=30) as http:
        await execute_latencies(http, deployment.url, 10)  # warm every replica's runtime and connections
        before = await execute_latencies(http, deployment.url)
        room = anyio.Semaphore(8)

        async def leave_pending(text: str) -> None:
            async with room:
                state, paused = await pause(http, deployment.url, f"return await notes.publish(text={text!r})")
            states[text] = state
            held[deployment.answered_by(paused.headers).name] += 1

        async with anyio.create_task_group() as group:
            for text in texts:
                group.start_soon(leave_pending, text)
        during = await execute_latencies(http, deployment.url)
        # Still paused, not lost: the first one resumes when approved, and writes once.
        first = f"return await notes.publish(text={texts[0]!r})"
        resumed = await approve(http, deployment.url, first, states[texts[0]])
    before_ms, during_ms = statistics.median(before) * 1000, statistics.median(during) * 1000
    print(
        f"\n{PENDING} approvals pending, held {held}; execute p50 before {before_ms:.1f} ms, "
        f"during {during_ms:.1f} ms (p90 {sorted(before)[35] * 1000:.1f} / {sorted(during)[35] * 1000:.1f} ms)"
    )
    assert all(count > 0 for count in held.values()), held  # round-robin spread them over every replica
    assert during_ms < 3 * before_ms + 50, (before_ms, during_ms)
    assert tool_value(resumed)["replica"] == deployment.answered_by(resumed.headers).name
    assert [len(deployment.writes(text)) for text in texts] == [1] + [0] * (PENDING - 1)


# --- (c) one retry replayed on two replicas at once resumes once ------------------------------


async def test_one_retry_replayed_on_two_replicas_at_once_resumes_on_exactly_one_and_the_other_is_refused_typed(
    shared_deployment: Deployment,
) -> None:
    deployment = shared_deployment
    text = unique("replayed")
    code = confirmed_program(text)
    first, second = deployment.replicas[:2]
    answers: dict[str, raw.Answer] = {}
    async with httpx2.AsyncClient(timeout=30) as http:
        state, _ = await pause(http, deployment.url, code)

        async def replay(replica: Replica) -> None:
            answers[replica.name] = await approve(http, replica.url, code, state)

        async with anyio.create_task_group() as group:
            for replica in (first, second):
                group.start_soon(replay, replica)
    results = {name: answer.result() for name, answer in answers.items()}
    [winner] = [name for name, result in results.items() if result["isError"] is False]
    [loser] = [name for name, result in results.items() if result["isError"] is True]
    assert json.loads(results[winner]["content"][0]["text"]) == winner
    # The model reads SuspensionFailed(reason="already-resumed"), in the words the boundary gives it.
    refusal = results[loser]["content"][0]["text"]
    assert RESUME_REFUSALS["already-resumed"] in refusal, refusal
    assert deployment.writes(text, "publish") == [("publish", winner)]
    assert len(deployment.writes(text, "add")) == 1


# --- (d) a state sealed under another ring -----------------------------------------------------


async def test_a_request_state_sealed_by_a_replica_with_another_key_is_refused_as_invalid_params_and_runs_nothing(
    shared_deployment: Deployment,
) -> None:
    deployment = shared_deployment
    text = unique("foreign-ring")
    code = confirmed_program(text)
    # Same store, same token, another ring: a replica of some other deployment, not behind this nginx.
    foreign = deployment.start("foreign", secret=secrets.token_hex(32))
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            state, _ = await pause(http, foreign.url, code)
            refused = [await approve(http, replica.url, code, state) for replica in deployment.replicas]
            through_nginx = await approve(http, deployment.url, code, state)
    finally:
        assert foreign.terminate() == 0
    for answer in [*refused, through_nginx]:
        [message] = answer.messages()
        assert "result" not in message, message
        assert message["error"]["code"] == types.INVALID_PARAMS, message
    assert deployment.writes(text) == [("add", "foreign")]  # what ran before the pause; nothing since


# --- (e) 2025-11-25 through nginx: sticky connections, and a replica restart ------------------


def session_responses(seen: list[httpx2.Response]) -> list[httpx2.Response]:
    """The responses to requests on a connection (those that presented an ``Mcp-Session-Id``)."""
    return [response for response in seen if "mcp-session-id" in response.request.headers]


async def approve_by_elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    assert "notes.publish" in params.message
    return types.ElicitResult(action="accept", content={"approve": True})


async def test_a_connection_whose_requests_reach_another_replica_than_its_initialize_may_only_read(
    shared_deployment: Deployment,
) -> None:
    # Why nginx hashes connections on the credential, not on Mcp-Session-Id (see nginx.conf.template).
    opener, other = shared_deployment.replicas[:2]
    text = unique("elsewhere")
    write = f"return await notes.add(text={text!r})"
    async with httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, opener.url, TOKEN, raw.FORM_ELICITATION)
        status, elsewhere = await raw.execute(http, other.url, TOKEN, session, write)
        assert status == 200
        assert elsewhere["reason"] == "read-only-grant", elsewhere
        status, at_home = await raw.execute(http, opener.url, TOKEN, session, write)
    assert status == 200
    assert at_home["replica"] == opener.name, at_home
    assert shared_deployment.writes(text) == [("add", opener.name)]


async def test_a_connection_through_nginx_stays_on_one_replica_and_an_approval_by_elicitation_resumes_there(
    shared_deployment: Deployment,
) -> None:
    deployment = shared_deployment
    text = unique("sticky")
    seen: list[httpx2.Response] = []
    async with sdk_client(deployment.url, mode="legacy", elicitation=approve_by_elicitation, seen=seen) as client:
        for _ in range(4):
            counted = await client.call_tool("execute", {"code": f"return await notes.count(text={text!r})"})
            assert json.loads(text_of(counted)) == 0
        result = await client.call_tool("execute", {"code": confirmed_program(text)})
    on_connection = {deployment.answered_by(response.headers).name for response in session_responses(seen)}
    [holder] = on_connection
    assert result.is_error is False, text_of(result)
    assert json.loads(text_of(result)) == holder
    assert deployment.writes(text) == [("add", holder), ("publish", holder)]
    assert seen[0].request.headers.get("mcp-protocol-version") in (None, raw.PROTOCOL_VERSION)


async def test_a_client_whose_replica_restarts_resumes_elsewhere_reading_only_until_it_initializes_again(
    fresh_deployment: Deployment,
) -> None:
    deployment = fresh_deployment
    text = unique("restarted")
    count = f"return await notes.count(text={text!r})"
    write = f"return await notes.add(text={text!r})"
    seen: list[httpx2.Response] = []
    async with sdk_client(deployment.url, mode="legacy", elicitation=approve_by_elicitation, seen=seen) as client:
        assert json.loads(text_of(await client.call_tool("execute", {"code": count}))) == 0
        holder = deployment.answered_by(session_responses(seen)[-1].headers)
        assert holder.terminate() == 0  # SIGTERM: it drains and goes; its connection record stays in the store
        # The hash now sends the connection to a replica that does not hold it: it resumes it from the store.
        read = await client.call_tool("execute", {"code": count})
        resumer = deployment.answered_by(session_responses(seen)[-1].headers)
        assert resumer is not holder
        assert read.is_error is False, text_of(read)
        assert json.loads(text_of(read)) == 0
        # A resumed connection knows nothing of the client's capabilities, so it may only read.
        refused = json.loads(text_of(await client.call_tool("execute", {"code": write})))
        assert refused["refused"] is True, refused
        restarted = deployment.restart(holder)
        # Back on the hash's first choice, restarted and holding nothing: resumed again, still read-only.
        again = await client.call_tool("execute", {"code": count})
        assert deployment.answered_by(session_responses(seen)[-1].headers) is restarted
        assert json.loads(text_of(again)) == 0
        refused_again = json.loads(text_of(await client.call_tool("execute", {"code": write})))
        assert refused_again["refused"] is True, refused_again
    assert deployment.writes(text) == []
    # Initialized again: a fresh connection, with the client's capabilities, may write and be asked.
    async with sdk_client(deployment.url, mode="legacy", elicitation=approve_by_elicitation) as client:
        done = await client.call_tool("execute", {"code": confirmed_program(text)})
    assert done.is_error is False, text_of(done)
    assert [op for op, _ in deployment.writes(text)] == ["add", "publish"]


# --- (g) a client that leaves through nginx ------------------------------------------------------


def waited_on(gate: Path) -> int | None:
    """A write end of ``gate`` once a hold reads it, else ``None``: kept open, the hold goes on waiting."""
    try:
        return os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # nobody reads it yet
            return None
        raise


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_a_client_that_leaves_through_nginx_has_its_run_stopped_on_the_replica(
    shared_deployment: Deployment, revision: str
) -> None:
    deployment = shared_deployment
    name = unique("left").replace("-", "_")
    gate = deployment.gate(name)
    writer: list[int] = []

    def reading() -> bool:
        fd = waited_on(gate)
        writer.extend([] if fd is None else [fd])
        return bool(writer)

    try:
        code = f"return await notes.hold(gate={name!r})"
        async with httpx2.AsyncClient(timeout=30) as http, anyio.create_task_group() as group:
            if revision == raw.MODERN:
                group.start_soon(post, http, deployment.url, raw.modern_call(code))
            else:
                session = await raw.open_session(http, deployment.url, TOKEN)
                group.start_soon(raw.execute, http, deployment.url, TOKEN, session, code)
            await anyio.to_thread.run_sync(
                lambda: wait_until(reading, within_s=60, what="the hold did not begin", log=deployment.accounts)
            )
            group.cancel_scope.cancel()  # the client closes its connection to nginx, mid-run
        # Nginx closes its own connection to the replica, which stops the run: its hold is cancelled.
        await anyio.to_thread.run_sync(
            lambda: wait_until(
                lambda: bool(deployment.writes(name, "hold-cancelled")),
                within_s=60,
                what="the run whose client left was not stopped",
                log=deployment.accounts,
            )
        )
    finally:
        for fd in writer:
            os.close(fd)  # the abandoned read ends
