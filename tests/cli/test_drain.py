"""`mycelium serve` drains on SIGTERM: new work gets 503, the requests in flight finish, the process exits 0.

Every test runs a real `mycelium serve` process. The slow calls are the slow app's: each says
through a FIFO that it is running, and the test lets it finish through another, so nothing
waits on time; the drain's start is the line the server logs once it refuses new work.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import mcp_types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp import raw_http as raw

from .replicas import SLOW_APP, TOKEN, Replica, replica

DRAINING = "draining: new requests get 503"
ERAS = ["2026-07-28", "connection"]


@dataclass
class Fifos:
    """The slow app's two FIFOs: it writes to ``started`` when a call runs and reads ``release`` to finish."""

    started: Path
    release: Path

    @property
    def env(self) -> dict[str, str]:
        return {"SLOW_STARTED": str(self.started), "SLOW_RELEASE": str(self.release)}

    async def running(self) -> None:
        """Return once a slow call says it runs."""
        with anyio.fail_after(30):
            await anyio.to_thread.run_sync(self.started.read_text, abandon_on_cancel=True)

    async def let_finish(self, answer: str) -> None:
        """Let the slow call that waits finish with ``answer``."""
        with anyio.fail_after(30):
            await anyio.to_thread.run_sync(self.release.write_text, answer, abandon_on_cancel=True)


@pytest.fixture
def fifos(tmp_path: Path) -> Iterator[Fifos]:
    made = Fifos(tmp_path / "started.fifo", tmp_path / "release.fifo")
    os.mkfifo(made.started)
    os.mkfifo(made.release)
    yield made
    # A test that failed may leave a thread blocked opening a FIFO; opening the other end lets it go.
    for path in (made.started, made.release):
        for mode in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
            with contextlib.suppress(OSError):
                os.close(os.open(path, mode))


async def call(http: httpx2.AsyncClient, served: Replica, era: str, code: str) -> raw.Answer:
    """One execute of ``code``: over 2026-07-28, or on a connection opened for it."""
    if era == "2026-07-28":
        return await raw.send(http, "POST", served.url, sent=raw.modern_headers(TOKEN), body=raw.modern_call(code))
    session = await raw.open_session(http, served.url, TOKEN)
    sent = raw.headers(TOKEN, session=session)
    return await raw.send(http, "POST", served.url, sent=sent, body=raw.call_execute(code))


async def new_request(http: httpx2.AsyncClient, served: Replica) -> raw.Answer:
    return await raw.send(http, "POST", served.url, sent=raw.modern_headers(TOKEN), body=raw.modern_call("return 1"))


def refused_while_draining(answer: raw.Answer) -> bool:
    return answer.status == 503 and answer.headers.get("retry-after") == "1"


@pytest.mark.parametrize("era", ERAS)
async def test_sigterm_refuses_new_requests_with_503_while_the_one_in_flight_finishes_then_exits_0(
    tmp_path: Path, fifos: Fifos, era: str
) -> None:
    outcome: list[raw.Answer] = []
    async with (
        replica(tmp_path / "data", app=[SLOW_APP], env=fifos.env) as served,
        httpx2.AsyncClient(timeout=30) as http,
    ):

        async def slow() -> None:
            outcome.append(await call(http, served, era, "return await slow.wait()"))

        async with anyio.create_task_group() as group:
            group.start_soon(slow)
            await fifos.running()
            served.process.send_signal(signal.SIGTERM)
            await served.says(DRAINING)
            refused = await new_request(http, served)
            health = await http.get(f"{served.base}/healthz")
            await fifos.let_finish("finished")
        assert await served.exit_code() == 0
    assert refused_while_draining(refused), (refused.status, refused.headers)
    assert (health.status_code, health.json()) == (503, {"status": "unavailable"})
    [finished] = outcome
    assert finished.status == 200
    assert json.loads(finished.result()["content"][0]["text"]) == "finished"
    assert finished.result()["isError"] is False


