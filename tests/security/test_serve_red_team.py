"""Attacks on a real `mycelium serve` process over HTTP on 127.0.0.1: what a hostile client can make
the server believe, hold, write or log.

Each test starts the `mycelium serve` command itself (the replicated notes app, whose confirmed
writes wait for the approvals page) and attacks it with raw HTTP and the official MCP SDK.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
from typer.testing import CliRunner

from mycelium.cli import cli
from tests.cli.replicas import TOKEN, replica
from tests.mcp import raw_http as raw
from tests.support.apps.replicated_notes import DB_ENV
from tests.support.paths import APPS

NOTES = str(APPS / "replicated_notes.py")
APPROVER = "approver-token-" + "v" * 32
FORGED = "198.51.100."
"""Addresses an attacker claims in X-Forwarded-For (TEST-NET-2: no real client has one)."""


def page_env(tmp_path: Path) -> dict[str, str]:
    return {"MYCELIUM_APPROVER_TOKEN": APPROVER, DB_ENV: str(tmp_path / "writes.db")}


async def test_a_client_claiming_other_addresses_in_x_forwarded_for_is_still_counted_and_logged_by_its_own(
    tmp_path: Path,
) -> None:
    async with replica(tmp_path / "data", app=(NOTES,), env=page_env(tmp_path)) as served:
        async with httpx2.AsyncClient(base_url=served.base, timeout=30) as http:
            guesses = [
                await http.post(
                    "/approvals/login", data={"token": f"guess-{i}"}, headers={"x-forwarded-for": f"{FORGED}{i}"}
                )
                for i in range(6)
            ]
            wrong_bearer = await http.post(
                "/mcp", json={}, headers={"authorization": "Bearer not-it", "x-forwarded-for": f"{FORGED}99"}
            )
        assert await served.stop() == 0
    # A new claimed address is no new client: the sixth guess in the minute is stopped as the limit says.
    assert [answer.status_code for answer in guesses] == [401] * 5 + [429]
    assert "try again in" in guesses[-1].text
    assert wrong_bearer.status_code == 401
    assert served.log_holds("a wrong approver token was refused, from 127.0.0.1")
    assert served.log_holds("refused a request from 127.0.0.1:")
    assert not served.log_holds(FORGED), "a log line names an address the client made up"


async def test_behind_a_proxy_the_operator_trusts_its_forwarded_client_address_and_https_are_believed(
    tmp_path: Path,
) -> None:
    options = ("--trusted-proxy", "127.0.0.1")
    async with replica(tmp_path / "data", app=(NOTES,), options=options, env=page_env(tmp_path)) as served:
        async with httpx2.AsyncClient(base_url=served.base, timeout=30) as http:
            guesses = [
                await http.post(
                    "/approvals/login", data={"token": f"guess-{i}"}, headers={"x-forwarded-for": f"{FORGED}{i}"}
                )
                for i in range(6)
            ]
            signed_in = await http.post(
                "/approvals/login",
                data={"token": APPROVER},
                headers={"x-forwarded-for": f"{FORGED}50", "x-forwarded-proto": "https"},
            )
        assert await served.stop() == 0
    # Six browsers behind one proxy: none is stopped for the others' mistakes.
    assert [answer.status_code for answer in guesses] == [401] * 6
    assert served.log_holds(f"a wrong approver token was refused, from {FORGED}5")
    assert signed_in.status_code == 303
    assert "Secure" in signed_in.headers["set-cookie"]


def test_a_trusted_proxy_that_is_not_an_address_is_a_usage_error_saying_what_to_give(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["serve", NOTES, "--port", "0", "--trusted-proxy", "proxy.example"],
        env={DB_ENV: str(tmp_path / "writes.db"), "MYCELIUM_DATA_DIR": str(tmp_path), "MYCELIUM_TOKEN": TOKEN},
    )
    assert result.exit_code == 2, result.output
    assert "--trusted-proxy" in result.output
    assert "IP address or network" in result.output


async def test_an_evidence_file_stays_within_its_bound_whatever_tool_call_id_the_client_chose(tmp_path: Path) -> None:
    folder = tmp_path / "evidence"
    chosen = "Z" * 200_000  # a 2025-11-25 call's id is the client's to choose, as long as the request allows
    options = ("--evidence-dir", str(folder))
    async with replica(tmp_path / "data", app=(NOTES,), options=options, env=page_env(tmp_path)) as served:
        async with httpx2.AsyncClient(base_url=served.base, timeout=30) as http:
            opened = await http.post("/mcp", json=raw.initialize(), headers=raw.headers(TOKEN))
            session = raw.headers(TOKEN, session=opened.headers["mcp-session-id"])
            await http.post("/mcp", json=raw.INITIALIZED, headers=session)
            # The operation refuses the gate on the host: a host failure, whose evidence is filed.
            failing = raw.call_execute("return await notes.hold(gate='not a name')", request_id=chosen)
            answered = await http.post("/mcp", json=failing, headers=session)
        assert await served.stop() == 0
    assert answered.status_code == 200
    [written] = list(folder.iterdir())
    assert written.stat().st_size < 64 * 1024
    entry = json.loads(written.read_text())
    assert entry["kind"] == "operation-error"
    assert entry["tool_call_id"].startswith("ZZZZ")  # cut, yet still there to search by
