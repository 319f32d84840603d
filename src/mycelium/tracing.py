"""OpenTelemetry spans: one per execute, a child per operation call.

Install the ``tracing`` extra and configure the OpenTelemetry SDK; spans then go to the
tracer provider the host configured. Without one nothing is made at all, not even no-op
spans. A span carries identities, paths, ordinals and outcomes, never a program's code,
an operation's arguments or its result. See ``docs/tracing.md``.
"""

from ._tracing import active

__all__ = ["active"]
