"""The MCP Inspector CLI, a client nobody here wrote, against a served catalog.

The Inspector (npm ``@modelcontextprotocol/inspector``, pinned) is installed by this
module's set-up into a cache folder outside the repository, once per test session and
only when missing; a file lock keeps concurrent test runs from installing it twice. npm
and the Inspector run with HOME set to a scratch folder, so nothing is written to the
real home. The server runs in the test's event loop, so the CLI runs with
``anyio.run_process``: a blocking subprocess call would stop the server it talks to.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from .conftest import ALICE, FORBIDDEN_TOKEN, Host, served

PACKAGE = "@modelcontextprotocol/inspector"
VERSION = "2.12.0"
INSTALL_WITHIN_S = 240
RUN_WITHIN_S = 45

# The first test waits for the one-time install (about 10-20 s on a fresh machine): allow for it.
pytestmark = pytest.mark.timeout(INSTALL_WITHIN_S + 60)

AUTH_ERROR_EXIT = 3
"""The CLI's exit code for a server that refused its credentials (401 or 403)."""
TOOL_ERROR_EXIT = 5
"""The CLI's exit code for a tool result with ``isError: true``."""


def cache_folder() -> Path:
    """Where test tools are cached between runs: ``$XDG_CACHE_HOME`` or ``~/.cache``, never the repository."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "mycelium-tests"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def installed_version(folder: Path) -> str | None:
    manifest = folder / "node_modules" / PACKAGE / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


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
    """The pinned Inspector CLI, installed into the cache folder if it is not there yet."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("the MCP Inspector CLI needs node and npm on PATH, and this machine has no node/npm")
    home = tmp_path_factory.mktemp("inspector-home")
    env = {
        **os.environ,
        "HOME": str(home),  # npm's cache and the Inspector's stored state go here, not to the real home
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        "NO_COLOR": "1",
    }
    env.pop("MCP_AUTO_OPEN_ENABLED", None)  # never open a browser for OAuth
    folder = cache_folder() / f"inspector-{VERSION}"
    with locked(cache_folder() / "inspector.lock"):
        if installed_version(folder) != VERSION:
            shutil.rmtree(folder, ignore_errors=True)  # a half-finished earlier install
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(folder),
                    "--ignore-scripts",
                    "--loglevel=error",
                    f"{PACKAGE}@{VERSION}",
                ],
                env=env,
                capture_output=True,
                text=True,
                timeout=INSTALL_WITHIN_S,
                check=False,
            )
            if done.returncode != 0 or installed_version(folder) != VERSION:
                pytest.fail(f"npm install {PACKAGE}@{VERSION} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    script = folder / "node_modules" / ".bin" / "mcp-inspector"
    return Inspector(node, script.resolve(), env)


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
