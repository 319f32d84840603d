"""The secrets ``mycelium serve`` uses over HTTP: chosen by the operator, or generated and kept.

A token the operator did not choose is generated once and kept in the data folder
(``token`` for the agents, ``approver-token`` for the approvals page), so a client
configuration pasted from the banner keeps working after a restart. The file is owner-only
from the moment it exists: it is written under a temporary name opened with ``O_EXCL`` and
mode 0600, then linked into place, so no reader ever sees it partly written or readable by
others, and two servers starting at once agree on the one that was linked first. A kept
file is read only when it is a regular file of this user that no one else may read or
write, in a folder of this user's that no one else may write in; otherwise serving stops
with what to do. A token chosen through the environment or
an option is never written anywhere.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

__all__ = [
    "APPROVER_TOKEN_FILE",
    "DATA_DIR_ENV",
    "DEFAULT_DATA_DIR",
    "TOKEN_FILE",
    "Secret",
    "Source",
    "TokenFileError",
    "kept_token",
]

DATA_DIR_ENV = "MYCELIUM_DATA_DIR"
"""The data folder's variable, which the example apps and ``mycelium init``'s template read too."""
DEFAULT_DATA_DIR = Path(".mycelium-data")
TOKEN_FILE = "token"
APPROVER_TOKEN_FILE = "approver-token"
_MAX_TOKEN_CHARS = 1024
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)

Source: TypeAlias = Literal["generated", "kept", "env", "option"]
"""Where a secret came from: generated now (and kept), kept from an earlier run, or the operator's choice."""


class TokenFileError(Exception):
    """A kept token cannot be trusted or read, or not written; the message says what to do."""


@dataclass(frozen=True)
class Secret:
    """A token, where it came from and, when serve keeps it, its file."""

    value: str
    source: Source
    file: Path | None = None

    @property
    def chosen(self) -> bool:
        """Whether the operator chose it (then it is never shown)."""
        return self.source in ("env", "option")


def kept_token(path: Path) -> Secret:
    """The token kept at ``path``; one is generated and kept there first if there is none."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise TokenFileError(f"cannot make the folder {path.parent} for the token file: {exc.strerror}") from None
    _check_folder(path.parent)
    try:
        return Secret(_read(path), "kept", path)
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(32)
    written = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(written, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NO_FOLLOW, 0o600)
        try:
            os.write(fd, f"{token}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(written, path)
    except FileExistsError:
        # Another server starting from the same folder linked its token first: both use that one.
        return Secret(_read(path), "kept", path)
    except OSError as exc:
        raise TokenFileError(f"cannot write the token file {path}: {exc.strerror}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(written)
    return Secret(token, "generated", path)


def _check_folder(folder: Path) -> None:
    """Refuse a folder someone else may write in: they could swap the kept files (the agents' token for
    the approver's) or put their own in place."""
    info = folder.stat()
    if info.st_uid != os.geteuid():
        raise TokenFileError(
            f"the data folder {folder} belongs to another user (uid {info.st_uid}): name a folder of your own "
            "with --data-dir"
        )
    if info.st_mode & 0o022:
        raise TokenFileError(
            f"others may write in {folder}, and so swap or replace the tokens kept there: run `chmod 700 {folder}`, "
            "or name a folder of your own with --data-dir"
        )


def _read(path: Path) -> str:
    """The token in ``path``, checked to be this user's alone; ``FileNotFoundError`` when there is none."""
    regenerate = f"delete {path} to have a new token generated"
    try:
        # O_NONBLOCK: a FIFO put in its place must not hang the server before it starts.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | _NO_FOLLOW)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if path.is_symlink():
            raise TokenFileError(
                f"{path} is a symbolic link; a token is read only from a regular file: {regenerate}"
            ) from None
        raise TokenFileError(f"cannot read the token file {path}: {exc.strerror}") from None
    try:
        # Checked on the open file, not the path: nothing can swap it between the check and the read.
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TokenFileError(f"{path} is not a regular file: {regenerate}")
        if info.st_uid != os.geteuid():
            raise TokenFileError(f"{path} belongs to another user (uid {info.st_uid}): {regenerate}")
        if info.st_mode & 0o077:
            mode = stat.S_IMODE(info.st_mode)
            raise TokenFileError(
                f"{path} may be read or changed by other users (mode {mode:o}): run `chmod 600 {path}`, or {regenerate}"
            )
        raw = os.read(fd, _MAX_TOKEN_CHARS + 2)
    finally:
        os.close(fd)
    text = raw.decode("ascii", errors="replace").strip()
    # The file's content is never quoted back: it is a secret, even when it is not a valid one.
    if not text:
        raise TokenFileError(f"{path} is empty: {regenerate}")
    if len(text) > _MAX_TOKEN_CHARS or not all("!" <= char <= "~" for char in text):
        raise TokenFileError(
            f"{path} does not hold a token (one line of at most {_MAX_TOKEN_CHARS} visible ASCII characters): "
            f"{regenerate}"
        )
    return text
