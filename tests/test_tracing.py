"""Tracing: a span per execute with a child per operation call, through the OpenTelemetry SDK."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from mycelium import Access, AcquireContext, Acquired, Module, Runtime, source, tracing
from mycelium.sandbox.monty import MontySandbox

SECRET = "the-argument-nobody-may-see"


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # The host's provider, for these tests only (the global one can be set once per process).
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    yield exporter
    provider.shutdown()


@pytest.fixture
async def runtime() -> AsyncIterator[Runtime]:
    notes = Module(id="notes-v1", name="notes")

    @notes.operation(access="read")
    async def search(query: str) -> list[str]:
        """Find notes."""
        return [query.upper()]

    @notes.operation()
    def fail() -> int:
        raise RuntimeError("host detail")

    async with Runtime(modules=[notes], sandbox=MontySandbox(), access=Access(grants={"notes-v1": "read"})) as runtime:
        yield runtime


def named(spans: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in spans.get_finished_spans() if span.name == name]


async def test_an_execute_is_one_span_with_a_child_span_per_operation_call(
    spans: InMemorySpanExporter, runtime: Runtime
) -> None:
    code = f"a = await notes.search(query={SECRET!r})\nb = await notes.fail()\nreturn [a, b]"
    async with runtime.lease() as lease:
        result = await lease.execute_tool.run(code, tool_call_id="call-7")

    (execute,) = named(spans, "mycelium.execute")
    calls = sorted(named(spans, "mycelium.operation"), key=lambda span: span.attributes["mycelium.ordinal"])  # type: ignore[index]
    assert execute.attributes is not None
    assert execute.attributes["mycelium.tool_call_id"] == "call-7"
    assert str(execute.attributes["mycelium.execution_id"]).startswith("exec-")
    assert execute.attributes["mycelium.revision"] == lease.revision
    assert execute.attributes["mycelium.outcome"] == "ok"
    found, refused = result.value  # type: ignore[misc]
    assert found == [SECRET.upper()]
    assert refused["reason"] == "read-only-grant"  # type: ignore[index, call-overload]
    assert [dict(call.attributes or {}) for call in calls] == [
        {
            "mycelium.module_id": "notes-v1",
            "mycelium.path": "notes.search",
            "mycelium.ordinal": 0,
            "mycelium.outcome": "ok",
            "mycelium.access": "allowed",
        },
        {
            "mycelium.module_id": "notes-v1",
            "mycelium.path": "notes.fail",
            "mycelium.ordinal": 1,
            "mycelium.outcome": "refused",
            "mycelium.access": "read-only-grant",
        },
    ]
    for call in calls:
        assert call.parent is not None
        assert call.parent.span_id == execute.context.span_id
    recorded = [str(value) for span in spans.get_finished_spans() for value in (span.attributes or {}).values()]
    assert not any(SECRET in value or "await" in value for value in recorded)  # no code, no arguments


async def test_a_failed_execute_and_a_failed_call_are_marked_as_errors(
    spans: InMemorySpanExporter, runtime: Runtime
) -> None:
    async with runtime.lease(access=Access()) as lease:
        await lease.execute_tool.run("return await notes.fail()")

    (execute,) = named(spans, "mycelium.execute")
    (call,) = named(spans, "mycelium.operation")
    assert execute.status.status_code is StatusCode.ERROR
    assert execute.attributes is not None
    assert execute.attributes["mycelium.outcome"] == "capability-failed"
    assert call.status.status_code is StatusCode.ERROR
    assert call.attributes is not None
    assert str(call.attributes["mycelium.reference"]).startswith("ref-")


def test_without_a_configured_sdk_no_span_is_made() -> None:
    assert not tracing.active()


async def test_a_source_acquisition_is_a_span_with_the_source_and_its_version(spans: InMemorySpanExporter) -> None:
    async def release() -> None:
        return None

    async def acquire(context: AcquireContext) -> Acquired:
        return Acquired(version="v7", modules=[Module(id="computer-a", name="computer")], release=release)

    async with Runtime(sources=[source(id="current-computer", acquire=acquire)], sandbox=MontySandbox()) as runtime:
        async with runtime.lease():
            pass

    (acquired,) = named(spans, "mycelium.acquire")
    assert dict(acquired.attributes or {}) == {
        "mycelium.source_id": "current-computer",
        "mycelium.outcome": "ok",
        "mycelium.version": "v7",
    }


def test_mycelium_runs_without_the_tracing_extra_installed() -> None:
    program = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None  # as if opentelemetry-api were not installed\n"
        "import anyio\n"
        "from mycelium import Module, Runtime, tracing\n"
        "from mycelium.sandbox.monty import MontySandbox\n"
        "ping = Module(id='ping', name='ping')\n"
        "@ping.operation(access='read')\n"
        "async def pong() -> str:\n"
        "    '''Answer.'''\n"
        "    return 'pong'\n"
        "async def main() -> None:\n"
        "    async with Runtime(modules=[ping], sandbox=MontySandbox()) as runtime, runtime.lease() as lease:\n"
        "        print(tracing.active(), (await lease.execute_tool.run('return await ping.pong()')).text)\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, 'False "pong"\n'), done.stderr
