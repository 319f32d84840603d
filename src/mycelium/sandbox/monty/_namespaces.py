"""The guest's namespaces of one revision, as Monty modules, and how their calls find the run
that made them.

Built once per revision and shared by its runs, so they must not refer to any one run: a
call reaches its run through a context variable the run sets while it feeds the program.
The program Monty is fed starts with one line the sandbox adds; ``_guest_line`` maps
Monty's line numbers back to the guest's own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from pydantic_monty import ExternalModule

from ..._values import JsonValue
from .._contract import SandboxRequest
from .._namespaces import Leaf, NamespaceTree, namespace_tree

if TYPE_CHECKING:
    from ._calls import _GuestRun

_IDENTIFIERS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A program can reach a name it does not spell only through these; one that uses any of them
# is given every namespace.
_COMPUTED_ACCESS = frozenset({"getattr", "hasattr", "eval", "exec", "compile", "__getattribute__"})
_RUN: ContextVar[_RunSlot] = ContextVar("mycelium_monty_run")


class _GuestModules:
    """The guest's namespaces for one revision, as Monty modules. Built once per revision.

    Their leaves are plain functions of the operation's place in the request's bindings,
    so nothing here refers to a run: a run's calls reach their run through ``_RUN``. (A
    module that referred to its run would form a reference cycle the collector cannot
    see, because Monty's modules are not tracked by it, and leak every run.)
    """

    def __init__(self, request: SandboxRequest, *, with_stubs: bool) -> None:
        self._keys = (request.namespace_paths, request.modules, request.stubs)
        self._stubs = request.stubs if with_stubs else None
        self.namespaces: list[str] = []  # every namespace's dotted path, for the type checker's imports
        self.leaves: dict[str, Leaf] = {}  # every name a call may be announced under, when driven step by step
        self.members: dict[str, tuple[str, ...]] = {}  # namespace path -> its names, to suggest one for a typo
        self._attrs: dict[str, dict[str, Any]] = {}  # namespace path -> its operations, and its namespaces' paths
        top = {name: self._module(node, name) for name, node in namespace_tree(request).items()}
        self.modules: dict[str, ExternalModule] = {**top, "env": ExternalModule(dict(top), stubs=self._stub(""))}
        self.members[""] = self.members["env"] = tuple(top)
        self._attrs["env"] = {name: name for name in top}

    def serves(self, request: SandboxRequest) -> bool:
        """Whether these modules were built for ``request``'s revision (the same objects, not equal ones)."""
        mine = self._keys
        return mine[0] is request.namespace_paths and mine[1] is request.modules and mine[2] is request.stubs

    def prepare(self, code: str, *, whole: bool = False) -> tuple[str, dict[str, ExternalModule]]:
        """The code as fed to Monty, and the modules its session is given (one scan of the code for both).

        The program is one line importing the namespaces the code names (each import costs a
        trip to the host), then the guest's own lines; the line is there either way, so guest
        line N is always line N + 1. There is no ``__import__`` or ``importlib``: a namespace the
        code does not name is out of its reach.

        Importing a module costs Monty each of its operations and namespaces, in every session:
        ``import env`` over 10,000 operations took 20 ms. So the session is given only the names
        the code spells (``env.notes.get`` spells ``notes`` and ``get``), unless it computes one
        (``getattr``, ``eval``) or ``whole`` is asked (the type checker sees every namespace):
        then every namespace it names comes whole.
        """
        words = set(_IDENTIFIERS.findall(code))
        named = sorted(self.modules.keys() & words)
        program = (f"import {', '.join(named)}" if named else "") + "\n" + code
        if whole:
            return program, self.modules
        if words & _COMPUTED_ACCESS:
            return program, {name: self.modules[name] for name in named}
        return program, {name: self._spelled(name, words) for name in named}

    def _spelled(self, path: str, words: set[str]) -> ExternalModule:
        attrs = self._attrs[path]
        kept: dict[str, Any] = {}
        for segment in attrs.keys() & words:
            member = attrs[segment]
            kept[segment] = self._spelled(member, words) if isinstance(member, str) else member
        return ExternalModule(kept)

    def checked_program(self, code: str) -> str:
        """The code as the type checker sees it: one line importing every namespace, then the
        program unchanged, so guest line N is line N + 1, as when it runs. (Re-indenting it
        into a function would change multi-line strings and what a form feed means.)"""
        imports = ", ".join(["forage", *(path for name in self.namespaces for path in (name, f"env.{name}"))])
        return f"import {imports}\n{code}"

    def _module(self, node: NamespaceTree | Leaf, path: str) -> ExternalModule:
        if not isinstance(node, dict):
            raise ValueError(f"{path} is an operation where a namespace was expected")
        attrs: dict[str, Any] = {}  # as ExternalModule takes them: operations and submodules alike
        spelled: dict[str, Any] = {}
        for segment, child in node.items():
            if isinstance(child, Leaf):
                # A plain function returning an awaitable: the call (and its ordinal) is placed
                # the moment the guest makes it, before anything is awaited.
                attrs[segment] = spelled[segment] = functools.partial(_place, child)
                self.leaves[child.path] = self.leaves[f"env.{child.path}"] = child
            else:
                attrs[segment] = self._module(child, f"{path}.{segment}")
                spelled[segment] = f"{path}.{segment}"
        self._attrs[path] = spelled
        if path != "forage":
            self.namespaces.append(path)
        self.members[path] = tuple(attrs)
        return ExternalModule(attrs, stubs=self._stub(path))

    def _stub(self, path: str) -> str | None:
        if self._stubs is None:
            return None
        return self._stubs.get(path, "")


def _place(leaf: Leaf, *args: object, **kwargs: object) -> Awaitable[JsonValue]:
    run = _RUN.get().run
    if run is None:
        raise RuntimeError("the run is over")
    return run.call(leaf, args, kwargs)


class _RunSlot:
    """Where a run's callbacks find it; emptied when the run ends."""

    __slots__ = ("run",)

    def __init__(self, run: _GuestRun) -> None:
        self.run: _GuestRun | None = run


def _guest_line(line: int) -> int:
    return max(1, line - 1)  # the prelude is line 1
