"""`mycelium serve --otlp-endpoint`: spans sent by OTLP over HTTP to a real receiver on 127.0.0.1.

The receiver is a small HTTP server in this process that accepts ``POST /v1/traces`` and
keeps each body, decoded with the OpenTelemetry protobuf definitions, as a collector would.
The server is a real `mycelium serve` process; the client is the official SDK's. Stopping
the server flushes its spans, so they have all arrived once the process has exited.
"""

from __future__ import annotations

import gzip
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from typer.testing import CliRunner

from mycelium.cli import cli
from tests.cli.test_serve import connected, serving, text_of
from tests.support.paths import EXAMPLES

MARKER = "pangolin-tapioca-9083"
TOKEN = "otlp-test-token-" + "t" * 20


@dataclass
class Receiver:
    """What an OTLP/HTTP collector received: each request's path and body."""

    url: str
    posts: list[tuple[str, bytes]] = field(default_factory=list)

    def spans(self) -> list[dict[str, Any]]:
        """Every span received, with its service's name, as plain values."""
        found = []
        for path, body in self.posts:
            assert path == "/v1/traces"
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                service = _attributes(resource.resource.attributes).get("service.name")
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        found.append(
                            {
                                "service": service,
                                "name": span.name,
                                "id": span.span_id,
                                "parent": span.parent_span_id,
                                "attributes": _attributes(span.attributes),
                            }
                        )
        return found


def _attributes(pairs: Any) -> dict[str, object]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: AnyValue) -> object:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind is not None else None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    posts: list[tuple[str, bytes]] = []

    class Collect(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            posts.append((self.path, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass  # the test reads what arrived, not the server's chatter

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collect)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Receiver(f"http://127.0.0.1:{server.server_address[1]}", posts)
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.mark.parametrize("given", ["option", "environment"])
async def test_serve_sends_each_executes_spans_to_the_otlp_endpoint_under_its_name_and_never_the_program(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    options = ["--name", "notes-server"]
    if given == "option":
        options += ["--otlp-endpoint", receiver.url]
    else:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url + "/")
    code = f'found = await notes.search(text="{MARKER}")\nprint("{MARKER}")\nreturn ["{MARKER}", found]'
    async with serving(tmp_path / "data", tmp_path / "server.log", token=TOKEN, options=options) as served:
        async with connected(served.url, TOKEN) as client:
            result = await client.call_tool("execute", {"code": code})
        assert MARKER in text_of(result)
        assert await served.stop() == 0
    spans = receiver.spans()
    assert {span["service"] for span in spans} == {"notes-server"}
    [execute] = [span for span in spans if span["name"] == "mycelium.execute"]
    [call] = [span for span in spans if span["name"] == "mycelium.operation"]
    assert str(execute["attributes"]["mycelium.execution_id"]).startswith("exec-")
    assert execute["attributes"]["mycelium.outcome"] == "ok"
    assert "mycelium.tool_call_id" in execute["attributes"]
    assert call["parent"] == execute["id"]
    assert call["attributes"]["mycelium.path"] == "notes.search"
    assert call["attributes"]["mycelium.module_id"] == "example-notes"
    assert call["attributes"]["mycelium.ordinal"] == 0
    assert call["attributes"]["mycelium.access"] == "allowed"
    assert all(MARKER.encode() not in body for _, body in receiver.posts)
    assert all(TOKEN.encode() not in body for _, body in receiver.posts)


def test_serve_without_the_otlp_extra_names_the_extra_to_install_and_exits_2(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As if the exporter were not installed: importing it fails.
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    result = CliRunner().invoke(
        cli, ["serve", str(EXAMPLES / "notes_app.py"), "--port", "0", "--otlp-endpoint", "http://127.0.0.1:4318"]
    )
    assert result.exit_code == 2, result.output
    assert "pip install 'mycelium-codemode[otlp]'" in result.stderr
    assert "Traceback" not in result.output


def test_serve_refuses_an_otlp_endpoint_that_is_no_url_without_echoing_it() -> None:
    endpoint = "collector.test:4318/?api-key=hush-hush-key"
    result = CliRunner().invoke(cli, ["serve", str(EXAMPLES / "notes_app.py"), "--otlp-endpoint", endpoint])
    assert result.exit_code == 2
    assert "--otlp-endpoint" in result.output
    assert "http://127.0.0.1:4318" in result.output  # what a good one looks like
    assert "hush-hush-key" not in result.output
