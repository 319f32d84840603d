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
replaces it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio
import pydantic_monty
from pydantic_monty import (
    AsyncMonty,
    ExternalModule,
    Frame,
    MontyConversionError,
    MontyCrashedError,
    MontyError,
    MontyRuntimeError,
    MontySyntaxError,
    MontyTypingError,
    MountDir,
)

from ..bindings import BindingCallback
from ..errors import InvalidInput, OperationFailed
from ..failures import (
    DeadlineExceeded,
    GuestException,
    InvalidResult,
    SandboxError,
    SyntaxFailure,
    TransportLost,
)
from ..signals import AbortError, AbortSignal
from ..text import clip
from ..values import JsonValue
from . import UNENFORCED_LIMIT_NOTICES, SandboxRequest, UnenforcedLimit
from .guest import NamespaceTree, guest_input, namespace_tree, positional_name

__all__ = ["MontySandbox", "WorkspaceResolver"]

KIB = 1024
MIB = 1024 * KIB

WorkspaceResolver = Callable[[str | None], "str | os.PathLike[str] | None"]
"""Session id (``None`` when session-free) -> the host directory to mount, or ``None`` for none."""

WORKSPACE_PATH = "/workspace"
# Imports, sleeps and lookups count against Monty's suspension budget too.
_SUSPENSION_SLACK = 1_000
# Monty's own feed clock is a backstop: the runtime's wall deadline should fire first.
_FEED_LIMIT_SLACK_SECS = 0.5
_IDENTIFIERS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNAWAITED = re.compile(r"<coroutine external_future\(\d+\)>")
_MAX_TEXT = 2_000
# Closing the pool and letting the loop end at once can abort the interpreter (exit code
# 134, a library thread calling into Python during shutdown); a short pause avoids it.
_CLOSE_PAUSE_SECS = 0.05