@pytest.mark.parametrize("era", ERAS)
async def test_a_request_still_running_at_the_drain_deadline_is_cancelled_and_the_replica_exits_0(
    tmp_path: Path, fifos: Fifos, era: str
) -> None:
    outcome: list[raw.Answer] = []
    async with (
        replica(tmp_path / "data", app=[SLOW_APP], options=["--drain-seconds", "1"], env=fifos.env) as served,
        httpx2.AsyncClient(timeout=30) as http,
    ):

        async def hanging() -> None:
            outcome.append(await call(http, served, era, "return await slow.hang()"))

        async with anyio.create_task_group() as group:
            group.start_soon(hanging)
            await fifos.running()
            served.process.send_signal(signal.SIGTERM)
        assert await served.exit_code() == 0
    assert served.log_holds("cancelling 1 request(s) still running after 1 s")
    assert not served.log_holds("ERROR")
    [cancelled] = outcome
    if era == "2026-07-28":
        # Its answer had not begun: the client is told to retry, as a new request would be.
        assert refused_while_draining(cancelled), (cancelled.status, cancelled.text)
    else:
        # Its event stream had begun: the stream ends whole, with no answer in it.
        assert cancelled.status == 200
        assert not [message for message in cancelled.messages() if "result" in message or "error" in message]


async def test_a_second_signal_stops_at_once_without_waiting_for_the_drain(tmp_path: Path, fifos: Fifos) -> None:
    outcome: list[raw.Answer] = []
    async with (
        replica(tmp_path / "data", app=[SLOW_APP], options=["--drain-seconds", "3600"], env=fifos.env) as served,
        httpx2.AsyncClient(timeout=30) as http,
    ):

        async def hanging() -> None:
            outcome.append(await call(http, served, "2026-07-28", "return await slow.hang()"))

        async with anyio.create_task_group() as group:
            group.start_soon(hanging)
            await fifos.running()
            served.process.send_signal(signal.SIGTERM)
            await served.says(DRAINING)
            served.process.send_signal(signal.SIGINT)  # Ctrl-C, an hour before the drain would end
        assert await served.exit_code() == 0
    assert served.log_holds("stopping at once")
    assert not served.log_holds("ERROR")
    [stopped] = outcome
    assert refused_while_draining(stopped), (stopped.status, stopped.text)


async def test_the_answer_to_a_confirmation_asked_before_the_drain_still_reaches_the_run(tmp_path: Path) -> None:
    asked, answer = anyio.Event(), anyio.Event()

    async def approve(context: object, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.set()
        await answer.wait()
        return mcp_types.ElicitResult(action="accept", content={"approve": True})

    outcome: list[mcp_types.CallToolResult] = []
    async with replica(tmp_path / "data") as served, httpx2.AsyncClient(timeout=30) as http:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client_http,
            Client(
                streamable_http_client(served.url, http_client=client_http),
                mode="legacy",
                elicitation_callback=approve,
            ) as client,
        ):
            await client.list_tools()  # the client checks results against the listed schema: listed before the drain

            async def delete() -> None:
                outcome.append(await client.call_tool("execute", {"code": "return await notes.delete(id=1)"}))

            async with anyio.create_task_group() as group:
                group.start_soon(delete)
                with anyio.fail_after(30):
                    await asked.wait()
                served.process.send_signal(signal.SIGTERM)
                await served.says(DRAINING)
                refused = await new_request(http, served)
                answer.set()  # the client's reply is a POST too: it continues the call in flight
        assert await served.exit_code() == 0
    assert refused_while_draining(refused)
    [deleted] = outcome
    assert not deleted.is_error
    assert json.loads(deleted.content[0].text) == {"id": 1, "deleted": True}  # type: ignore[union-attr]


async def test_an_idle_replica_exits_0_at_once_on_sigterm_even_with_an_event_stream_open(tmp_path: Path) -> None:
    async with replica(tmp_path / "data") as served, httpx2.AsyncClient(timeout=30) as http:
        session = await raw.open_session(http, served.url, TOKEN)
        async with http.stream("GET", served.url, headers=raw.headers(TOKEN, session=session)) as stream:
            assert stream.status_code == 200  # an event stream never ends by itself; the drain does not wait for it
            served.process.send_signal(signal.SIGTERM)
            assert await served.exit_code() == 0
    assert served.log_holds("draining: new requests get 503; 0 in flight")
