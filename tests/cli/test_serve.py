"""`mycelium serve APP`: loading APP, clear refusals, and serving the notes app to a real MCP client."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import mcp_types
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from mycelium.cli import cli
from mycelium.cli._apps import AppError, load_catalog, parse_app
from mycelium.cli._banner import INSPECTOR_NODE, INSPECTOR_VERSION
from mycelium.mcp import McpCatalog
from tests.support.paths import EXAMPLES
from tests.thirdparty.conftest import bin_script, installed_manifest, pinned, pinned_node

NOTES_APP = EXAMPLES / "notes_app.py"
URL = re.compile(r"http://127\.0\.0\.1:\d+/mcp")
TOKEN_LINE = re.compile(r"^\s*Token\s+(\S+)")

APP_SOURCE = """
from mycelium.mcp import McpAuthority, create_mcp_catalog
from mycelium.testing import rejecting_sandbox

def load(principal):
    return McpAuthority(grants={})

def create_catalog():
    return create_mcp_catalog(load=load, sandbox=rejecting_sandbox())

async def make_async():
    return create_mcp_catalog(load=load, sandbox=rejecting_sandbox())

catalog = create_catalog()

class holder:
    catalog = catalog

NUMBER = 3

def needs_args(folder):
    return catalog

def raises():
    raise RuntimeError("boom in the factory")

def returns_other():
    return {"not": "a catalog"}