class MontySandbox:
    """Runs guest Python programs in Monty worker processes.

    Use ``async with MontySandbox() as sandbox`` or hand it to a ``Runtime``, which closes
    it when the runtime closes; it starts its pool on first use and can be started again
    after :meth:`aclose`.

    - ``memory_limit_bytes``: heap per run (256 MiB).
    - ``max_recursion_depth``: guest call depth (200).
    - ``max_operation_calls``: operation calls per run (10,000); one more raises in the guest.
    - ``max_print_bytes``: captured ``print`` output per run (64 KiB); the rest is dropped
      and the logs say so.
    - ``max_sleep_ms`` / ``max_total_sleep_ms``: each sleep is cut to the first; their sum is
      capped by the second.
    - ``pool_size``: worker processes (``None``: Monty's default).
    - ``max_checkouts_per_worker``: recycle a worker after this many runs (workers keep the
      memory a big run used).
    - ``type_check``: off by default. Before a program runs, Monty's type checker checks it
      against the operations' stubs (``SandboxRequest.stubs``): a wrong argument type, an
      unknown operation or a result used without ``await`` fails as ``syntax`` (with
      ``type_check=True``, the line and column) and nothing runs. It costs a second feed per
      run and one import per namespace: meant for catalogs of tens of modules, not thousands.
    - ``workspace``: off by default. A callable from session id to a host directory, mounted
      read-write at ``/workspace`` with ``workspace_write_limit_bytes`` per run. Give it a
      directory that holds no code or configuration: files there were written by a guest.
    - ``unenforced_limits``: limits the host declares are not enforced where it runs this
      sandbox; the runtime logs each once. Declaring one changes nothing here.
    """

    adapter = "monty"

    def __init__(
        self,
        *,
        memory_limit_bytes: int = 256 * MIB,
        max_recursion_depth: int = 200,
        max_operation_calls: int = 10_000,
        max_print_bytes: int = 64 * KIB,
        max_sleep_ms: int = 10_000,
        max_total_sleep_ms: int = 30_000,
        pool_size: int | None = None,
        max_checkouts_per_worker: int | None = 100,
        workspace: WorkspaceResolver | None = None,
        workspace_write_limit_bytes: int = 16 * MIB,
        type_check: bool = False,
        unenforced_limits: Iterable[UnenforcedLimit] = (),
    ) -> None:
        for name, value in (
            ("memory_limit_bytes", memory_limit_bytes),
            ("max_recursion_depth", max_recursion_depth),
            ("max_operation_calls", max_operation_calls),
            ("max_print_bytes", max_print_bytes),
            ("max_sleep_ms", max_sleep_ms),
            ("max_total_sleep_ms", max_total_sleep_ms),
            ("workspace_write_limit_bytes", workspace_write_limit_bytes),
        ):
            if type(value) is not int or value <= 0:
                raise ValueError(f"MontySandbox {name} must be a positive int, got {value!r}")
        for name, optional in (("pool_size", pool_size), ("max_checkouts_per_worker", max_checkouts_per_worker)):
            if optional is not None and (type(optional) is not int or optional <= 0):
                raise ValueError(f"MontySandbox {name} must be a positive int or None, got {optional!r}")
        if type(type_check) is not bool:
            raise ValueError(f"MontySandbox type_check must be True or False, got {type_check!r}")
        if workspace is not None and not callable(workspace):
            raise ValueError("MontySandbox workspace must be a callable from session id to a directory")
        limits = tuple(unenforced_limits)
        unknown = [limit for limit in limits if limit not in UNENFORCED_LIMIT_NOTICES]
        if unknown:
            raise ValueError(f"MontySandbox unenforced_limits has unknown {unknown!r}; use cpu, memory, output, cancel")
        self.unenforced_limits: tuple[UnenforcedLimit, ...] = limits
        self.build_sha: str | None = f"pydantic-monty {pydantic_monty.__version__}"
        self._memory_limit = memory_limit_bytes
        self._recursion = max_recursion_depth
        self._max_calls = max_operation_calls
        self._max_print = max_print_bytes
        self._sleep_max = max_sleep_ms / 1000
        self._total_sleep = max_total_sleep_ms / 1000
        self._pool_size = pool_size
        self._recycle = max_checkouts_per_worker
        self._workspace = workspace
        self._workspace_limit = workspace_write_limit_bytes
        self._type_check = type_check
        self.guest_notes: str | None = (
            f"Files: {WORKSPACE_PATH} is this session's folder; files written there are still there in later "
            "runs of the same session, so keep state you need again in a file there and read it back."
            if workspace is not None
            else None
        )
        self._pool: AsyncMonty | None = None
        self._lock = anyio.Lock()

    async def __aenter__(self) -> Self:
        await self._ensure_pool()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the worker pool. Idempotent; a later execute starts a new pool."""
        async with self._lock:
            pool, self._pool = self._pool, None
            if pool is not None:
                await pool.__aexit__(None, None, None)
                await anyio.sleep(_CLOSE_PAUSE_SECS)

    async def _ensure_pool(self) -> AsyncMonty:
        if self._pool is not None:  # the common case: no lock, no trip round the event loop
            return self._pool
        async with self._lock:
            if self._pool is None:
                pool = AsyncMonty(
                    min_processes=1, max_processes=self._pool_size, max_checkouts_per_worker=self._recycle
                )
                await pool.__aenter__()
                self._pool = pool
            return self._pool

    async def execute(self, request: SandboxRequest, signal: AbortSignal) -> JsonValue:
        """Run ``request.code`` in a fresh Monty session; see the module docstring for limits."""
        signal.throw_if_aborted()
        pool = await self._ensure_pool()
        # Without stubs nothing can be checked (every operation would look unknown).
        type_check = self._type_check and bool(request.stubs)
        guest = _GuestRun(request, self._max_calls, with_stubs=type_check)
        printed = _PrintBuffer(self._max_print)
        limits: pydantic_monty.ResourceLimits = {
            "max_feed_duration_secs": request.timeout_ms / 1000 + _FEED_LIMIT_SLACK_SECS,
            "max_memory": self._memory_limit,
            "max_recursion_depth": self._recursion,
            "max_suspensions": self._max_calls + _SUSPENSION_SLACK + len(guest.namespaces),
            "max_total_sleep_secs": self._total_sleep,
        }
        mount = self._mount(request.session_id)
        failure: Exception | None = None
        try:
            async with pool.checkout(
                limits=limits,
                external_modules=guest.modules,
                os_policy={"sleep_system_max": self._sleep_max},
                type_check=type_check,
                type_check_format="json",
            ) as session:
                try:
                    if type_check:
                        await self._check_types(session, guest, request.code, signal)
                    value = await _until_aborted(
                        session.feed_run(
                            guest.program(request.code),
                            print_callback=printed.write,
                            mount=mount,
                            skip_type_check=True,
                        ),
                        signal,
                    )
                except MontyError as exc:
                    failure = guest.failure_for(exc)
                finally:
                    await guest.cancel_unawaited()
        finally:
            if mount is not None:
                mount.close()
            if request.on_log is not None:
                for line in printed.lines():
                    request.on_log(line)
        if failure is not None:
            raise failure
        guest.check_awaited(value)
        return value  # type: ignore[return-value]  # the runtime checks that it is JSON

    async def _check_types(self, session: Any, guest: _GuestRun, code: str, signal: AbortSignal) -> None:
        """Type-check the program against the operations' stubs; raise ``SandboxError`` if it fails.

        The program is checked as the body of an async function that is never called, so a
        top-level ``return`` is legal and nothing of it runs. A syntax error is left for the
        real feed to report, at the guest's own line.
        """
        try:
            await _until_aborted(session.feed_run(guest.checked_program(code)), signal)
        except MontySyntaxError:
            return
        except MontyTypingError as exc:
            failure = _type_failure(exc.display())
            if failure is not None:
                raise SandboxError(failure) from None

    def _mount(self, session_id: str | None) -> MountDir | None:
        if self._workspace is None:
            return None
        directory = self._workspace(session_id)
        if directory is None:
            return None
        return MountDir(
            host_path=Path(directory),
            virtual_path=WORKSPACE_PATH,
            mode="read-write",
            write_bytes_limit=self._workspace_limit,
        )


async def _until_aborted(feed: Awaitable[object], signal: AbortSignal) -> object:
    """Await ``feed``; on abort, cancel it (which kills the worker) and raise :class:`AbortError`."""
    with anyio.CancelScope() as scope:
        stop_watching = signal.add_listener(lambda _: scope.cancel())
        try:
            return await feed
        finally:
            stop_watching()
    raise AbortError(signal.reason)


class _PrintBuffer:
    """Collects printed text up to a byte limit and says plainly when it dropped the rest."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[str] = []
        self._size = 0
        self._dropped = 0

    def write(self, stream: str, text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")
        room = self._limit - self._size
        if len(data) > room:
            self._dropped += len(data) - max(room, 0)
            # Monty hands over output in batches: keep what fits, cut at a character boundary.
            data = data[: max(room, 0)]
        self._parts.append(data.decode("utf-8", "ignore"))
        self._size += len(data)

    def lines(self) -> Iterator[str]:
        yield from "".join(self._parts).splitlines()
        if self._dropped:
            yield f"[{self._dropped} more bytes of output dropped: the limit is {self._limit} bytes]"


class _Call:
    """One operation call a guest started, tracked until it settles."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.task: asyncio.Task[Any] | None = None
        self.coroutine: Any = None
        self.settled = False
        self._waiter: anyio.Event | None = None  # made only for a call the run left behind
        self.failure: OperationFailed | None = None

    async def run(self, pending: Awaitable[JsonValue]) -> JsonValue:
        self.task = asyncio.current_task()
        try:
            return await pending
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None
        except OperationFailed as exc:
            self.failure = exc
            raise RuntimeError(str(exc)) from None
        finally:
            self._settle()

    def _settle(self) -> None:
        self.settled = True
        if self._waiter is not None:
            self._waiter.set()

    def cancel(self) -> None:
        """Cancel the call if it is still running (see :meth:`wait`)."""
        if self.settled:
            return
        if self.task is None:
            self.coroutine.close()  # never started, so never awaited by anyone
            self._settle()
            return
        self._waiter = anyio.Event()
        self.task.cancel()

    async def wait(self) -> None:
        """Return once a cancelled call has settled."""
        if self._waiter is not None and not self.settled:
            await self._waiter.wait()


class _GuestRun:
    """The guest-facing side of one run: its modules, and every call it makes."""

    def __init__(self, request: SandboxRequest, max_calls: int, *, with_stubs: bool = False) -> None:
        self._max_calls = max_calls
        self._timeout_ms = request.timeout_ms
        self._stubs = request.stubs if with_stubs else None
        self.calls: list[_Call] = []
        self.namespaces: list[str] = []  # every namespace's dotted path, for the type checker's imports
        top = {name: self._module(node, name) for name, node in namespace_tree(request).items()}
        self.modules: dict[str, ExternalModule] = {**top, "env": ExternalModule(dict(top), stubs=self._stub(""))}
    def program(self, code: str) -> str:
        """The code as fed to Monty: one line binding the namespaces, then the guest's own lines.

        Only the namespaces the code names are bound (each import costs a trip to the host);
        the line is there either way, so guest line N is always line N + 1.
        """
        named = sorted(self.modules.keys() & set(_IDENTIFIERS.findall(code)))
        return (f"import {', '.join(named)}" if named else "") + "\n" + code

    def checked_program(self, code: str) -> str:
        """The code as the type checker sees it: every namespace imported, then the program as
        the body of an async function (so guest line N is line N + 2, indented by 4)."""
        imports = ", ".join(["forage", *(path for name in self.namespaces for path in (name, f"env.{name}"))])
        body = "".join(f"    {line}\n" for line in code.splitlines())
        return f"import {imports}\nasync def {_CHECKED_FUNCTION}():\n{body}    pass\n"

    def _module(self, node: NamespaceTree | tuple[str, BindingCallback], path: str) -> ExternalModule:
        if not isinstance(node, dict):
            raise ValueError(f"{path} is an operation where a namespace was expected")
        attrs: dict[str, Any] = {}
        for segment, child in node.items():
            if isinstance(child, tuple):
                attrs[segment] = self._operation(*child)
            else:
                attrs[segment] = self._module(child, f"{path}.{segment}")
        if path != "forage":
            self.namespaces.append(path)
        return ExternalModule(attrs, stubs=self._stub(path))

    def _stub(self, path: str) -> str | None:
        if self._stubs is None:
            return None
        return self._stubs.get(path, "")

    def _operation(self, path: str, callback: BindingCallback) -> Callable[..., Awaitable[JsonValue]]:
        # A plain function returning a coroutine: the call (and its ordinal) is placed the
        # moment the guest makes it, before anything is awaited.
        positional = positional_name(callback)

        def call(*args: object, **kwargs: object) -> Awaitable[JsonValue]:
            if len(self.calls) >= self._max_calls:
                raise RuntimeError(f"this run made more than {self._max_calls} operation calls")
            value = guest_input(path, args, kwargs, positional)
            try:
                pending = callback(value)
            except InvalidInput as exc:  # refused before it was placed (too large, say)
                raise ValueError(str(exc)) from None
            tracked = _Call(path)
            self.calls.append(tracked)
            tracked.coroutine = tracked.run(pending)
            return tracked.coroutine  # type: ignore[no-any-return]

        return call

    async def cancel_unawaited(self) -> None:
        """Stop every call still running after the program ended: the program never awaited it."""
        for call in self.calls:
            call.cancel()
        for call in self.calls:
            await call.wait()

    def check_awaited(self, value: object) -> None:
        """Fail the run if its value holds the placeholder of a call that was never awaited."""
        if _holds_placeholder(value):
            raise SandboxError(
                GuestException(
                    type_name="TypeError",
                    message=f"the result holds an operation call that was never awaited ({self._called()}); "
                    "write `await` before every operation call",
                )
            )

    def _called(self) -> str:
        # Monty numbers its futures among all suspensions (imports, sleeps), so the
        # placeholder cannot say which call it was: name the operations this run called.
        paths = sorted({call.path for call in self.calls})
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        return f"called: {shown}" if paths else "no operation was called"

    def failure_for(self, exc: MontyError) -> Exception:
        """The exception that reports a Monty error: a typed failure, or the host's own failure."""
        if isinstance(exc, MontySyntaxError):
            frames = exc.traceback()
            line = _guest_line(frames[0].line) if frames else None
            column = frames[0].column if frames else None
            return SandboxError(SyntaxFailure(message=_clip(str(exc.exception())), line=line, column=column))
        if isinstance(exc, MontyCrashedError):
            if exc.timed_out:
                return SandboxError(DeadlineExceeded(timeout_ms=self._timeout_ms, acknowledged=True))
            return SandboxError(TransportLost())
        if isinstance(exc, MontyConversionError):
            return SandboxError(InvalidResult(reason=f"the value cannot leave the sandbox: {_clip(str(exc))}"))
        if isinstance(exc, MontyRuntimeError):
            inner = exc.exception()
            message = str(inner)
            for call in self.calls:
                # Our own message, unique by its reference, came back out: nobody handled it.
                if call.failure is not None and type(inner) is RuntimeError and message == str(call.failure):
                    return call.failure
            if "'coroutine'" in message:
                # The guest used a call's coroutine as if it were its result.
                message = f"{message} (an operation call was not awaited; {self._called()})"
            return SandboxError(
                GuestException(
                    type_name=type(inner).__name__, message=_clip(message), traceback=_guest_traceback(exc.traceback())
                )
            )
        return SandboxError(TransportLost())


_CHECKED_FUNCTION = "__mycelium_program__"
_CHECKED_LINES_BEFORE = 2  # the imports and the `async def` line
_CHECKED_INDENT = 4


def _type_failure(diagnostics: str) -> SyntaxFailure | None:
    """The first type-check diagnostic in the guest's own code, at its own line and column.

    ``None`` when the program does not parse: the real feed reports that syntax error
    with the right position.
    """
    try:
        found = [
            (str(item["code"]), str(item["message"]), int(item["location"]["row"]), int(item["location"]["column"]))
            for item in json.loads(diagnostics)
        ]
    except (ValueError, TypeError, KeyError):
        return SyntaxFailure(message="the program failed its type check", type_check=True)
    if any(code == "invalid-syntax" for code, _, _, _ in found):
        return None
    in_program = [item for item in found if item[2] > _CHECKED_LINES_BEFORE] or found
    if not in_program:
        return SyntaxFailure(message="the program failed its type check", type_check=True)
    code, message, row, column = in_program[0]
    text = f"{message} [{code}]" + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
    if row <= _CHECKED_LINES_BEFORE:
        return SyntaxFailure(message=_clip(text), type_check=True)
    line, column = row - _CHECKED_LINES_BEFORE, max(1, column - _CHECKED_INDENT)
    return SyntaxFailure(message=_clip(text), line=line, column=column, type_check=True)


def _guest_line(line: int) -> int:
    return max(1, line - 1)  # the prelude is line 1


def _guest_traceback(frames: list[Frame]) -> str:
    """The guest's frames as a traceback, in the guest's own line numbers."""
    lines = []
    for frame in frames[-20:]:
        where = f"line {_guest_line(frame.line)}" + (f", in {frame.function_name}" if frame.function_name else "")
        lines.append(f"  {where}: {(frame.source_line or '').strip()}")
    if len(frames) > 20:
        lines.insert(0, f"  ... {len(frames) - 20} earlier frames")
    return _clip("\n".join(lines))


def _holds_placeholder(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _UNAWAITED.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
            stack.extend(item.keys())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _clip(text: str) -> str:
    return clip(text, _MAX_TEXT)
