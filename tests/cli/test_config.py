"""`--config FILE`: the mcpServers config desktop agents use, read strictly and served as one execute tool."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import Result
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send
from typer.testing import CliRunner

from mycelium.cli import cli
from mycelium.cli._target import choose_target
from mycelium.mcp._config import McpConfigError, UpstreamConfig, parse_config, read_config
from tests.cli.test_serve import connected, server_env, serving, text_of
from tests.support.apps import tally_server
from tests.support.loopback import serve_asgi
from tests.support.paths import APPS, ROOT

TALLY_SERVER = str(APPS / "tally_server.py")
# Canaries: values that must never be printed, logged or echoed in an error.
SECRET = "canary-secret-3f9a1c"
SECRET_URL = f"https://mcp.example.test/mcp?key={SECRET}"


def servers(**entries: object) -> dict[str, object]:
    return {"mcpServers": entries}


def test_a_desktop_config_is_one_server_per_key_in_key_order_with_cwd_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    config = tmp_path / "mcp.json"
    document = {
        "globalShortcut": "Ctrl+Space",  # a desktop app's own settings beside mcpServers
        "mcpServers": {
            "tracker": {"type": "http", "url": "https://tracker.example/mcp", "headers": {"Authorization": SECRET}},
            "files": {
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "server-filesystem", "."],
                "env": {"TOKEN": SECRET},
                "cwd": "work",
                "confirmDestructive": True,
                "autoApprove": ["read_file"],  # another agent's field: ignored
            },
            "old": {"command": "old-server", "disabled": True},
            "cloud": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp", "optional": True},
        },
    }
    config.write_text(json.dumps(document))
    read = read_config(config)
    assert [server.key for server in read] == ["cloud", "files", "tracker"]
    cloud, files, tracker = read
    assert (cloud.url, cloud.optional, cloud.command) == ("http://127.0.0.1:9/mcp", True, None)
    assert files == UpstreamConfig(
        "files",
        command="npx",
        args=("-y", "server-filesystem", "."),
        env={"TOKEN": SECRET},
        cwd=str((tmp_path / "work").resolve()),
        confirm_destructive=True,
    )
    assert tracker.headers == {"Authorization": SECRET}
    assert SECRET not in repr(read)


def test_variables_in_values_come_from_the_environment_with_optional_defaults() -> None:
    document = servers(
        gh={"command": "gh-mcp", "args": ["--org", "${ORG:-acme}"], "env": {"GITHUB_TOKEN": "${GH_TOKEN}"}},
        api={"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN}"}},
    )
    api, gh = parse_config(document, environ={"GH_TOKEN": SECRET, "HOST": "api.example", "API_TOKEN": SECRET})
    assert gh.args == ("--org", "acme")
    assert gh.env == {"GITHUB_TOKEN": SECRET}
    assert (api.url, api.headers) == ("https://api.example/mcp", {"Authorization": f"Bearer {SECRET}"})
    with pytest.raises(McpConfigError) as unset:
        parse_config(document, environ={"HOST": "api.example", "API_TOKEN": SECRET})
    assert (
        str(unset.value)
        == "server 'gh': env['GITHUB_TOKEN'] refers to ${GH_TOKEN}, which is not set in the environment"
    )


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ([], "the config must be a JSON object, not an array"),
        ({"servers": {}}, 'the config has no "mcpServers" object'),
        ({"mcpServers": [SECRET]}, "mcpServers must be an object, not an array"),
        (servers(), "mcpServers names no server to serve"),
        (servers(off={"command": SECRET, "disabled": True}), "mcpServers names no server to serve (all are disabled)"),
        (servers(**{"": {"command": "x"}}), "mcpServers has a server with an empty key"),
        (servers(gh=SECRET), "server 'gh': its entry must be an object, not a string"),
        (servers(gh={"args": [SECRET]}), "server 'gh': its entry needs a command (a stdio server) or a url"),
        (servers(gh={"command": SECRET, "url": SECRET_URL}), "server 'gh': its entry has both command (stdio) and url"),
        (servers(gh={"command": 7}), "server 'gh': command must be a string, not a number"),
        (servers(gh={"command": "  "}), "server 'gh': command must not be empty"),
        (servers(gh={"command": "x", "args": SECRET}), "server 'gh': args must be an array of strings, not a string"),
        (servers(gh={"command": "x", "args": [SECRET, 3]}), "server 'gh': args[1] must be a string, not a number"),
        (servers(gh={"command": "x", "env": [SECRET]}), "server 'gh': env must be an object of strings, not an array"),
        (
            servers(gh={"command": "x", "env": {"TOKEN": 12345}}),
            "server 'gh': env['TOKEN'] must be a string, not a number",
        ),
        (
            servers(gh={"command": "x", "env": {"A=B": SECRET}}),
            "server 'gh': env['A=B'] is not an environment variable",
        ),
        (servers(gh={"command": "x", "env": {"T": SECRET + "\x00"}}), "server 'gh': env['T'] must not contain a NUL"),
        (servers(gh={"command": "x", "cwd": "no/such/folder"}), "server 'gh': cwd names no folder"),
        (
            servers(gh={"command": "x", "headers": {"A": SECRET}}),
            "server 'gh': headers does not apply to a stdio server",
        ),
        (servers(gh={"url": SECRET_URL, "env": {"A": SECRET}}), "server 'gh': env does not apply to a Streamable HTTP"),
        (servers(gh={"url": f"ftp://{SECRET}/"}), "server 'gh': url must be an http:// or https:// URL with a host"),
        (servers(gh={"url": f"http://[{SECRET}/mcp"}), "server 'gh': url must be an http:// or https:// URL"),
        (servers(gh={"url": SECRET_URL, "headers": {"Authorization": 1}}), "headers['Authorization'] must be a string"),
        (servers(gh={"url": SECRET_URL, "headers": {"Bad Name": SECRET}}), "headers['Bad Name'] is not an HTTP header"),
        (servers(gh={"url": SECRET_URL, "headers": {"X": SECRET + "\r\n"}}), "headers['X'] must not contain a line"),
        (
            servers(gh={"url": SECRET_URL, "type": "sse"}),
            "server 'gh': type 'sse' (the older HTTP+SSE transport) is not",
        ),
        (servers(gh={"url": SECRET_URL, "type": "ws"}), "server 'gh': type 'ws' is not one of stdio, http"),
        (servers(gh={"url": SECRET_URL, "type": "stdio"}), "server 'gh': type 'stdio' does not match its url"),
        (servers(gh={"command": "x", "type": "http"}), "server 'gh': type 'http' does not match its command"),
        (servers(gh={"command": "x", "type": 1}), "server 'gh': type must be a string, not a number"),
        (servers(gh={"command": "x", "confirmDestructive": "yes"}), "confirmDestructive must be true or false"),
        (servers(gh={"command": "x", "envFile": ".env"}), "server 'gh': field 'envFile' is not one Mycelium reads"),
        (servers(gh={"comand": SECRET}), "server 'gh': field 'comand' is not one Mycelium reads"),
        (
            servers(gh={"command": "x", "connectTimeoutMs": "60000"}),
            "server 'gh': connectTimeoutMs must be a whole number of milliseconds",
        ),
        (
            servers(gh={"command": "x", "connectTimeoutMs": 0}),
            "server 'gh': connectTimeoutMs must be a whole number of milliseconds",
        ),
        (
            servers(gh={"command": "x", "callTimeoutMs": -5}),
            "server 'gh': callTimeoutMs must be a whole number of milliseconds",
        ),
        (
            servers(gh={"command": "x", "callTimeoutMs": True}),
            "server 'gh': callTimeoutMs must be a whole number of milliseconds",
        ),
        (
            servers(gh={"command": "x", "connectTimeoutMs": 3_600_001}),
            "server 'gh': connectTimeoutMs must be a whole number of milliseconds",
        ),
        (
            servers(gh={"command": "x", "connectTimeoutMs": 1.5}),
            "server 'gh': connectTimeoutMs must be a whole number of milliseconds",
        ),
    ],
)
def test_each_config_error_names_the_server_key_and_field_and_no_secret(
    document: Any, expected: str, tmp_path: Path
) -> None:
    with pytest.raises(McpConfigError) as raised:
        parse_config(document, base=tmp_path, environ={})
    assert expected in str(raised.value)
    assert SECRET not in str(raised.value)


def test_a_servers_own_connect_and_call_timeouts_are_read_in_milliseconds_and_timeout_stays_another_agents(
    tmp_path: Path,
) -> None:
    document = servers(
        slow={"command": "npx", "connectTimeoutMs": 120_000, "callTimeoutMs": 30_000, "timeout": 60},
        quick={"url": "https://tracker.example/mcp", "connectTimeoutMs": 2_000},
        plain={"command": "x", "timeout": 5},
    )
    plain, quick, slow = parse_config(document, base=tmp_path, environ={})
    assert (slow.connect_timeout_ms, slow.call_timeout_ms) == (120_000, 30_000)
    assert (quick.connect_timeout_ms, quick.call_timeout_ms) == (2_000, None)
    # Cline's timeout is in seconds and Claude Code's in milliseconds, per call: read as neither.
    assert (plain.connect_timeout_ms, plain.call_timeout_ms) == (None, None)


def test_a_config_file_that_is_not_json_or_has_a_key_twice_is_refused_without_quoting_it(tmp_path: Path) -> None:
    broken, twice = tmp_path / "broken.json", tmp_path / "twice.json"
    broken.write_text('{"mcpServers": {"gh": {"command": "x", "env": {"T": "' + SECRET + '"}}}')
    twice.write_text('{"mcpServers": {"gh": {"command": "a"}, "gh": {"command": "' + SECRET + '"}}}')
    with pytest.raises(McpConfigError) as not_json:
        read_config(broken)
    with pytest.raises(McpConfigError) as duplicated:
        read_config(twice)
    with pytest.raises(McpConfigError) as missing:
        read_config(tmp_path / "missing.json")
    assert str(not_json.value).startswith("not valid JSON: Expecting ',' delimiter at line 1 column")
    assert str(duplicated.value) == "the key 'gh' appears twice in one object"
    assert str(missing.value) == "no such file"
    assert SECRET not in str(not_json.value) + str(duplicated.value)


# -- the command line: --config instead of APP ------------------------------------------------


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["serve"], "give APP, or --config FILE for an mcpServers config"),
        (["serve", "app.py", "--config", "mcp.json"], "give APP or --config FILE, not both"),
        (["describe", "app.py", "x.y", "--config", "mcp.json"], "give APP or --config FILE, not both"),
        (["search", "--config", "mcp.json"], "say what you need"),
        (["exec", "--config", "mcp.json"], "give the program once"),
        (["check"], "give APP, or --config FILE"),
    ],
)
def test_a_verb_takes_app_or_config_exactly_once_as_a_usage_error(args: list[str], expected: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr


def test_connect_timeout_without_config_is_a_usage_error_saying_it_is_for_config_servers() -> None:
    result = invoke("exec", "app.py", "-c", "return 1", "--connect-timeout", "30")
    assert result.exit_code == 2, result.output
    assert "applies to the servers of --config FILE" in result.stderr


@pytest.mark.parametrize("verb", ["serve", "exec", "describe", "search", "check"])
def test_every_verbs_help_offers_config_instead_of_app(verb: str) -> None:
    result = invoke(verb, "--help")
    assert result.exit_code == 0
    assert "--config FILE" in result.stdout
    assert "mcpServers" in result.stdout
    assert "--connect-timeout SECONDS" in result.stdout


def test_a_bad_config_is_one_line_naming_the_file_and_field_with_exit_code_2_and_no_secret(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(servers(gh={"command": "x", "env": {"GITHUB_TOKEN": SECRET}, "args": [SECRET, 1]})))
    for args in (["serve", "--config", str(config), "--port", "0"], ["describe", "--config", str(config)]):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == f"Error: {config}: server 'gh': args[1] must be a string, not a number"
        assert SECRET not in result.output


# -- end to end: a real upstream server over stdio, served and described ----------------------


def tally_config(folder: Path, *, beside: dict[str, object] | None = None, **options: object) -> Path:
    """A config naming the tally server (tests/support/apps), a secret in its env and a cwd relative to the file."""
    (folder / "work").mkdir(parents=True, exist_ok=True)
    config = folder / "mcp.json"
    entry = {"command": sys.executable, "args": [TALLY_SERVER], "env": {"TALLY_TOKEN": SECRET}, "cwd": "work"}
    config.write_text(json.dumps(servers(tally={**entry, **options}, **(beside or {}))))
    return config


TALLY_PROGRAM = """
import asyncio
added = await tally.add(a=2, b=3)
digest, folder = await asyncio.gather(tally.token_digest(), tally.folder())
return {"total": added["sum"], "digest": digest["sha256"], "folder": folder["path"]}
"""


def tally_answer(folder: Path) -> dict[str, object]:
    return {
        "total": 5,
        "digest": hashlib.sha256(SECRET.encode()).hexdigest(),
        "folder": str((folder / "work").resolve()),
    }


async def test_serve_config_gives_an_sdk_client_one_execute_over_a_stdio_upstream_and_prints_no_secret(
    tmp_path: Path,
) -> None:
    config, log = tally_config(tmp_path), tmp_path / "server.log"
    async with serving(tmp_path / "data", log, app=["--config", str(config)]) as served:
        banner = served.banner
        assert banner[0] == "Mycelium is serving 1 MCP server from mcp.json (tally) over MCP (Streamable HTTP)"
        shown = "\n".join(banner)
        assert f'"--config",\n        "{config.resolve()}"' in shown  # the stdio launch config serves it again
        async with connected(served.url, served.printed_token) as client:
            tools = await client.list_tools()
            result = await client.call_tool("execute", {"code": TALLY_PROGRAM})
        assert [tool.name for tool in tools.tools] == ["execute"]
        assert "tally" in (tools.tools[0].description or "")
        assert not result.is_error, text_of(result)
        assert json.loads(text_of(result)) == tally_answer(tmp_path)
        assert await served.stop() == 0
    assert SECRET not in shown + log.read_text()


async def test_serve_config_over_stdio_serves_an_sdk_client(tmp_path: Path) -> None:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mycelium.cli", "serve", "--config", str(tally_config(tmp_path)), "--transport", "stdio"],
        env=server_env(tmp_path / "data", None),
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with Client(stdio_client(parameters, errlog=errlog), mode="legacy") as client:
            result = await client.call_tool("execute", {"code": TALLY_PROGRAM})
    assert json.loads(text_of(result)) == tally_answer(tmp_path)
    assert SECRET not in (tmp_path / "stderr.log").read_text()


def test_describe_and_search_config_show_the_combined_catalog(tmp_path: Path) -> None:
    config = str(tally_config(tmp_path))
    whole, one = invoke("describe", "--config", config), invoke("describe", "--config", config, "tally.add")
    found = invoke("search", "--config", config, "add two numbers", "--limit", "2")
    for result in (whole, one, found):
        assert result.exit_code == 0, result.output
        assert SECRET not in result.output
    assert whole.stdout.startswith("Run a short Python program in a fresh sandbox")
    assert "tally" in whole.stdout
    assert "async def add(*, a: int, b: int)" in one.stdout
    assert found.stdout.splitlines()[0] == "tally.add  Add two whole numbers."
    phrased = invoke("search", "--config", config, "sum of numbers", "tally.add", "--limit", "1")
    assert phrased.exit_code == 0, phrased.output
    assert phrased.stdout == "tally.add  Add two whole numbers.\n"


def test_exec_config_runs_a_program_and_confirm_destructive_asks_before_tools_that_may_destroy(
    tmp_path: Path,
) -> None:
    plain = str(tally_config(tmp_path / "plain"))
    careful = str(tally_config(tmp_path / "careful", confirmDestructive=True))
    ran = invoke("exec", "--config", plain, "-c", TALLY_PROGRAM)
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.stdout) == tally_answer(tmp_path / "plain")
    for tool, asked in [("add", False), ("forget", True), ("bump", True)]:
        args = "a=1, b=2" if tool == "add" else 'name="x"'
        for config in (plain, careful):
            result = invoke("exec", "--config", config, "-c", f"return await tally.{tool}({args})")
            refused = result.exit_code == 0 and "confirmation-unavailable" in result.stdout
            assert refused == (asked and config == careful), (tool, config, result.output)


def test_a_server_that_cannot_start_fails_naming_it_unless_optional_and_prints_no_secret(tmp_path: Path) -> None:
    broken = {"command": str(tmp_path / "no-such-server"), "args": [SECRET], "env": {"T": SECRET}}
    alone = tmp_path / "alone.json"
    alone.write_text(json.dumps(servers(broken=broken)))
    beside = tally_config(tmp_path, beside={"broken": {**broken, "optional": True}})
    failed = invoke("exec", "--config", str(alone), "-c", "return 1")
    checked = invoke("check", "--config", str(alone))
    skipped = invoke("exec", "--config", str(beside), "-c", "return await tally.add(a=1, b=2)")
    assert failed.exit_code == 1
    assert failed.stderr.startswith("Error: source 'broken' failed to acquire: it raised FileNotFoundError")
    assert checked.exit_code == 1
    assert "error: broken: source 'broken' failed to acquire" in checked.stdout
    assert skipped.exit_code == 0, skipped.output
    assert json.loads(skipped.stdout) == {"sum": 3}
    assert "'broken' is skipped" in skipped.stderr
    for result in (failed, checked, skipped):
        assert SECRET not in result.output


def hanging_server(folder: Path, name: str) -> str:
    """An executable called ``name`` that starts a server which never answers ``initialize``, like npx downloading."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {HANGING_SERVERS} hang\n")
    script.chmod(0o755)
    return str(script)


