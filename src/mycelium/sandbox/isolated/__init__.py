"""A Monty sandbox whose guest values never touch the serving process: Monty in child processes.

:class:`IsolatedSandbox` runs each program in a Python child process of its own that hosts
a :class:`~mycelium.sandbox.monty.MontySandbox`. pydantic-monty turns a guest's values into
Python objects while holding the interpreter lock; here that happens in the child, which
checks them against the request's bounds before sending anything. The host and a child
speak :mod:`mycelium.sandbox.wire`'s envelopes (and a few of their own, for the adapter's
limits and for pausing: ``_messages``) in length-prefixed frames (``_frames``) that the host
bounds before reading.

One job a module: ``_sandbox`` (the adapter and its children), ``_process`` (one child seen
from the host, and the host's side of a run's calls), ``_child`` (the child's own program),
``_messages`` and ``_frames``.
"""

from ._sandbox import IsolatedSandbox

__all__ = ["IsolatedSandbox"]
