"""OpenTelemetry spans: one per execute, a child per operation call.

Spans go to whatever tracer provider the host configured with the OpenTelemetry SDK.
Without one nothing is made at all, not even no-op spans: the check is one lookup per
execute and per call. Without ``opentelemetry-api`` installed (the ``tracing`` extra)
there is nothing to check. A span carries identities, paths, ordinals and outcomes,
never a program's code, an operation's arguments or its result.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

try:
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode
except ImportError:  # the tracing extra is not installed: spans are never made
    trace = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = ["active", "operation_span", "outcome", "run_span"]

_NAME = "mycelium"
_cached: tuple[object, Tracer] | None = None


def _tracer() -> Tracer | None:
    """The host's tracer, or ``None`` while no SDK provider is configured (or the API is not installed)."""
    global _cached
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    if _cached is None or _cached[0] is not provider:
        _cached = (provider, provider.get_tracer(_NAME))
    return _cached[1]


def active() -> bool:
    """Whether spans are recorded (a host configured an SDK tracer provider)."""
    return _tracer() is not None


def run_span(name: str, **attributes: str | int | None) -> AbstractContextManager[Span | None]:
    """A span for one execute (or the resumed part of one), current while it runs; ``None`` when off."""
    return _span(f"mycelium.{name}", attributes)


def operation_span(**attributes: str | int | None) -> AbstractContextManager[Span | None]:
    """A span for one operation call, the child of its execute's; ``None`` when off."""
    return _span("mycelium.operation", attributes)


def _span(name: str, attributes: dict[str, str | int | None]) -> AbstractContextManager[Span | None]:
    tracer = _tracer()
    if tracer is None:
        return _NO_SPAN  # every execute's path when tracing is off: nothing is made
    return tracer.start_as_current_span(name, attributes=_present(attributes))


_NO_SPAN: AbstractContextManager[None] = nullcontext()


def outcome(span: Span | None, code: str, *, failed: bool, **attributes: str | int | bool | None) -> None:
    """Record how a run or a call ended on its span (if there is one)."""
    if span is None:
        return
    span.set_attribute("mycelium.outcome", code)
    for key, value in attributes.items():
        if value is not None:
            span.set_attribute(f"mycelium.{key}", value)
    if failed:
        span.set_status(Status(StatusCode.ERROR, code))


def _present(attributes: dict[str, str | int | None]) -> dict[str, str | int]:
    return {f"mycelium.{key}": value for key, value in attributes.items() if value is not None}
