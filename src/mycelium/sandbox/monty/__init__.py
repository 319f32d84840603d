"""The default sandbox: Monty, a Python-subset interpreter run in a pool of worker processes.

Each execute checks a worker out of the pool for a fresh session, so nothing survives
between runs. The guest sees every module alias as a top-level name and the same tree
under ``env``; operation calls cross back to the host as async callbacks. Host files,
network, environment and modules are out of reach; the only host directory a guest can
ever see is the optional per-session workspace mounted at ``/workspace``.

Limits: memory, recursion depth, operation calls, printed bytes, each sleep and their
total are enforced by Monty; the run's wall-clock budget is enforced by the runtime
(Monty's own clock does not count time spent in host calls or sleeping), which aborts
the signal. An abort cancels the feed, which kills that worker at once; the pool
replaces it. The worker is watched while a program runs, so one that dies ends the run
within about 50 ms.

What crosses is exactly JSON, checked as it crosses and bounded by the request's limits
(see ``_conversions`` for the texts Monty hands over in place of values it cannot
convert). The guest's namespaces are built once per revision and shared by its runs.

One job a module: ``_sandbox`` (``MontySandbox``: configuration, one run from start to
end, the workspace mount), ``_pool`` (the worker processes), ``_watch`` (noticing a worker
that died), ``_namespaces`` (the guest's modules of one revision), ``_calls`` (the calls of
one run, each owned until it settles), ``_stepping`` (driving a run step by step so it can
pause), ``_fed_pause`` (pausing a run fed whole, from inside its deferred call), ``_paused``
(a paused run's byte form), ``_outcomes`` (a call's outcome as the guest gets it),
``_errors`` (Monty's errors as typed failures), ``_type_check``, ``_output`` (what a run
printed) and ``_conversions``.
"""

from ._sandbox import MontySandbox, WorkspaceResolver

__all__ = ["MontySandbox", "WorkspaceResolver"]
