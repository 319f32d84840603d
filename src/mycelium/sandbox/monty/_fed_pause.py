"""Pausing a run that is fed whole, from inside the call whose decision is deferred.

Driving a run step by step costs Monty two round trips per call (the future, then its
outcome) where a fed run costs one. A fed run can be captured too (``session.dump()``
from inside a call's callback), but only deterministically when nothing else is in
flight at that moment. Measured with pydantic-monty 1.4.0: when a call of a gather
settles just before another call's callback dumps, the dump holds its outcome in about
70% of runs and waits for it again in the rest, and nothing tells the host which (a
callback does not know Monty's call ids); a sleep in flight is in the dump with no
length. So only a program in which that cannot happen is fed while it may pause:
:func:`pausable_fed` says which. In such a program every operation call is awaited
where it is made and nothing else runs meanwhile, so Monty awaits each call in place,
every earlier call's outcome has reached the program, and the dump holds the deferred
call itself, announced again when the state is loaded.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Awaitable, Iterable
from typing import TYPE_CHECKING, NoReturn

from pydantic_monty import AsyncMontySession, MontyError

from ..._access import DecisionDeferred
from ...failures import BadResponse, SandboxError
from .._contract import Suspended
from ._paused import ANNOUNCED, _Paused

if TYPE_CHECKING:
    from ._calls import _Call, _GuestRun

# Each of these can leave a call or a sleep in flight, or let the program go on past the
# pause: concurrency (asyncio), sleeps (their budget is the whole run's), code the check
# cannot see (exec, eval, attribute lookups by name), and catching the exception that ends
# the feed at the pause (try, with).
_BARRED_NAMES = frozenset(
    {"asyncio", "sleep", "exec", "eval", "compile", "getattr", "globals", "locals", "vars", "__import__"}
)
_BARRED_NODES = (ast.Try, ast.TryStar, ast.With, ast.AsyncWith, ast.AsyncFor, ast.AsyncFunctionDef)
_PARSE_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_MAX_CHECKED_CHARS = 2048
"""The longest program checked (on the event loop: 0.3-0.7 ms a KiB on the 2-core machine); a longer one is stepped."""


class _PausedHere(Exception):
    """Ends a fed run at its pause: raised in the program at the deferred call, which it cannot catch."""


def pausable_fed(code: str, namespaces: Iterable[str]) -> bool:
    """Whether ``code`` can pause while fed whole: every operation call is awaited where it
    is made, and nothing can run beside it, sleep, hide code from this check or catch.

    A program it cannot parse as Python, or longer than 2 KiB, is driven step by step, as any
    other that fails.
    """
    return len(code) <= _MAX_CHECKED_CHARS and _pausable(code, frozenset(namespaces))


@functools.lru_cache(maxsize=256)
def _pausable(code: str, namespaces: frozenset[str]) -> bool:
    try:
        tree = compile(code, "<program>", "exec", flags=_PARSE_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    awaited: set[int] = set()  # the namespace names that start an awaited call's path
    names: list[ast.Name] = []
    for node in ast.walk(tree):
        if isinstance(node, _BARRED_NODES):
            return False
        if isinstance(node, ast.Name):
            if node.id in _BARRED_NAMES:
                return False
            names.append(node)
        elif isinstance(node, ast.Attribute) and node.attr in _BARRED_NAMES:
            return False
        elif isinstance(node, ast.alias) and (node.asname is not None or node.name.split(".")[0] in _BARRED_NAMES):
            return False  # a namespace under another name, or a barred module
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in namespaces | _BARRED_NAMES:
            return False  # an operation under a name of its own
        elif isinstance(node, ast.Await) and isinstance(node.value, ast.Call):
            root = node.value.func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name):
                awaited.add(id(root))
    # A namespace used any other way (kept, passed, called without await, rebound) could
    # leave a call in flight.
    return all(name.id not in namespaces or id(name) in awaited for name in names)


class _FedPause:
    """Captures a fed run at the call whose decision is deferred, from inside that call.

    The run's calls hand their deferral here (:meth:`capture`); the session is dumped
    while Monty waits on that call, and the program is ended there by an exception it
    cannot catch (see :func:`pausable_fed`). :meth:`feed` then raises the pause.
    """

    def __init__(self, run: _GuestRun) -> None:
        self._run = run
        self.session: AsyncMontySession | None = None
        self._ended: Suspended | SandboxError | None = None  # how the program ended at the call

    async def capture(self, call: _Call, deferral: DecisionDeferred) -> NoReturn:
        """Dump the run paused at ``call``; end the program there."""
        self._ended = await self._captured(call, deferral)
        # Raised where no frame holds the state: Monty may keep this exception, and its traceback, a while.
        raise _PausedHere("the run paused here")

    async def _captured(self, call: _Call, deferral: DecisionDeferred) -> Suspended | SandboxError:
        run = self._run
        if self.session is None or any(other is not call and not other.settled for other in run.calls):
            return SandboxError(BadResponse())  # what pausable_fed rules out: the dump would not say what became of it
        try:
            state = await self.session.dump()
        except MontyError:
            return SandboxError(BadResponse())  # the worker could not say where it was
        made = len(run.calls) + run.earlier_calls
        paused = _Paused(state, {}, {ANNOUNCED: call.path}, 0.0, made, run.host_failures(), announced=True)
        return Suspended(paused.pack(), {ANNOUNCED: deferral})

    async def feed(self, feed: Awaitable[object]) -> object:
        """The fed run's value; :class:`Suspended` if it paused (a ``BadResponse`` failure if it
        could not be captured)."""
        value: object = None
        try:
            value = await feed
        except MontyError:
            if self._ended is None:
                raise
        # Raised outside the handler, and no longer held here: neither Monty's error nor this
        # object may keep the paused state alive once the runtime has moved on.
        ended, self._ended = self._ended, None
        if ended is not None:  # also when the program went on past the pause somehow: the pause stands
            try:
                raise ended
            finally:
                del ended  # else this frame, in the exception's traceback, holds the exception: a cycle
        return value