HANGING_SERVERS = ROOT / "tests" / "mcp" / "upstream" / "servers.py"


def test_a_server_slow_to_start_is_bounded_by_connect_timeout_and_told_how_to_get_it_started(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(servers(slow={"command": hanging_server(tmp_path / "bin", "npx"), "args": [SECRET]})))
    result = invoke("exec", "--config", str(config), "--connect-timeout", "0.3", "-c", "return 1")
    assert result.exit_code == 1, result.output
    assert "no answer within connect_timeout_ms=300 while connecting and initializing" in result.stderr
    assert "npx may still be downloading the server on its first start" in result.stderr
    assert "retry in a minute, install the package beforehand" in result.stderr
    assert "connectTimeoutMs" in result.stderr
    assert "--connect-timeout SECONDS" in result.stderr
    assert SECRET not in result.output


def test_a_servers_own_connect_timeout_wins_over_the_command_lines(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    entry = {"command": hanging_server(tmp_path / "bin", "slow-server"), "connectTimeoutMs": 200}
    config.write_text(json.dumps(servers(slow=entry)))
    result = invoke("check", "--config", str(config), "--connect-timeout", "600")
    assert result.exit_code == 1, result.output
    assert "no answer within connect_timeout_ms=200" in result.stdout
    # Not a launcher that downloads: the advice is to check the server itself.
    assert "check that the server starts and answers, then retry" in result.stdout


def test_the_stdio_launch_config_keeps_a_connect_timeout_given_on_the_command_line(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    target, _ = choose_target(None, config, connect_timeout=90)
    assert target.launch_args() == ["--config", str(config.resolve()), "--connect-timeout", "90"]
    default, _ = choose_target(None, config)
    assert default.launch_args() == ["--config", str(config.resolve())]


@asynccontextmanager
async def tally_over_http() -> AsyncIterator[str]:
    """The tally server over Streamable HTTP on 127.0.0.1, answering only ``Bearer SECRET``; yields its URL."""
    app = tally_server.server.streamable_http_app(host="127.0.0.1")

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != f"Bearer {SECRET}".encode():
            await PlainTextResponse("who are you?", status_code=401)(scope, receive, send)
            return
        await app(scope, receive, send)

    async with serve_asgi(guarded) as base:
        yield f"{base}/mcp"


async def test_exec_config_reaches_an_http_upstream_with_its_headers_from_the_environment_and_prints_no_secret(
    tmp_path: Path,
) -> None:
    wrong = "canary-wrong-7d21e0"
    entry = {"type": "http", "url": "${TALLY_URL}", "headers": {"Authorization": "Bearer ${TALLY_SECRET}"}}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(servers(tally=entry)))
    command = [
        sys.executable,
        "-m",
        "mycelium.cli",
        "exec",
        "--config",
        str(config),
        "-c",
        "return await tally.add(a=2, b=3)",
    ]
    async with tally_over_http() as url:
        env = server_env(tmp_path / "data", None)
        allowed = await anyio.run_process(command, env={**env, "TALLY_URL": url, "TALLY_SECRET": SECRET}, check=False)
        refused = await anyio.run_process(command, env={**env, "TALLY_URL": url, "TALLY_SECRET": wrong}, check=False)
    assert allowed.returncode == 0, allowed.stderr.decode()
    assert json.loads(allowed.stdout) == {"sum": 5}
    assert refused.returncode == 1
    assert refused.stderr.decode().startswith("Error: source 'tally' failed to acquire")
    for run in (allowed, refused):
        assert SECRET.encode() not in run.stdout + run.stderr
        assert wrong.encode() not in run.stdout + run.stderr


FILESYSTEM_SERVER = ROOT / ".thirdparty" / "node_modules" / ".bin" / "mcp-server-filesystem"

FILES_PROGRAM = """
import asyncio
listing = await filesystem.list_directory(path=".")
first, second = await asyncio.gather(
    filesystem.read_text_file(path="a.txt"), filesystem.read_text_file(path="b.txt")
)
return {"listing": listing["content"], "text": first["content"] + second["content"]}
"""


@pytest.mark.skipif(not FILESYSTEM_SERVER.exists(), reason="make test installs the pinned server-filesystem with npm")
async def test_serve_config_serves_a_third_party_server_from_the_config_a_desktop_agent_would_use(
    tmp_path: Path,
) -> None:
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "a.txt").write_text("hello ")
    (tmp_path / "files" / "b.txt").write_text("world")
    config = tmp_path / "claude_desktop_config.json"
    entry = {"command": str(FILESYSTEM_SERVER), "args": ["."], "cwd": "files", "env": {"UNUSED_TOKEN": SECRET}}
    config.write_text(json.dumps(servers(filesystem=entry)))
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mycelium.cli", "serve", "--config", str(config), "--transport", "stdio"],
        env=server_env(tmp_path / "data", None),
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with Client(stdio_client(parameters, errlog=errlog), mode="legacy") as client:
            result = await client.call_tool("execute", {"code": FILES_PROGRAM})
    assert not result.is_error, text_of(result)
    assert json.loads(text_of(result)) == {"listing": "[FILE] a.txt\n[FILE] b.txt", "text": "hello world"}
    assert SECRET not in (tmp_path / "stderr.log").read_text()
