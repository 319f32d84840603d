"""`mycelium serve --log-format text|json`: the run log of a real server, read from its stderr.

A real `mycelium serve` process serves the notes app over HTTP to the official SDK client,
which runs a success, a failure and a malformed call; the server's stderr is then read
line by line. A marker string is in every program's code, in an operation's arguments,
in the result, in what the program prints and in the malformed call's arguments: it must
never reach the log.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from typer.testing import CliRunner

from mycelium.cli import cli
from tests.cli.test_serve import NOTES_APP, connected, server_env, serving, text_of

MARKER = "okapi-marmalade-4412"
TOKEN = "runlog-test-token-" + "t" * 20
PRINCIPAL = "member local (owner)"


async def run_the_day(tmp_path: Path, log_format: str) -> tuple[str, dict[str, str]]:
    """Serve, run a success, a failure and a malformed call, stop; the stderr and each call's answer text."""
    log = tmp_path / "server.log"
    async with serving(tmp_path / "data", log, token=TOKEN, options=["--log-format", log_format]) as served:
        async with connected(served.url, TOKEN) as client:
            success = await client.call_tool(
                "execute",
                {"code": f'found = await notes.search(text="{MARKER}")\nprint("{MARKER}")\nreturn ["{MARKER}", found]'},
            )
            failure = await client.call_tool("execute", {"code": f'raise ValueError("{MARKER}")'})
            malformed = await client.call_tool("execute", {"code": 7, MARKER: MARKER})
        assert await served.stop() == 0
    assert not success.is_error
    assert failure.is_error
    assert malformed.is_error
    answers = {"ok": text_of(success), "guest-exception": text_of(failure), "invalid-arguments": text_of(malformed)}
    assert MARKER in answers["ok"]  # the marker did travel: the client got it, the log must not
    return log.read_text(), answers


def reference_in(text: str) -> str:
    return text.split("(reference ")[1].split(")")[0]


async def test_serve_logs_one_json_object_a_line_with_every_run_field_and_nothing_the_program_holds(
    tmp_path: Path,
) -> None:
    logged, answers = await run_the_day(tmp_path, "json")
    entries: list[dict[str, Any]] = [json.loads(line) for line in logged.splitlines() if line.strip()]
    assert all({"time", "level", "logger", "message"} <= entry.keys() for entry in entries)
    runs = [entry for entry in entries if entry["logger"] == "mycelium.runs"]
    assert [entry["outcome"] for entry in runs] == ["ok", "guest-exception", "invalid-arguments"]
    for entry in runs:
        assert entry["level"] == "INFO"
        assert entry["principal"] == PRINCIPAL
        assert entry["tool_call_id"].isdigit()  # the request's id on the connection
        assert entry["time"].endswith("+00:00")
        assert isinstance(entry["duration_ms"], float)
        assert entry["resumed"] is False
        assert entry["result_bytes"] == len(answers[entry["outcome"]].encode())
    success, failure, malformed = runs
    assert success["execution_id"].startswith("exec-")
    assert success["calls"] == 1
    assert success["printed_bytes"] == len(MARKER)
    assert "reference" not in success
    assert failure["execution_id"].startswith("exec-")
    assert failure["reference"] == reference_in(answers["guest-exception"])
    assert "execution_id" not in malformed  # nothing was started
    assert malformed["reference"] == reference_in(answers["invalid-arguments"])
    assert MARKER not in logged
    assert TOKEN not in logged


async def test_serve_logs_a_text_line_per_execute_naming_each_field(tmp_path: Path) -> None:
    logged, answers = await run_the_day(tmp_path, "text")
    runs = [line for line in logged.splitlines() if " mycelium.runs: " in line]
    assert len(runs) == 3
    success, failure, malformed = runs
    assert " INFO mycelium.runs: execute ok execution_id=exec-" in success
    assert " calls=1 " in success
    assert f"printed_bytes={len(MARKER)} " in success
    assert f'principal="{PRINCIPAL}"' in success
    assert f"execute guest-exception reference={reference_in(answers['guest-exception'])} " in failure
    assert f"execute invalid-arguments reference={reference_in(answers['invalid-arguments'])} " in malformed
    assert "execution_id" not in malformed
    assert "None" not in malformed
    for line in runs:
        assert "tool_call_id=" in line
        assert "duration_ms=" in line
        assert "result_bytes=" in line
    assert MARKER not in logged
    assert TOKEN not in logged


@pytest.mark.parametrize("given", ["yaml", ""])
def test_serve_refuses_a_log_format_it_does_not_know_naming_the_ones_it_does(given: str) -> None:
    result = CliRunner().invoke(cli, ["serve", "examples/notes_app.py", "--log-format", given])
    assert result.exit_code == 2
    assert "text" in result.output
    assert "json" in result.output


async def test_serve_over_stdio_logs_the_same_line_per_execute_on_stderr(tmp_path: Path) -> None:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mycelium.cli", "serve", str(NOTES_APP), "--transport", "stdio", "--log-format", "json"],
        env=server_env(tmp_path / "data", None),
    )
    stderr = tmp_path / "stderr.log"
    with stderr.open("w") as errlog:
        async with Client(stdio_client(parameters, errlog=errlog), mode="legacy") as client:
            result = await client.call_tool("execute", {"code": f'return "{MARKER}"'})
    assert not result.is_error
    entries = [json.loads(line) for line in stderr.read_text().splitlines() if line.strip()]
    [run] = [entry for entry in entries if entry["logger"] == "mycelium.runs"]
    assert (run["outcome"], run["principal"], run["calls"]) == ("ok", PRINCIPAL, 0)
    assert run["execution_id"].startswith("exec-")
    assert run["result_bytes"] == len(text_of(result))
    assert MARKER not in stderr.read_text()