"""


@pytest.fixture
def app_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder with an app module (named uniquely), as the current folder; sys.path and sys.modules restored."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    (tmp_path / f"{app_name(tmp_path)}.py").write_text(APP_SOURCE)
    (tmp_path / "broken_app.py").write_text("VALUE = 1 / 0\n")
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def app_name(folder: Path) -> str:
    return "cli_app_" + re.sub(r"\W", "_", folder.name)


async def test_app_names_a_catalog_as_module_colon_attribute(app_dir: Path) -> None:
    loaded = await load_catalog(f"{app_name(app_dir)}:catalog")
    assert loaded is sys.modules[app_name(app_dir)].catalog
    await loaded.aclose()  # type: ignore[attr-defined]


async def test_app_as_a_file_path_defaults_to_its_create_catalog_factory(app_dir: Path) -> None:
    loaded = await load_catalog(f"{app_name(app_dir)}.py")
    assert isinstance(loaded, McpCatalog)
    assert loaded is not sys.modules[app_name(app_dir)].catalog  # a fresh one from the factory
    await loaded.aclose()


async def test_app_factory_may_be_async_and_the_attribute_dotted(app_dir: Path) -> None:
    made = await load_catalog(f"{app_dir / app_name(app_dir)}.py:make_async")
    held = await load_catalog(f"{app_name(app_dir)}:holder.catalog")
    assert isinstance(made, McpCatalog)
    assert held is sys.modules[app_name(app_dir)].catalog
    await made.aclose()
    await held.aclose()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("app", "expected"),
    [
        ("mycelium.notes:catalog", "mycelium.notes"),
        ("no_such_module_here", "no module named 'no_such_module_here'"),
        ("missing.py", "no such file: missing.py"),
        ("APP.py:nothing", "has no attribute 'nothing'"),
        ("APP.py:NUMBER", "is a int, not a Module, a list of modules, a Runtime, an McpCatalog"),
        ("APP.py:needs_args", "must be callable with no arguments"),
        ("APP:raises", "raised RuntimeError: boom in the factory"),
        ("APP.py:returns_other", "returned a dict, not a Module, a list of modules, a Runtime, an McpCatalog"),
        ("broken_app.py", "raised ZeroDivisionError: division by zero"),
        ("APP.py:", "is not an attribute name"),
        ("not a module!:x", "neither a module name nor a .py file"),
    ],
)
def test_serve_refuses_an_app_it_cannot_serve_with_one_clear_line_and_exit_code_2(
    app_dir: Path, app: str, expected: str
) -> None:
    result = CliRunner().invoke(cli, ["serve", app.replace("APP", app_name(app_dir)), "--port", "0"])
    output = result.stdout + result.stderr
    assert result.exit_code == 2, output
    assert "Error:" in result.stderr
    assert expected in output
    assert "Traceback" not in output


def test_serve_refuses_an_empty_token(app_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", f"{app_name(app_dir)}.py"], env={"MYCELIUM_TOKEN": " "})
    assert result.exit_code == 2
    assert "the token may not be empty" in result.stderr


def test_serve_says_when_the_mcp_server_fails_to_start_and_exits_1(
    app_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Unstartable:
        asgi = None

        @asynccontextmanager
        async def running(self) -> AsyncIterator[None]:
            raise RuntimeError("no session manager today")
            yield

        async def close(self) -> None:
            pass

    monkeypatch.setattr("mycelium.cli._http.create_mcp", lambda **_: Unstartable())
    result = CliRunner().invoke(cli, ["serve", f"{app_name(app_dir)}.py", "--port", "0"])
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "the server failed to start" in result.stderr
    assert "URL" not in result.stdout  # nothing is announced that does not serve


def test_app_spec_tells_files_from_modules() -> None:
    assert str(parse_app("pkg.mod")) == "pkg.mod:create_catalog"
    assert str(parse_app("apps/notes.py")) == "apps/notes.py:create_catalog"
    assert parse_app("notes.py:build").file == Path("notes.py")
    assert parse_app("pkg.mod:holder.catalog").module == "pkg.mod"
    with pytest.raises(AppError):
        parse_app(":x")


# -- the main job, end to end: a real server process and the official SDK client -------------


def server_env(data_dir: Path, token: str | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("MYCELIUM_TOKEN", "FORCE_COLOR")}
    env.update({"MYCELIUM_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"})
    if token is not None:
        env["MYCELIUM_TOKEN"] = token
    return env


@dataclass
class Served:
    process: Process
    url: str
    banner: list[str]

    @property
    def printed_token(self) -> str:
        for line in self.banner:
            if found := TOKEN_LINE.match(line):
                return found.group(1)
        raise AssertionError(f"no token line in {self.banner}")

    async def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        with anyio.fail_after(30):
            return await self.process.wait()


@asynccontextmanager
async def serving(
    data_dir: Path,
    log: Path,
    *,
    token: str | None = None,
    options: Sequence[str] = (),
    app: Sequence[str] = (str(NOTES_APP),),
) -> AsyncIterator[Served]:
    """`mycelium serve` on ``app`` (the notes app by default) on a free port; yields once its banner
    (and so its URL) is printed."""
    command = [sys.executable, "-m", "mycelium.cli", "serve", *app, "--port", "0", *options]
    with log.open("ab") as log_file:
        process = await anyio.open_process(command, env=server_env(data_dir, token), stderr=log_file)
    try:
        assert process.stdout is not None
        stdout = BufferedByteReceiveStream(process.stdout)
        banner: list[str] = []
        with anyio.fail_after(45):
            while not banner or not banner[-1].startswith("Press Ctrl-C"):
                banner.append((await stdout.receive_until(b"\n", 65_536)).decode())
        url = next(found.group(0) for line in banner if (found := URL.search(line)))
        yield Served(process, url, banner)
    except BaseException:
        print(await anyio.Path(log).read_text(), file=sys.stderr)  # the server's own account, shown with the failure
        raise
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.wait()
            await process.aclose()


@asynccontextmanager
async def connected(url: str, token: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            yield client


def text_of(result: mcp_types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, mcp_types.TextContent)
    return first.text


def stored_titles(data_dir: Path) -> list[str]:
    with closing(sqlite3.connect(data_dir / "notes.db")) as db:
        return [title for (title,) in db.execute("SELECT title FROM notes ORDER BY id")]


async def test_serve_runs_the_notes_app_for_an_sdk_client_stops_on_sigint_and_keeps_the_note(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "server.log"

    # First run: no MYCELIUM_TOKEN, so a token is generated and printed; the client uses it.
    async with serving(data_dir, log) as served:
        token = served.printed_token
        assert len(token) >= 32
        assert any('"Authorization": "Bearer ' + token + '"' in line for line in served.banner)
        async with connected(served.url, token) as client:
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == ["execute"]
            created = await client.call_tool(
                "execute",
                {"code": 'note = await notes.create(title="Written over MCP", tags=["mcp"])\nreturn note["id"]'},
            )
            assert not created.is_error, text_of(created)
        assert await served.stop() == 0
    seeded = stored_titles(data_dir)
    assert seeded[-1] == "Written over MCP"

    # Second run on the same data, with the operator's token, which the banner does not repeat.
    chosen = "operator-chosen-token-" + "x" * 20
    async with serving(data_dir, log, token=chosen) as served:
        assert chosen not in "".join(served.banner)
        async with connected(served.url, chosen) as client:
            found = await client.call_tool("execute", {"code": 'return await notes.search(text="over MCP")'})
            assert [note["title"] for note in json.loads(text_of(found))] == ["Written over MCP"]
            # Stopped while the client still holds its connection open: the server does not wait for it.
            assert await served.stop() == 0
    assert stored_titles(data_dir) == seeded  # restarts seed nothing twice
    assert token not in log.read_text()
    assert chosen not in log.read_text()


async def test_serve_over_stdio_serves_an_sdk_client_and_asks_it_before_deleting(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mycelium.cli", "serve", str(NOTES_APP), "--transport", "stdio"],
        env=server_env(data_dir, None),
    )
    asked: list[str] = []

    async def approve(context: object, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"approve": True})

    with (tmp_path / "stderr.log").open("w") as errlog:
        transport = stdio_client(parameters, errlog=errlog)
        async with Client(transport, mode="legacy", elicitation_callback=approve) as client:
            tools = await client.list_tools()
            deleted = await client.call_tool("execute", {"code": "return await notes.delete(id=1)"})
    assert [tool.name for tool in tools.tools] == ["execute"]
    assert text_of(deleted) == '{"id":1,"deleted":true}'
    assert len(asked) == 1
    assert "notes.delete" in asked[0]
    assert len(stored_titles(data_dir)) == 3


async def test_serve_over_stdio_writes_only_protocol_messages_to_stdout_and_exits_0_when_stdin_closes(
    tmp_path: Path,
) -> None:
    command = [sys.executable, "-m", "mycelium.cli", "serve", str(NOTES_APP), "--transport", "stdio"]
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    with (tmp_path / "stderr.log").open("wb") as errlog:
        process = await anyio.open_process(command, env=server_env(tmp_path / "data", None), stderr=errlog)
    async with process:
        assert process.stdin is not None
        assert process.stdout is not None
        for request in requests:
            await process.stdin.send(json.dumps(request).encode() + b"\n")
        stdout = BufferedByteReceiveStream(process.stdout)
        messages = []
        with anyio.fail_after(45):
            while not messages or messages[-1].get("id") != 2:
                messages.append(json.loads(await stdout.receive_until(b"\n", 1 << 20)))
            await process.stdin.aclose()
            rest = b"".join([chunk async for chunk in process.stdout])
            code = await process.wait()
    assert all(message["jsonrpc"] == "2.0" for message in messages)
    assert [tool["name"] for tool in messages[-1]["result"]["tools"]] == ["execute"]
    assert rest == b""
    assert code == 0


async def test_serve_accepts_loopback_and_the_allowed_hosts_only(tmp_path: Path) -> None:
    token = "allow-host-token"
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    async with serving(
        tmp_path / "data", tmp_path / "server.log", token=token, options=["--allow-host", "notes.test"]
    ) as served:
        port = served.url.split(":")[2].split("/")[0]
        statuses = {}
        async with httpx2.AsyncClient(timeout=30) as http:
            for host in ("127.0.0.1", "notes.test", "other.test"):
                sent = {
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/json, text/event-stream",
                    "Host": f"{host}:{port}",
                }
                statuses[host] = (await http.post(served.url, json=initialize, headers=sent)).status_code
        assert await served.stop() == 0
    assert statuses["127.0.0.1"] == 200
    assert statuses["notes.test"] == 200
    assert 400 <= statuses["other.test"] < 500


def test_serve_refuses_an_allowed_host_that_is_not_a_host(app_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", f"{app_name(app_dir)}.py", "--allow-host", "evil.test/path"])
    assert result.exit_code == 2
    assert "--allow-host" in result.output


# -- the banner's MCP Inspector commands, run as printed ----------------------------------------

INSPECTOR = "@modelcontextprotocol/inspector"
INSPECTOR_LINE = re.compile(r"\s+(List the tool|Run a program|Over stdio):\s+(npx .*)$")


def test_the_banner_names_the_inspector_the_tests_pin() -> None:
    assert pinned()[INSPECTOR] == INSPECTOR_VERSION


def test_the_banner_names_the_node_the_pinned_inspector_declares() -> None:
    assert installed_manifest(INSPECTOR)["engines"]["node"] == f">={INSPECTOR_NODE}.0"


async def test_every_inspector_command_the_banner_prints_runs_as_printed(tmp_path: Path) -> None:
    # Only the launcher differs from what a person pastes: npx would download the same pinned version.
    local = f"{shlex.quote(pinned_node())} {shlex.quote(str(bin_script(INSPECTOR, 'mcp-inspector')))}"
    token = "inspector-token-" + "i" * 24
    env = {**server_env(tmp_path / "data", token), "HOME": str(tmp_path / "home")}
    async with serving(tmp_path / "data", tmp_path / "server.log", token=token, options=("--cwd", str(tmp_path))) as s:
        shown = (INSPECTOR_LINE.match(line) for line in s.banner)
        printed = dict(found.groups() for found in shown if found is not None)
        assert set(printed) == {"List the tool", "Run a program", "Over stdio"}, s.banner
        answers = {}
        for label, command in printed.items():
            assert command.startswith(f"npx -y {INSPECTOR}@{INSPECTOR_VERSION} --cli ")
            ran = command.replace(f"npx -y {INSPECTOR}@{INSPECTOR_VERSION}", local, 1)
            with anyio.fail_after(60):
                done = await anyio.run_process(["sh", "-c", ran], env=env, check=False, stdin=subprocess.DEVNULL)
            assert done.returncode == 0, (label, done.stdout.decode(), done.stderr.decode())
            answers[label] = json.loads(done.stdout)
    assert [tool["name"] for tool in answers["List the tool"]["tools"]] == ["execute"]
    assert answers["Run a program"]["content"][0]["text"] == "2"
    assert answers["Over stdio"]["content"][0]["text"] == "2"
