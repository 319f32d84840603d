"""The approvals page in a real browser: Debian's headless Chromium, driven by Playwright, against a real
`mycelium serve` with a SQLite store, while a real program over MCP waits for the person's decision.

The MCP client is the official SDK's, with no elicitation callback: nobody can be asked through it, so its
confirmed writes wait for the page. Every write lands in a SQLite file outside the server, where the test
counts how many times it really happened. The test also saves the screenshots docs/approvals.md shows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import mcp_types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.cli.replicas import KEY, TOKEN, replica
from tests.support.apps.replicated_notes import DB_ENV, writes_of
from tests.support.paths import APPS, ROOT

playwright = pytest.importorskip("playwright.async_api", reason="playwright is not installed (the dev extra has it)")

CHROMIUM = Path("/usr/bin/chromium")
APPROVER = "approver-test-token-" + "p" * 24
HANDLE = re.compile(r'"approval": "([^"]+)"')
IMAGES = ROOT / "docs" / "images"
UPDATE_SCREENSHOTS = "MYCELIUM_UPDATE_SCREENSHOTS"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.is_file(),
    reason=f"{CHROMIUM} is missing: install Debian's chromium (make test does, as root with apt-get)",
)


@asynccontextmanager
async def agent(url: str) -> AsyncIterator[Client]:
    """The model's client: bearer token, no elicitation."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            yield client


def text_of(result: mcp_types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


def keep_screenshot(shot: Path) -> None:
    """Copy a screenshot into docs/images when it is missing there, or when asked to refresh them."""
    target = IMAGES / shot.name
    if not target.exists() or os.environ.get(UPDATE_SCREENSHOTS):
        IMAGES.mkdir(exist_ok=True)
        shutil.copyfile(shot, target)


async def test_a_person_approves_and_declines_in_a_browser_and_each_write_happens_at_most_once(
    tmp_path: Path,
) -> None:
    db = tmp_path / "writes.db"
    env = {
        DB_ENV: str(db),
        "MYCELIUM_STORE": f"sqlite:///{tmp_path / 'store.db'}",
        "MYCELIUM_SECRET_KEY": KEY,
        "MYCELIUM_APPROVER_TOKEN": APPROVER,
    }
    app = (str(APPS / "replicated_notes.py"),)
    async with replica(tmp_path / "data", app=app, env=env) as served, agent(served.url) as client:
        assert any(f"{served.base}/approvals" in line for line in served.banner)
        assert not any(APPROVER in line for line in served.banner)  # chosen by the operator: not shown

        async def pause(text: str) -> str:
            waiting = await client.call_tool("execute", {"code": f"return await notes.publish(text={text!r})"})
            told = text_of(waiting)
            assert "Waiting for a person's approval" in told
            assert text not in told  # the model's client never gets the arguments
            found = HANDLE.search(told)
            assert found is not None, told
            return found.group(1)

        approve_handle = await pause("approve-me")
        decline_handle = await pause("decline-me")
        early = await client.call_tool("execute", {"approval": approve_handle})
        assert early.is_error
        assert "still waits for a person" in text_of(early)

        async with playwright.async_playwright() as driver:
            args = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium's sandbox refuses to run as root
            browser = await driver.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=args)
            context = await browser.new_context(viewport={"width": 960, "height": 540})
            tab = await context.new_page()
            await tab.goto(f"{served.base}/approvals")
            await tab.locator("h1", has_text="Sign in to approve").wait_for()
            await tab.screenshot(path=tmp_path / "approvals-login.png")

            # The agents' token does not open the page.
            await tab.fill("input[name=token]", TOKEN)
            await tab.click("button[type=submit]")
            await tab.get_by_text("That token belongs to the agents").wait_for()

            await tab.fill("input[name=token]", APPROVER)
            await tab.click("button[type=submit]")
            await tab.locator("h1", has_text="Pending approvals").wait_for()
            approve_row = tab.locator("tr", has_text="approve-me")
            decline_row = tab.locator("tr", has_text="decline-me")
            for shown in ("notes.publish", "replicated-notes", "write", '"text": "approve-me"'):
                await approve_row.get_by_text(shown, exact=False).first.wait_for()
            await tab.screenshot(path=tmp_path / "approvals-list.png")

            second = await context.new_page()  # a second tab, opened before the first one decides
            await second.goto(f"{served.base}/approvals")
            await second.locator("tr", has_text="approve-me").wait_for()

            await approve_row.get_by_role("button", name="Approve").click()
            await tab.get_by_text("Approved: the run goes on").wait_for()
            await second.locator("tr", has_text="approve-me").get_by_role("button", name="Approve").click()
            await second.get_by_text("Already decided").wait_for()

            await decline_row.get_by_role("button", name="Decline").click()
            await tab.get_by_text("Declined: the call will not run").wait_for()
            await tab.get_by_text("Nothing waits for a decision").wait_for()

            # The session's cookie alone, without the form's CSRF token, decides nothing.
            forged = await tab.request.post(
                f"{served.base}/approvals/decide", form={"suspension": "susp-x", "decision": "approve"}
            )
            assert forged.status == 403
            await browser.close()

        done = await client.call_tool("execute", {"approval": approve_handle})
        assert json.loads(text_of(done))["id"] >= 1
        again = await client.call_tool("execute", {"approval": approve_handle})
        assert "already been resumed" in text_of(again)
        refused = json.loads(text_of(await client.call_tool("execute", {"approval": decline_handle})))
        assert refused["refused"] is True
        assert refused["reason"] == "confirmation-declined"
        assert await served.stop() == 0
    assert [op for op, _ in writes_of(db, "approve-me")] == ["publish"]  # exactly once
    assert writes_of(db, "decline-me") == []
    for shot in ("approvals-login.png", "approvals-list.png"):
        keep_screenshot(tmp_path / shot)
