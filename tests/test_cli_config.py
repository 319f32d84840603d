"""`--config FILE`: the mcpServers config desktop agents use, read strictly and served as one execute tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from mycelium.cli import cli
from mycelium.mcp.config import McpConfigError, UpstreamConfig, parse_config, read_config

TALLY_SERVER = str(Path(__file__).resolve().parent / "apps" / "tally_server.py")
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
    ],
)
def test_each_config_error_names_the_server_key_and_field_and_no_secret(
    document: Any, expected: str, tmp_path: Path
) -> None:
    with pytest.raises(McpConfigError) as raised:
        parse_config(document, base=tmp_path, environ={})
    assert expected in str(raised.value)
    assert SECRET not in str(raised.value)


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


@pytest.mark.parametrize("verb", ["serve", "exec", "describe", "search", "check"])
def test_every_verbs_help_offers_config_instead_of_app(verb: str) -> None:
    result = invoke(verb, "--help")
    assert result.exit_code == 0
    assert "--config FILE" in result.stdout
    assert "mcpServers" in result.stdout


def test_a_bad_config_is_one_line_naming_the_file_and_field_with_exit_code_2_and_no_secret(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(servers(gh={"command": "x", "env": {"GITHUB_TOKEN": SECRET}, "args": [SECRET, 1]})))
    for args in (["serve", "--config", str(config), "--port", "0"], ["describe", "--config", str(config)]):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == f"Error: {config}: server 'gh': args[1] must be a string, not a number"
        assert SECRET not in result.output
