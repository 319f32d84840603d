"""`mycelium serve` with the approvals page, over real HTTP: the app's own sign-in (``--approver-auth``),
the agents' token refused, and what odd requests get from the real server.

A real `mycelium serve` process with a SQLite store serves the replicated notes app; the model's
client is the official SDK's, without elicitation, so its confirmed writes wait for the page.
Writes land in a SQLite file outside the server, where the test counts them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx2
import mcp_types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from mycelium.cli import cli
from tests.cli.replicas import KEY, TOKEN, replica
from tests.support.approver import Approver
from tests.support.apps.approver_sso import COOKIE
from tests.support.apps.replicated_notes import DB_ENV, writes_of
from tests.support.paths import APPS

NOTES = str(APPS / "replicated_notes.py")
SSO = f"{APPS / 'approver_sso.py'}:approver"
HANDLE = re.compile(r'"approval": "([^"]+)"')


def text_of(result: mcp_types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


async def test_a_person_the_apps_own_sign_in_admits_decides_and_the_agents_token_never_opens_the_page(
    tmp_path: Path,
) -> None:
    db = tmp_path / "writes.db"
    env = {DB_ENV: str(db), "MYCELIUM_STORE": f"sqlite:///{tmp_path / 'store.db'}", "MYCELIUM_SECRET_KEY": KEY}
    options = ("--approver-auth", SSO)
    async with replica(tmp_path / "data", app=(NOTES,), options=options, env=env) as served:
        [approvals_line] = [line for line in served.banner if "Approvals" in line]
        assert f"{served.base}/approvals" in approvals_line
        assert f"approvers signed in by {SSO}" in approvals_line
        assert "approver token" not in approvals_line  # none was generated: the app signs people in
        assert not (tmp_path / "data" / "approver-token").exists()  # nor kept for a later run

        agent_http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        async with agent_http, Client(streamable_http_client(served.url, http_client=agent_http), mode="legacy") as c:
            told = text_of(await c.call_tool("execute", {"code": "return await notes.publish(text='by-ada')"}))
            found = HANDLE.search(told)
            assert found is not None, told

            async with httpx2.AsyncClient(base_url=served.base, timeout=30) as http:
                as_agent = await http.get("/approvals", headers={"Authorization": f"Bearer {TOKEN}"})
                stranger = await http.get("/approvals")
                token_sign_in = await http.post("/approvals/login", data={"token": TOKEN})
                http.cookies.set(COOKIE, "session-of-ada")
                ada = Approver(http)
                [suspension_id] = await ada.listed()
                landed = await ada.decide(suspension_id, approve=True)

            done = await c.call_tool("execute", {"approval": found.group(1)})
        assert await served.stop() == 0
    assert as_agent.status_code == 403
    assert "agents never approve" in as_agent.text
    assert "sign in to the host" in stranger.text
    assert token_sign_in.status_code == 404
    assert "Approved" in landed.text
    assert served.log_holds("approved by 'member ada (approver)'")
    assert json.loads(text_of(done))["id"] >= 1
    assert [op for op, _ in writes_of(db, "by-ada")] == ["publish"]


async def test_odd_methods_names_and_paths_get_the_pages_own_answers_from_the_real_server(tmp_path: Path) -> None:
    env = {"MYCELIUM_APPROVER_TOKEN": "approver-" + "t" * 32, DB_ENV: str(tmp_path / "writes.db")}
    async with replica(tmp_path / "data", app=(NOTES,), env=env) as served:
        async with httpx2.AsyncClient(base_url=served.base, timeout=30) as http:
            head = await http.head("/approvals")
            options = await http.options("/approvals")
            rebound = await http.get("/approvals", headers={"Host": f"attacker.example:{served.port}"})
            nested = await http.get("/approvals/decide/again")
        assert await served.stop() == 0
    assert (head.status_code, head.content) == (200, b"")
    assert (options.status_code, options.headers["allow"]) == (405, "GET, HEAD")
    assert rebound.status_code == 421
    assert nested.status_code == 404
    assert "the approvals are at /approvals" in nested.text
    for answer in (head, options, rebound, nested):
        assert answer.headers["x-frame-options"] == "DENY"


def test_an_approver_check_that_is_not_there_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["serve", NOTES, "--port", "0", "--approver-auth", f"{APPS / 'approver_sso.py'}:nobody"],
        env={DB_ENV: str(tmp_path / "writes.db"), "MYCELIUM_DATA_DIR": str(tmp_path)},
    )
    assert result.exit_code == 2, result.output
    assert "has no attribute 'nobody'" in result.output
