"""``serve --evidence-dir``: the operator's evidence of each failure, one JSON file per reference.

A model reads a reference (``ref-...``) and nothing of the host; the operator opens
``DIR/ref-....json`` and finds what happened. A file is written for every host failure of an
operation (its exception and traceback: that is where a secret may be, so the folder is the
owner's alone, 0700, and each file 0600) and for every failed execute that is the operator's
concern; a program's own mistakes (``MODEL_FIXABLE``) are routine and get no file, and a
``capability-failed`` execute shares its reference with its operation's file. Each text is
cut to a bound, and cut shorter while the file would pass :data:`MAX_FILE_BYTES` (a tool call
id is the client's to choose, as long as its request), and the folder keeps the newest
:data:`MAX_FILES` files: a client that fails on purpose can fill neither the disk nor the
folder. Files are written off the event loop, each whole or not at all.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import errno
import functools
import json
import os
import re
import secrets
import traceback
from collections.abc import Callable
from pathlib import Path

import anyio

from .._bindings import OperationEvidence
from .._text import clip
from ..failures import MODEL_FIXABLE, CapabilityFailed, FailureEvidence

__all__ = ["MAX_FILES", "MAX_FILE_BYTES", "EvidenceFiles"]

MAX_FILES = 1_000
"""How many evidence files the folder keeps; the oldest go first."""
MAX_FILE_BYTES = 64 * 1024
"""The most one evidence file holds."""
_MAX_TEXT = 4_096
_MAX_TRACEBACK = 16 * 1024
_SHORTER_TEXTS = (_MAX_TEXT, 1_024, 256, 64)
"""The bounds a file's texts are cut to, in turn, until it fits in :data:`MAX_FILE_BYTES`."""
_MAX_CHAINED = 2
_REFERENCE = re.compile(r"ref-[0-9a-f]{1,64}")
_KEPT = re.compile(r"ref-[0-9a-f]{1,64}\.json")


class EvidenceFiles:
    """Writes the evidence of each failure to ``folder`` as ``<reference>.json``; see the module's notes."""

    def __init__(self, folder: Path, *, max_files: int = MAX_FILES) -> None:
        """Make ``folder`` (0700), or take one that is the caller's alone; raises ``OSError`` saying what to do.

        The folder is opened here, once, and every file is written through that handle: a path
        that names another folder later (a symlink swapped in a shared place) changes nothing.
        """
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._folder = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            found = os.fstat(self._folder)
            # Whoever else may enter it could read the evidence, or swap the files under us.
            if found.st_uid != os.getuid() or found.st_mode & 0o077:
                raise PermissionError(
                    errno.EPERM, "others may open that folder: chmod 700 it, or name a folder that does not exist yet"
                )
            with os.scandir(self._folder) as entries:
                kept = sorted(
                    (entry.stat(follow_symlinks=False).st_mtime, entry.name)
                    for entry in entries
                    if _KEPT.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
                )
        except BaseException:
            os.close(self._folder)
            raise
        self._max_files = max_files
        # The newest last: as an earlier run left them, then as this one writes them.
        self._written = collections.deque(name for _, name in kept)

    def close(self) -> None:
        """Let go of the folder; nothing is written after."""
        os.close(self._folder)

    async def operation_failed(self, evidence: OperationEvidence) -> None:
        """``on_operation_error``: an operation's host failure, with its exception."""
        await self._write(evidence.reference, functools.partial(_operation_entry, evidence))

    async def execute_failed(self, evidence: FailureEvidence) -> None:
        """``on_sandbox_failure``: a failed execute, when it is the operator's concern and has no file yet."""
        if evidence.failure.code in MODEL_FIXABLE or isinstance(evidence.failure, CapabilityFailed):
            return
        await self._write(evidence.reference, functools.partial(_execute_entry, evidence))

    async def _write(self, reference: str, entry: Callable[[], dict[str, object]]) -> None:
        if not _REFERENCE.fullmatch(reference):
            return  # every reference is ours; anything else could name a path
        name = f"{reference}.json"
        self._written.append(name)
        gone = [self._written.popleft() for _ in range(len(self._written) - self._max_files)]
        # Formatting a traceback costs as much as the exception's text: off the event loop, as the files are.
        await anyio.to_thread.run_sync(_store, self._folder, name, entry, gone)


def _store(folder: int, name: str, entry: Callable[[], dict[str, object]], gone: list[str]) -> None:
    """Write the entry as ``name`` in the folder open as ``folder``, readable by the owner alone and
    replaced in one step; remove ``gone``."""
    text = _fitted({"time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"), **entry()})
    # A name of its own, made here: nothing already there (a link, a file others may read) is written through.
    temporary = f".{name}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(temporary, flags, 0o600, dir_fd=folder)
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(text)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
        raise
    for old in gone:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(old, dir_fd=folder)


def _operation_entry(evidence: OperationEvidence) -> dict[str, object]:
    context = evidence.context
    return {
        "kind": "operation-error",
        "reference": evidence.reference,
        "module_id": evidence.module_id,
        "operation": evidence.operation,
        "path": evidence.path,
        "stage": evidence.stage,
        "execution_id": context.execution_id,
        "tool_call_id": context.tool_call_id,
        "session_id": context.session_id,
        "operation_ordinal": context.operation_ordinal,
        "exception": _exception(evidence.exception),
    }


def _execute_entry(evidence: FailureEvidence) -> dict[str, object]:
    return {
        "kind": "execute-failure",
        "reference": evidence.reference,
        "failure": evidence.failure.to_dict(),
        "execution_id": evidence.execution_id,
        "tool_call_id": evidence.tool_call_id,
        "session_id": evidence.session_id,
        "adapter": evidence.adapter,
        "build_sha": evidence.build_sha,
        "duration_ms": round(evidence.duration_ms, 1),
        "cause": None if evidence.cause is None else _exception(evidence.cause),
    }


def _exception(exc: BaseException, depth: int = 0) -> dict[str, object]:
    kind = type(exc)
    entry: dict[str, object] = {
        "type": f"{kind.__module__}.{kind.__qualname__}",
        "message": clip(_text(exc), _MAX_TEXT),
        # The frames only (the message is above, cut); the last ones are where it was raised, so a cut keeps them.
        "traceback": _tail("".join(traceback.format_tb(exc.__traceback__)), _MAX_TRACEBACK),
    }
    inner = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    if inner is not None and depth < _MAX_CHAINED:
        entry["caused_by"] = _exception(inner, depth + 1)
    return entry


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # an exception whose __str__ raises still has evidence worth keeping
        return f"<{type(exc).__name__} whose message could not be read>"


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "..." + text[-(limit - 3) :]


def _fitted(entry: dict[str, object]) -> str:
    """``entry`` as JSON within :data:`MAX_FILE_BYTES`: its texts cut shorter until it fits.

    At the shortest bound it fits whatever the texts held: an entry has a fixed set of fields
    and at most :data:`_MAX_CHAINED` causes.
    """
    for limit in _SHORTER_TEXTS:
        text = json.dumps(_cut(entry, limit), ensure_ascii=True, indent=2)
        if len(text) <= MAX_FILE_BYTES:
            break
    return text


def _cut(value: object, limit: int, key: str = "") -> object:
    """``value`` with every text in it at most ``limit`` characters (a traceback four times that, its end kept)."""
    if isinstance(value, dict):
        return {str(name): _cut(inner, limit, str(name)) for name, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cut(inner, limit) for inner in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else str(value)
    return _tail(text, 4 * limit) if key == "traceback" else clip(text, limit)
