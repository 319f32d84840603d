"""``IsolatedSandbox``: Monty in child processes of its own, one run per child at a time."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable
from types import TracebackType
from typing import Self

import anyio

from ..._signals import AbortSignal
from ..._values import JsonValue
from .._contract import PendingCalls, Sandbox, SandboxRequest, UnenforcedLimit, Unrestorable
from ..monty import MontySandbox, WorkspaceResolver
from ..monty._language import MONTY_LANGUAGE
from ..wire import StartMessage
from ._messages import KEPT_REVISIONS, ResumeInfo, RunMessage, state_text
from ._process import ChildRevision, _Child

_MIB = 1024 * 1024
# The adapter's options a child is given as they are: numbers and flags only, nothing callable.
_CHILD_OPTIONS = (
    "memory_limit_bytes",
    "max_recursion_depth",
    "max_operation_calls",
    "max_calls_in_flight",
    "max_print_bytes",
    "max_sleep_ms",
    "max_total_sleep_ms",
    "max_checkouts_per_worker",
    "workspace_write_limit_bytes",
    "type_check",
)


class IsolatedSandbox(Sandbox):
    """Runs guest programs as :class:`~mycelium.sandbox.monty.MontySandbox` does, each in a child process.

    The host never converts a guest's values: the child does, under its own interpreter
    lock, checks them against the request's bounds, and sends only what passed, as JSON in
    length-prefixed frames that the host bounds again before it reads them. A child runs one
    program at a time, so one run's huge value stalls no other run. Children start on first
    use, are kept for the next runs (at most ``max_idle_children`` waiting), and are
    replaced after ``max_runs_per_child`` runs, after a run that grew one by more than
    ``recycle_growth_bytes``, and after any run that did not end cleanly. :meth:`aclose`
    kills them all.

    Every other keyword is the :class:`~mycelium.sandbox.monty.MontySandbox` option of the
    same name (its defaults, its checks); ``workspace`` is resolved on the host for each run.
    """

    adapter = "monty-process"
    language = MONTY_LANGUAGE
    suspends = True

    def __init__(
        self,
        *,
        max_idle_children: int = 4,
        max_runs_per_child: int = 100,
        recycle_growth_bytes: int = 64 * _MIB,
        workspace: WorkspaceResolver | None = None,
        unenforced_limits: Iterable[UnenforcedLimit] = (),
        **monty_options: int | bool | None,
    ) -> None:
        for name, value in (
            ("max_idle_children", max_idle_children),
            ("max_runs_per_child", max_runs_per_child),
            ("recycle_growth_bytes", recycle_growth_bytes),
        ):
            if type(value) is not int or value <= 0:
                raise ValueError(f"IsolatedSandbox {name} must be a positive int, got {value!r}")
        unknown = sorted(set(monty_options) - set(_CHILD_OPTIONS))
        if unknown:
            raise ValueError(
                f"IsolatedSandbox has no option {unknown[0]!r}; its Monty options are {', '.join(_CHILD_OPTIONS)}"
            )
        # Built (never started) for its checks and for what it tells the runtime.
        facts = MontySandbox(workspace=workspace, unenforced_limits=unenforced_limits, **monty_options)  # type: ignore[arg-type]
        self.build_sha = facts.build_sha
        self.guest_notes = facts.guest_notes
        self.unenforced_limits = facts.unenforced_limits
        self._options: dict[str, object] = {**monty_options, "workspace": workspace is not None}
        self._workspace = workspace
        self._max_idle = max_idle_children
        self._max_runs = max_runs_per_child
        self._growth = recycle_growth_bytes
        self._idle: list[_Child] = []
        self._children: set[_Child] = set()
        self._revisions: OrderedDict[tuple[int, int, int], ChildRevision] = OrderedDict()
        self._made = 0

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Kill every child (a run still going in one fails as ``transport-lost``). Idempotent; a
        later execute starts new children."""
        children = list(self._children)
        self._idle.clear()
        self._children.clear()
        for child in children:
            await child.kill()

    @property
    def children(self) -> tuple[int, ...]:
        """The process ids of the children alive now (for operators and tests)."""
        return tuple(child.pid for child in self._children)

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> JsonValue:
        """Run ``request.code`` in a child, as :meth:`~mycelium.sandbox.monty.MontySandbox.execute` would."""
        return await self._run(request, signal, None, None)

    async def resume(
        self, request: SandboxRequest, state: bytes, pending: PendingCalls, signal: AbortSignal
    ) -> JsonValue:
        """Continue a paused run in a child (any child: the state is the adapter's own)."""
        if not state:
            raise Unrestorable("the paused run's state is empty")
        return await self._run(request, signal, ResumeInfo(state=state_text(state), pending=sorted(pending)), pending)

    async def _run(
        self, request: SandboxRequest, signal: AbortSignal, resume: ResumeInfo | None, pending: PendingCalls | None
    ) -> JsonValue:
        signal.throw_if_aborted()
        directory = self._workspace(request.session_id) if self._workspace is not None else None
        revision = self._revision(request)
        message = RunMessage(
            revision=revision.key,
            start=StartMessage(
                execution_id=request.execution_id,
                code=request.code,
                timeout_ms=request.timeout_ms,
                session_id=request.session_id,
                namespaces=[],
            ),
            max_input_bytes=request.max_input_bytes,
            max_result_bytes=request.max_result_bytes,
            suspendable=request.suspendable,
            workspace=os.fspath(directory) if directory is not None else None,
            resume=resume,
        )
        child = self._idle.pop() if self._idle else await self._start()
        try:
            return await child.run(request, message, revision, pending, signal)
        finally:
            await self._check_in(child)

    def _revision(self, request: SandboxRequest) -> ChildRevision:
        """The revision ``request`` is a run of, made once: what every run of it would otherwise send whole."""
        key = (id(request.namespace_paths), id(request.modules), id(request.stubs))
        kept = self._revisions.get(key)
        if kept is not None and kept.serves(request):
            self._revisions.move_to_end(key)
            return kept
        self._made += 1
        revision = self._revisions[key] = ChildRevision.of(request, f"r{self._made}")
        if len(self._revisions) > KEPT_REVISIONS:
            self._revisions.popitem(last=False)
        return revision

    async def _start(self) -> _Child:
        child = await _Child.start(self._options)
        self._children.add(child)
        return child

    async def _check_in(self, child: _Child) -> None:
        """Keep ``child`` for the next run, or kill it: it ended badly, ran its share, or grew."""
        rss = child.rss()
        if child.baseline_rss is None:
            child.baseline_rss = rss
        grew = rss is not None and child.baseline_rss is not None and rss - child.baseline_rss > self._growth
        keep = child.reusable and child.runs < self._max_runs and not grew and len(self._idle) < self._max_idle
        current = child in self._children  # not a child of a pool closed meanwhile
        if keep and current:
            self._idle.append(child)
            return
        self._children.discard(child)
        await child.kill()
        if current and not self._idle:
            # The run that cost a child starts its replacement, so that the next run (another
            # client's, perhaps) finds one already importing instead of waiting for a start.
            with anyio.CancelScope(shield=True):
                self._idle.append(await self._start())
