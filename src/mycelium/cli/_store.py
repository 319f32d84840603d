"""``serve --store URL``: the store a replica shares with every other one, and the ring that seals for it.

With a store, the catalog's 2025-11-25 connection records and its paused runs live in
PostgreSQL (``postgresql://...``) or a SQLite file (``sqlite:///path``, or a plain path), so
any number of ``mycelium serve`` processes serve the same clients. Everything they seal must
open on every other one, so the deployment's key ring (``MYCELIUM_SECRET_KEY`` or
``MYCELIUM_SECRET_KEY_FILE``) is required: a key of one process would make the others
reject its records. The URL's password never appears in a message or a log line: every
message names the store by :attr:`StoreUrl.shown`, and whatever a driver says is scrubbed
of it first.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

import anyio

from ..mcp import McpCatalog, McpCatalogProvider, PostgresConnections, SecretKeys, SqliteConnections
from ..mcp._keys import KEY_ENV, KEY_FILE_ENV
from ..suspensions import PostgresSuspensions, SqliteSuspensions, SuspensionStore
from ._front import Probe

STORE_ENV = "MYCELIUM_STORE"
"""Where ``serve --store`` is read from when it is not given."""
STARTUP_TIMEOUT_SECONDS = 10
"""How long the store may take to answer when the replica starts."""
_MASK = "***"
_POSTGRES_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}")


class StoreError(Exception):
    """``--store`` or the key ring cannot be used as given; the message holds no secret."""


class StoreUnreachable(Exception):
    """The store did not answer when the replica started; the message holds no secret."""


@dataclass(frozen=True)
class StoreUrl:
    """A parsed ``--store``: PostgreSQL by URL, or a SQLite file by path."""

    kind: str
    """``"postgres"`` or ``"sqlite"``."""
    location: str = dataclasses.field(repr=False)
    """The DSN (with its password) or the file's path."""
    shown: str
    """How messages and logs name the store: the URL with its password masked."""
    secrets: tuple[str, ...] = dataclasses.field(default=(), repr=False)
    """The password as written and decoded, to scrub from whatever a driver says."""

    def scrub(self, text: str) -> str:
        """``text`` with every form of the password masked."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, _MASK)
        return text


def parse_store(text: str) -> StoreUrl:
    """Parse ``postgresql://...``, ``postgres://...``, ``sqlite:///path`` or a plain path. Raises :class:`StoreError`.

    For SQLite the path is whatever follows ``sqlite://``: ``sqlite:///var/lib/store.sqlite``
    is absolute, ``sqlite://store.sqlite`` relative. Its folder must exist.
    """
    if not text.strip():
        raise StoreError("--store is empty; give postgresql://... or sqlite:///path")
    scheme, separator, rest = text.partition("://")
    if not separator:
        return _sqlite(text, text)
    if scheme.lower() == "sqlite":
        return _sqlite(rest, text)
    if scheme.lower() not in _POSTGRES_SCHEMES:
        shown = scheme if _SCHEME.fullmatch(scheme) else "this"
        raise StoreError(
            f"--store: {shown!r} is not a store mycelium serve keeps; use postgresql://... or sqlite:///path"
        )
    try:
        shown, secrets = _masked(text)
    except ValueError:
        # Not echoed: it may hold a password.
        raise StoreError("--store is not a PostgreSQL URL this server can read") from None
    return StoreUrl("postgres", text, shown, secrets)


def _sqlite(path: str, text: str) -> StoreUrl:
    if not path or path == ":memory:":
        raise StoreError("--store: a replica's SQLite store must be a file other processes can open")
    if not Path(path).parent.is_dir():
        raise StoreError(f"--store: the folder of {path!r} does not exist")
    return StoreUrl("sqlite", path, text)


def _masked(url: str) -> tuple[str, tuple[str, ...]]:
    """``url`` with its password (in the authority or a ``password=`` parameter) masked, and the passwords."""
    parts = urlsplit(url)
    secrets: list[str] = []
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at:
        user, colon, password = userinfo.partition(":")
        if colon and password:
            secrets += [password, unquote(password)]
            netloc = f"{user}:{_MASK}@{host}"
    parameters = []
    for parameter in parts.query.split("&") if parts.query else []:
        name, equals, value = parameter.partition("=")
        if equals and unquote_plus(name) == "password" and value:
            secrets += [value, unquote_plus(value)]
            value = _MASK
        parameters.append(f"{name}{equals}{value}")
    return urlunsplit(parts._replace(netloc=netloc, query="&".join(parameters))), tuple(secrets)


@dataclass(frozen=True)
class SharedStore:
    """The store named by ``--store`` and the deployment's key ring: what a replica shares."""

    url: StoreUrl
    ring: SecretKeys = dataclasses.field(repr=False)

    @classmethod
    def configure(cls, store: str, environ: Mapping[str, str] | None = None) -> SharedStore:
        """Parse ``store`` and read the ring from the environment. Raises :class:`StoreError`."""
        url = parse_store(store)
        try:
            ring = SecretKeys.from_env(environ)
        except ValueError as exc:
            raise StoreError(str(exc)) from None  # SecretKeys never quotes a key
        if ring is None:
            raise StoreError(
                f"--store needs the deployment's secret key ring in {KEY_ENV} or {KEY_FILE_ENV}: "
                "a key of this process alone would make every other replica reject what it seals"
            )
        return cls(url, ring)

    async def share(self, catalog: McpCatalogProvider) -> Probe:
        """Put ``catalog``'s connection records and paused runs in the store, checked to answer first.

        Returns the store's health probe. Raises :class:`StoreError` when the catalog cannot
        take the store, :class:`StoreUnreachable` when the store does not answer; either way
        nothing is left open.
        """
        if not isinstance(catalog, McpCatalog):
            raise StoreError(
                f"--store needs an McpCatalog (from create_mcp_catalog); the app's catalog is a "
                f"{type(catalog).__name__}, which keeps its records where it chooses"
            )
        pauses = catalog.suspensions is not None
        connections, paused = await self._open(pauses=pauses)
        try:
            suspensions = None
            if catalog.suspensions is not None and paused is not None:  # made exactly when the catalog pauses
                key, previous_keys = self.ring.suspension_keys()
                suspensions = dataclasses.replace(
                    catalog.suspensions, store=paused, key=key, previous_keys=previous_keys
                )
            catalog.use_stores(connections=connections, suspensions=suspensions)
        except ValueError as exc:
            await _close(connections, paused)
            raise StoreError(f"--store: {exc}") from None
        return connections.ping

    async def _open(self, *, pauses: bool) -> tuple[PostgresConnections | SqliteConnections, SuspensionStore | None]:
        """Both stores, each made and answering within the start-up timeout. Raises :class:`StoreUnreachable`."""
        url = self.url
        connections: PostgresConnections | SqliteConnections | None = None
        paused: SuspensionStore | None = None
        try:
            with anyio.fail_after(STARTUP_TIMEOUT_SECONDS):
                if url.kind == "postgres":
                    connections = PostgresConnections(url.location)
                    paused = PostgresSuspensions(url.location) if pauses else None
                else:
                    paused = SqliteSuspensions(url.location) if pauses else None
                    connections = await anyio.to_thread.run_sync(SqliteConnections, url.location)
                await connections.ping()
                if paused is not None:
                    await paused.get("a start-up check")  # makes its table, as its first use would
        except TimeoutError:
            await _close(connections, paused)
            raise StoreUnreachable(f"the store {url.shown} did not answer within {STARTUP_TIMEOUT_SECONDS} s") from None
        except Exception as exc:
            await _close(connections, paused)
            described = url.scrub(f"{type(exc).__name__}: {exc}")
            raise StoreUnreachable(f"cannot use the store {url.shown}: {described}") from None
        return connections, paused


async def _close(connections: PostgresConnections | SqliteConnections | None, paused: SuspensionStore | None) -> None:
    with anyio.CancelScope(shield=True):
        for store in (connections, paused):
            # Closing what did not answer may fail too; the failure already said is the news.
            with contextlib.suppress(Exception):
                if store is not None:
                    await store.aclose()
