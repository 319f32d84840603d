"""`mycelium serve --store URL`: one replica of many, sharing connection records and paused runs.

Replicas are real `mycelium serve` processes on one SQLite file or one real PostgreSQL
database (pgserver), each test on a database of its own. The store's URL carries a password
(pgserver trusts local connections, so any password connects): it must never appear in a
banner, a message or a log line.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import anyio
import httpx2
import mcp_types as types
import pytest
from typer.testing import CliRunner

from mycelium.cli import cli
from mycelium.cli._store import StoreError, parse_store
from tests.mcp import raw_http as raw

from .replicas import KEY, TOKEN, replica
from .test_config import tally_config

PASSWORD = "canary-pw-7e1d"
DELETE = "return await notes.delete(id=1)"
ACCEPT = {"approval": {"action": "accept", "content": {"approve": True}}}


async def admin(uri: str, sql: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(uri)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


@asynccontextmanager
async def fresh_database(postgres_uri: str) -> AsyncIterator[str]:
    """A fresh database on the tests' PostgreSQL, as a URL with a password in it; dropped afterwards."""
    database = f"replicas_{uuid4().hex}"
    await admin(postgres_uri, f'CREATE DATABASE "{database}"')
    parts = urlsplit(postgres_uri)
    user = parts.username or "postgres"
    try:
        yield urlunsplit(parts._replace(netloc=f"{user}:{PASSWORD}@{parts.hostname or ''}", path=f"/{database}"))
    finally:
        await admin(postgres_uri, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


@pytest.fixture
async def postgres_store(postgres_uri: str) -> AsyncIterator[str]:
    async with fresh_database(postgres_uri) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite://{tmp_path / 'store.sqlite'}"
        return
    async with fresh_database(request.getfixturevalue("postgres_uri")) as url:  # started for PostgreSQL only
        yield url


def masked(url: str) -> str:
    return url.replace(PASSWORD, "***")


# -- reading --store --------------------------------------------------------------------------


def test_a_postgres_url_is_shown_with_its_password_masked_wherever_it_is_written() -> None:
    url = parse_store("postgresql://bob:s3cr%21t@db.internal:5432/app?sslmode=require")
    assert (url.kind, url.shown) == ("postgres", "postgresql://bob:***@db.internal:5432/app?sslmode=require")
    assert url.scrub("auth failed for s3cr!t (s3cr%21t)") == "auth failed for *** (***)"
    in_query = parse_store("postgres://db.internal/app?user=bob&password=pw%2B1&sslmode=require")
    assert in_query.shown == "postgres://db.internal/app?user=bob&password=***&sslmode=require"
    assert in_query.scrub("pw+1 pw%2B1") == "*** ***"
    plain = parse_store("postgresql://db.internal/app")
    assert (plain.shown, plain.secrets) == ("postgresql://db.internal/app", ())
    assert "s3cr" not in repr(url)


def test_a_sqlite_store_is_the_path_after_sqlite_colon_slash_slash_or_a_plain_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse_store(f"sqlite://{tmp_path}/s.sqlite").location == f"{tmp_path}/s.sqlite"  # three slashes: absolute
    assert parse_store("sqlite://s.sqlite").location == "s.sqlite"
    assert parse_store(str(tmp_path / "s.sqlite")).kind == "sqlite"


@pytest.mark.parametrize(
    ("store", "expected"),
    [
        ("", "--store is empty"),
        ("mysql://bob:pw@db/app", "'mysql' is not a store mycelium serve keeps"),
        ("sqlite://:memory:", "a file other processes can open"),
        ("/no/such/folder/s.sqlite", "the folder of '/no/such/folder/s.sqlite' does not exist"),
        ("postgresql://bob:pw-in-a-bad-url@[::1/app", "is not a PostgreSQL URL this server can read"),
    ],
)
def test_a_store_that_cannot_be_read_is_refused_naming_why_and_no_password(store: str, expected: str) -> None:
    with pytest.raises(StoreError, match="--store") as refused:
        parse_store(store)
    assert expected in str(refused.value)
    assert "pw" not in str(refused.value).replace("postgresql", "")


# -- refusals on the command line: one line, no secret ---------------------------------------

APP_SOURCE = """
from mycelium import Module
from mycelium.mcp import McpAuthority, McpCatalogProvider, SqliteConnections, create_mcp_catalog
from mycelium.testing import rejecting_sandbox


def load(principal):
    return McpAuthority(grants={})


def create_catalog():
    return create_mcp_catalog(load=load, sandbox=rejecting_sandbox())


def durable():
    return create_mcp_catalog(load=load, sandbox=rejecting_sandbox(), connections=SqliteConnections("own.sqlite"))


class Provider(McpCatalogProvider):
    max_connections = 1

    async def open(self, connection_id, principal, *, bound, keep): ...
    async def resume(self, connection_id, principal): ...
    async def touch(self, connection_id): ...
    async def close(self, connection_id): ...
    async def refresh(self, principal): ...
    async def definition(self, principal, authority): ...
    async def execute(self, call, context): ...


def provider():
    return Provider()
"""


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An app file in a folder of its own, the current folder while the test runs; sys.path restored.

    Only the app's own module is forgotten afterwards: a driver imported while the test ran
    (asyncpg) is a C extension, which cannot be imported a second time in one process.
    """
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    path = tmp_path / f"store_app_{uuid4().hex}.py"
    path.write_text(APP_SOURCE)
    yield str(path)
    sys.modules.pop(path.stem, None)


def serve(arguments: list[str], **env: str | None) -> tuple[int, str]:
    unset = {"MYCELIUM_SECRET_KEY": None, "MYCELIUM_SECRET_KEY_FILE": None, "MYCELIUM_STORE": None}
    result = CliRunner().invoke(cli, ["serve", *arguments, "--port", "0"], env={**unset, **env})
    return result.exit_code, result.stdout + result.stderr


def test_a_replica_with_a_store_but_no_key_ring_refuses_to_start_with_one_line_and_exit_2(
    app: str, tmp_path: Path
) -> None:
    code, output = serve([app, "--store", str(tmp_path / "s.sqlite")])
    assert code == 2, output
    assert output.strip().splitlines() == [
        "Error: --store needs the deployment's secret key ring in MYCELIUM_SECRET_KEY or MYCELIUM_SECRET_KEY_FILE: "
        "a key of this process alone would make every other replica reject what it seals"
    ]
    assert not (tmp_path / "s.sqlite").exists()  # refused before anything was opened


def test_the_store_may_come_from_the_environment_and_a_bad_ring_is_named_never_quoted(app: str, tmp_path: Path) -> None:
    short = "short-but-still-secret"
    code, output = serve([app], MYCELIUM_STORE=str(tmp_path / "s.sqlite"), MYCELIUM_SECRET_KEY=f"{KEY},{short}")
    assert code == 2, output
    assert "Error: MYCELIUM_SECRET_KEY: key 2 of the ring is 22 characters" in output
    assert short not in output
    both = serve([app, "--store", str(tmp_path / "s.sqlite")], MYCELIUM_SECRET_KEY=KEY, MYCELIUM_SECRET_KEY_FILE="k")
    assert both[0] == 2
    assert "set MYCELIUM_SECRET_KEY or MYCELIUM_SECRET_KEY_FILE, not both" in both[1]


def test_a_store_that_does_not_answer_is_one_line_naming_it_without_its_password_and_exit_1(app: str) -> None:
    code, output = serve([app, "--store", f"postgresql://bob:{PASSWORD}@127.0.0.1:1/app"], MYCELIUM_SECRET_KEY=KEY)
    assert code == 1, output
    [line] = [line for line in output.splitlines() if line.startswith("Error:")]
    assert line.startswith("Error: cannot use the store postgresql://bob:***@127.0.0.1:1/app: ")
    assert PASSWORD not in output
    assert "Traceback" not in output


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [
        ("durable", "--store: this catalog already keeps its connections in a SqliteConnections of its own"),
        ("provider", "--store needs an McpCatalog (from create_mcp_catalog); the app's catalog is a Provider"),
    ],
)
def test_a_store_is_refused_for_a_catalog_that_keeps_its_records_itself(
    app: str, tmp_path: Path, attribute: str, expected: str
) -> None:
    code, output = serve([f"{app}:{attribute}", "--store", str(tmp_path / "s.sqlite")], MYCELIUM_SECRET_KEY=KEY)
    assert code == 2, output
    assert f"Error: {expected}" in output


# -- replicas at work ------------------------------------------------------------------------


async def pause(http: httpx2.AsyncClient, url: str) -> str:
    """Run the delete over 2026-07-28 until its confirmation; its requestState."""
    paused = await raw.send(http, "POST", url, sent=raw.modern_headers(TOKEN), body=raw.modern_call(DELETE))
    result = paused.result()
    assert result["resultType"] == "input_required", result
    state: str = result["requestState"]
    return state


async def approve(http: httpx2.AsyncClient, url: str, state: str) -> raw.Answer:
    body = raw.modern_call(DELETE, request_id=2, request_state=state, input_responses=ACCEPT)
    return await raw.send(http, "POST", url, sent=raw.modern_headers(TOKEN), body=body)


async def test_replicas_on_one_store_resume_each_others_connections_and_paused_runs(
    tmp_path: Path, store_url: str
) -> None:
    shared = {"MYCELIUM_STORE": store_url, "MYCELIUM_SECRET_KEY": KEY}
    data = tmp_path / "data"
    async with (
        replica(data, env=shared) as first,
        replica(data, env=shared) as second,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        session = await raw.open_session(http, first.url, TOKEN, raw.FORM_ELICITATION)
        listed = await raw.request(http, second.url, TOKEN, session, "tools/list")
        state = await pause(http, first.url)
        resumed = await approve(http, second.url, state)
        replayed = await approve(http, first.url, state)
        assert await first.stop() == 0
        assert await second.stop() == 0
    assert listed.status == 200
    assert [tool["name"] for tool in listed.result()["tools"]] == ["execute"]
    assert json.loads(resumed.result()["content"][0]["text"]) == {"id": 1, "deleted": True}
    assert replayed.result()["isError"] is True  # the first replica knows the run went on elsewhere: nothing reruns
    for served in (first, second):
        assert f"  Store  {masked(store_url)}" in "".join(served.banner)
        assert PASSWORD not in "".join(served.banner) + "\n".join(served.log)


async def test_a_replica_with_another_key_ring_refuses_what_the_others_sealed(
    tmp_path: Path, postgres_store: str
) -> None:
    data = tmp_path / "data"
    ours = {"MYCELIUM_STORE": postgres_store, "MYCELIUM_SECRET_KEY": KEY}
    theirs = {"MYCELIUM_STORE": postgres_store, "MYCELIUM_SECRET_KEY": "another-ring-" + "z" * 40}
    async with (
        replica(data, env=ours) as sealing,
        replica(data, env=theirs) as other,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        refused = await approve(http, other.url, await pause(http, sealing.url))
    [message] = refused.messages()
    assert message["error"]["code"] == types.INVALID_PARAMS


async def test_healthz_says_unavailable_once_the_store_stops_answering(tmp_path: Path, postgres_store: str) -> None:
    env = {"MYCELIUM_STORE": postgres_store, "MYCELIUM_SECRET_KEY": KEY}
    async with replica(tmp_path / "data", env=env) as served, httpx2.AsyncClient(timeout=30) as http:
        healthy = await http.get(f"{served.base}/healthz")
        database = urlsplit(postgres_store).path.lstrip("/")
        await admin(postgres_store.replace(f"/{database}", "/postgres"), f'DROP DATABASE "{database}" WITH (FORCE)')
        # Probed back to back: the answer of one check is reused for a second, so this floods
        # the replica, never the database.
        with anyio.fail_after(15):
            while (unhealthy := await http.get(f"{served.base}/healthz")).status_code == 200:
                pass
        await served.says("the store stopped answering health checks")
    assert (healthy.status_code, healthy.json()) == (200, {"status": "ok"})
    assert (unhealthy.status_code, unhealthy.json()) == (503, {"status": "unavailable"})
    assert PASSWORD not in "\n".join(served.log)


async def test_a_config_target_keeps_its_connections_in_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite"
    config = tally_config(tmp_path)
    env = {"MYCELIUM_STORE": str(store), "MYCELIUM_SECRET_KEY": KEY}
    async with (
        replica(tmp_path / "data", app=["--config", str(config)], env=env) as served,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        session = await raw.open_session(http, served.url, TOKEN)
        with closing(sqlite3.connect(store)) as db:
            recorded = [row[0] for row in db.execute("SELECT id FROM mcp_connections")]
    assert recorded == [session]
