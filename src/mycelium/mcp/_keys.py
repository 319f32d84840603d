"""The deployment's secret keys: one ring, newest first, that every replica shares.

Two things a server hands out must come back unchanged to whichever replica receives them:
the sealed records of paused runs (in the shared store) and the ``requestState`` of an
approval (through the client). Both are sealed under keys derived from the same ring, each
for its own purpose, so a value sealed for one can never be taken for the other. The
newest key seals; every key in the ring opens, so a key can be rotated without refusing
what was sealed just before: add the new key in front on every replica, then drop the old
one once what it sealed has expired.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

__all__ = ["KEY_ENV", "KEY_FILE_ENV", "MIN_KEY_CHARS", "SecretKeys"]

KEY_ENV = "MYCELIUM_SECRET_KEY"
"""The environment variable holding the ring: keys separated by commas, newest first."""
KEY_FILE_ENV = "MYCELIUM_SECRET_KEY_FILE"
"""The environment variable naming a file holding the ring: one key a line, newest first."""
MIN_KEY_CHARS = 32
"""The shortest key accepted: 32 characters, e.g. ``python -c "import secrets; print(secrets.token_hex(32))"``."""
_MAX_KEYS = 16
_SUSPENSIONS = b"mycelium/suspensions/v1"
_REQUEST_STATE = b"mycelium/request-state/v1"
_APPROVAL_HANDLES = b"mycelium/approval-handle/v1"
_APPROVALS_PAGE = b"mycelium/approvals-page/v1"


class SecretKeys:
    """A ring of secret keys, newest first: the newest seals, every one opens.

    Build it with :meth:`of`, :meth:`from_text`, :meth:`from_file` or :meth:`from_env`.
    Its ``repr`` never shows a key, and no error message quotes one.
    """

    __slots__ = ("_keys",)

    def __init__(self, keys: Sequence[str]) -> None:
        if isinstance(keys, str) or not isinstance(keys, Sequence):
            raise ValueError("SecretKeys takes a sequence of keys, newest first")
        if not keys:
            raise ValueError("SecretKeys needs at least one key")
        if len(keys) > _MAX_KEYS:
            raise ValueError(f"SecretKeys holds at most {_MAX_KEYS} keys, got {len(keys)}")
        for index, key in enumerate(keys):
            if not isinstance(key, str):
                raise ValueError(f"key {index + 1} of the ring is a {type(key).__name__}, not a string")
            if len(key) < MIN_KEY_CHARS or key != key.strip():
                raise ValueError(
                    f"key {index + 1} of the ring is {len(key)} characters or has surrounding spaces; each key "
                    f"must be at least {MIN_KEY_CHARS} characters of secret randomness "
                    '(python -c "import secrets; print(secrets.token_hex(32))")'
                )
        if len(set(keys)) != len(keys):
            raise ValueError("the ring holds the same key twice")
        self._keys = tuple(keys)

    @classmethod
    def of(cls, *keys: str) -> SecretKeys:
        """The ring of ``keys``, newest first."""
        return cls(keys)

    @classmethod
    def from_text(cls, text: str, *, separator: str | None = None) -> SecretKeys:
        """The ring written in ``text``: one key a line (or split at ``separator``), newest first.

        Blank entries and lines starting with ``#`` are skipped.
        """
        entries: Iterable[str] = text.split(separator) if separator is not None else text.splitlines()
        keys = [entry.strip() for entry in entries]
        return cls([key for key in keys if key and not key.startswith("#")])

    @classmethod
    def from_file(cls, path: str | Path) -> SecretKeys:
        """The ring in the file at ``path`` (see :meth:`from_text`). Raises ``ValueError`` naming the file."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read the key file {str(path)!r}: {type(exc).__name__}") from None
        try:
            return cls.from_text(text)
        except ValueError as exc:
            raise ValueError(f"the key file {str(path)!r}: {exc}") from None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SecretKeys | None:
        """The ring configured in the environment, or ``None`` when none is.

        :data:`KEY_ENV` holds keys separated by commas; :data:`KEY_FILE_ENV` names a file of
        them. Setting both is refused, since they could disagree.
        """
        env = os.environ if environ is None else environ
        inline, file = env.get(KEY_ENV), env.get(KEY_FILE_ENV)
        if inline and file:
            raise ValueError(f"set {KEY_ENV} or {KEY_FILE_ENV}, not both")
        if inline:
            try:
                return cls.from_text(inline, separator=",")
            except ValueError as exc:
                raise ValueError(f"{KEY_ENV}: {exc}") from None
        if file:
            return cls.from_file(file)
        return None

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"SecretKeys(<{len(self._keys)} key{'s' if len(self._keys) != 1 else ''}>)"

    def suspension_keys(self) -> tuple[bytes, tuple[bytes, ...]]:
        """The key that seals suspension records and the older ones that still open them."""
        newest, *older = (self._derive(_SUSPENSIONS, key) for key in self._keys)
        return newest, tuple(older)

    def request_state_keys(self) -> list[bytes]:
        """The keys for ``requestState``, newest first (the SDK's ring: the first seals, all open)."""
        return [self._derive(_REQUEST_STATE, key) for key in self._keys]

    def approval_keys(self) -> list[bytes]:
        """The keys for approval handles, newest first (the first seals, all open)."""
        return [self._derive(_APPROVAL_HANDLES, key) for key in self._keys]

    def approvals_page_key(self) -> bytes:
        """The key that signs the approvals page's forms when no approver token does (the newest only:
        a form signed under an older one is refused as stale, and reloading the page fixes it)."""
        return self._derive(_APPROVALS_PAGE, self._keys[0])

    @staticmethod
    def _derive(purpose: bytes, key: str) -> bytes:
        return hmac.new(key.encode(), purpose, hashlib.sha256).digest()
