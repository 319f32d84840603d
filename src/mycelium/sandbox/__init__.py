"""The sandbox boundary: what a sandbox adapter receives and must return, and the helpers it may use.

Mycelium never evaluates a program itself. A :class:`Sandbox` gets a
:class:`SandboxRequest` (the code, its identity and limits, and the admitted bindings)
plus an :class:`~mycelium.AbortSignal`, runs the program in isolation, and returns its
JSON value or raises :class:`SandboxError` with a typed failure. Derive an adapter from
:class:`Sandbox`; its defaults say what an adapter says by saying nothing (its
:class:`LanguageFacts`, notes, unenforced limits, whether it can pause).

A sandbox that can pause a run (one that :attr:`~Sandbox.suspends`) does so when a request
says it may and a call's binding raises :class:`DecisionDeferred`: it lets the run's other calls
settle, captures the run, and raises :class:`Suspended` carrying its state. Later, perhaps
in another process, :meth:`Sandbox.resume` continues from that state with the paused call's
outcome.

The guest helpers project a request's flat bindings into the namespaces a program sees
(:func:`namespace_tree`), shape a call's input (:func:`guest_input`), and give transports
that cannot use dots one flat name per operation (:func:`sandbox_provider_operation_name`).
:mod:`mycelium.sandbox.wire` holds the envelopes for a program that runs across a transport,
and :mod:`mycelium.sandbox.monty` the default adapter. This package knows nothing of
leases, runtimes or MCP.
"""

from .._access import DecisionDeferred
from .._bindings import BindingCallback
from .._language import LanguageFacts
from ..failures import SandboxError
from ._contract import (
    UNENFORCED_LIMIT_NOTICES,
    PendingCalls,
    Sandbox,
    SandboxRequest,
    Suspended,
    UnenforcedLimit,
    Unrestorable,
)
from ._namespaces import (
    Leaf,
    NamespaceTree,
    guest_input,
    namespace_tree,
    positional_name,
    sandbox_operation_path,
    sandbox_provider_operation_name,
)

__all__ = [
    "UNENFORCED_LIMIT_NOTICES",
    "BindingCallback",
    "DecisionDeferred",
    "LanguageFacts",
    "Leaf",
    "NamespaceTree",
    "PendingCalls",
    "Sandbox",
    "SandboxError",
    "SandboxRequest",
    "Suspended",
    "UnenforcedLimit",
    "Unrestorable",
    "guest_input",
    "namespace_tree",
    "positional_name",
    "sandbox_operation_path",
    "sandbox_provider_operation_name",
]
