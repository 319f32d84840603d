"""The MCP Inspector CLI, a client nobody here wrote, against a served catalog.

The Inspector (npm ``@modelcontextprotocol/inspector``) is pinned in
``tests/thirdparty/npm-packages.txt`` with the Node.js it declares it needs, both installed
into ``.thirdparty/`` by ``make test``; without them these tests skip and say why. It runs
with HOME set to a scratch folder, so nothing is written to the real home. The server runs
in the test's event loop, so the CLI runs with ``anyio.run_process``: a blocking subprocess
call would stop the server it talks to.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.thirdparty.conftest import bin_script, pinned_node

from .conftest import ALICE, FORBIDDEN_TOKEN, Host, served

PACKAGE = "@modelcontextprotocol/inspector"
RUN_WITHIN_S = 45

AUTH_ERROR_EXIT = 3
"""The CLI's exit code for a server that refused its credentials (401 or 403)."""
TOOL_ERROR_EXIT = 5
"""The CLI's exit code for a tool result with ``isError: true``."""


@dataclass(frozen=True)
class Inspector:
    """The installed CLI: how to run it, and the environment it runs in."""

    node: str
    script: Path
    env: dict[str, str]

    async def run(
        self, url: str, *args: str, token: str | None = "token-alice", era: str = "legacy"
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``mcp-inspector --cli URL ARGS`` (non-interactive: only the credentials given) in ``era``:
        ``legacy`` (an initialize handshake, 2025-11-25) or ``modern`` (2026-07-28 requests)."""
        auth = ["--header", f"Authorization: Bearer {token}"] if token is not None else []
        command = [self.node, str(self.script), "--cli", url, *auth, "--stored-auth-only", "--protocol-era", era, *args]
        with anyio.fail_after(RUN_WITHIN_S):
            return await anyio.run_process(command, env=self.env, check=False, stdin=subprocess.DEVNULL)

    async def execute(
        self, url: str, code: str, *, token: str | None = "token-alice", era: str = "legacy"
    ) -> subprocess.CompletedProcess[bytes]:
        """Call the ``execute`` tool with ``code``."""
        arguments = json.dumps({"code": code})
        return await self.run(
            url, "--method", "tools/call", "--tool-name", "execute", "--tool-args-json", arguments, token=token, era=era
        )


@pytest.fixture(scope="session")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Inspector:
    """The pinned Inspector CLI and the pinned Node.js it runs on, from ``.thirdparty/``."""
    node, script = pinned_node(), bin_script(PACKAGE, "mcp-inspector")
    env = {**os.environ, "HOME": str(tmp_path_factory.mktemp("inspector-home")), "NO_COLOR": "1"}
    env.pop("MCP_AUTO_OPEN_ENABLED", None)  # never open a browser for OAuth
    return Inspector(node, script, env)


@pytest.fixture(params=["legacy", "modern"])
def era(request: pytest.FixtureRequest) -> str:
    """The Inspector's protocol era: a 2025-11-25 connection, or 2026-07-28 requests."""
    return str(request.param)


def granted() -> Host:
    host = Host()
    host.grant(ALICE, notes="write", reports="read")
    return host


def output(done: subprocess.CompletedProcess[bytes]) -> Any:
    assert done.returncode == 0, (done.returncode, done.stdout.decode(), done.stderr.decode())
    return json.loads(done.stdout)


async def test_the_inspector_cli_lists_the_one_execute_tool(inspector: Inspector, era: str) -> None:
    async with served(granted()) as s:
        listed = output(await inspector.run(s.url, "--method", "tools/list", era=era))
    [tool] = listed["tools"]
    assert tool["name"] == "execute"
    assert tool["inputSchema"]["required"] == ["code"]
    assert "forage.search" in tool["description"]
    assert tool["annotations"]["readOnlyHint"] is False


async def test_the_inspector_cli_calls_execute_with_a_program_of_several_operations(
    inspector: Inspector, era: str
) -> None:
    host = granted()
    code = (
        "import asyncio\n"
        "made = await notes.create(text='from the inspector')\n"
        "found, n = await asyncio.gather(notes.search(text='inspector'), apps.reports.count())\n"
        "return {'made': made['id'], 'found': [f['text'] for f in found], 'count': n}"
    )
    async with served(host) as s:
        done = await inspector.execute(s.url, code, era=era)
    result = output(done)
    assert result["isError"] is False
    assert json.loads(result["content"][0]["text"]) == {"made": 3, "found": ["from the inspector"], "count": 3}
    assert host.writes == [("create", 3)]


async def test_a_failed_execute_exits_with_the_tool_error_code_and_the_safe_message(
    inspector: Inspector, era: str
) -> None:
    async with served(granted()) as s:
        done = await inspector.execute(s.url, "1 / 0", era=era)
    assert done.returncode == TOOL_ERROR_EXIT, done.stderr.decode()
    result = json.loads(done.stdout)
    assert result["isError"] is True
    assert "ZeroDivisionError" in result["content"][0]["text"]


async def test_a_confirmation_the_inspector_cannot_answer_is_refused_not_hung(inspector: Inspector, era: str) -> None:
    host = granted()
    async with served(host) as s:
        done = await inspector.execute(s.url, "return await notes.delete(id=1)", era=era)
    refusal = json.loads(output(done)["content"][0]["text"])
    assert refusal["refused"] is True
    assert refusal["reason"] in ("confirmation-unavailable", "confirmation-declined")
    assert host.writes == []
    assert 1 in host.notes


@pytest.mark.parametrize("token", [None, "token-nobody", FORBIDDEN_TOKEN], ids=["missing", "unknown", "forbidden"])
async def test_the_inspector_cli_without_a_valid_token_exits_with_its_auth_error_code(
    inspector: Inspector, token: str | None
) -> None:
    host = granted()
    async with served(host) as s:
        done = await inspector.execute(s.url, "return await notes.create(text='x')", token=token)
    assert done.returncode == AUTH_ERROR_EXIT, (done.stdout.decode(), done.stderr.decode())
    assert json.loads(done.stderr)["error"]["code"] == "auth_required"
    assert host.writes == []
