"""``serve --otlp-endpoint``: the server's spans, sent by OTLP over HTTP to a collector.

The option (or ``OTEL_EXPORTER_OTLP_ENDPOINT``) is the collector's base URL, as the
OpenTelemetry specification defines that variable: spans go to ``/v1/traces`` under it. The
process gets an SDK tracer provider, whose service name is the server's name, with a batch
processor in front of the exporter; stopping the server shuts it down, which sends what is
still batched. The exporter reads its other ``OTEL_EXPORTER_OTLP_*`` settings (headers,
timeout, compression, certificates) from the environment itself. Nothing here names more of
the URL than its scheme, host and port: headers and user info may hold a collector's key.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from urllib.parse import urlsplit

from ._console import logger

__all__ = ["OTLP_ENDPOINT_ENV", "OtlpUnavailable", "exporting_spans", "traces_url"]

OTLP_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
_TRACES_PATH = "/v1/traces"
_EXTRA = "pip install 'mycelium-codemode[otlp]'"


class OtlpUnavailable(Exception):
    """The exporter is not installed; the message says which extra brings it."""


def traces_url(endpoint: str) -> str:
    """Where spans go for the collector at ``endpoint``; raises ``ValueError`` for a URL that names no collector."""
    parts = urlsplit(endpoint.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        # Not echoed: it may hold a key.
        raise ValueError("it must be the http:// or https:// URL of an OTLP collector, such as http://127.0.0.1:4318")
    return endpoint.strip().rstrip("/") + _TRACES_PATH


@contextlib.contextmanager
def exporting_spans(endpoint: str, service_name: str) -> Iterator[None]:
    """Send every span of this process to the collector at ``endpoint`` until the block ends, then flush them.

    Raises :class:`OtlpUnavailable` before anything is set up when the ``otlp`` extra is missing.
    """
    url = traces_url(endpoint)
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise OtlpUnavailable(
            f"--otlp-endpoint needs the OpenTelemetry SDK and its OTLP exporter ({exc.name} is missing): {_EXTRA}"
        ) from None
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    trace.set_tracer_provider(provider)
    logger.info("sending spans to the OTLP collector at %s as service %r", _shown(url), service_name)
    try:
        yield
    finally:
        provider.shutdown()  # sends what is still batched


def _shown(url: str) -> str:
    """The URL's scheme, host and port: never its user info, path or query, which may hold a key."""
    try:
        parts = urlsplit(url.strip())
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "this URL"
    return f"{parts.scheme}://{parts.hostname}{port}" if parts.scheme and parts.hostname else "this URL"
