"""The approvals page's HTTP rules: its own login, a signed session, CSRF, escaping, bounds and headers.

Real paused runs (a Monty sandbox, a runtime that defers every confirmation) in a real store;
the page is driven over HTTP by httpx against its ASGI app.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx2
import pytest
from pydantic import BaseModel

from mycelium import Access, Module, Runtime, Session, Suspensions, defer
from mycelium.cli._approvals import MAX_ARGUMENT_CHARS, ApprovalsPage
from mycelium.sandbox.monty import MontySandbox

APPROVER = "approver-token-" + "a" * 32
AGENT = "agent-token-" + "g" * 32
CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


class Published(BaseModel):
    text: str


def board(published: list[str]) -> Module:
    module = Module(id="board-v1", name="board", description="A notice board")

    @module.operation(access="write", confirm=True)
    def publish(text: str) -> Published:
        """Put ``text`` on the board once a person approves."""
        published.append(text)
        return Published(text=text)

    return module


@dataclass
class Page:
    http: httpx2.AsyncClient
    suspensions: Suspensions
    runtime: Runtime

    async def pause(self, text: str) -> str:
        """Run a program that publishes ``text``; the id of the suspension it waits in."""
        code = f"return await board.publish(text={text!r})"
        async with self.runtime.lease(session=Session("session-1", requester="agent triage")) as lease:
            result = await lease.execute_tool.run(code=code, tool_call_id=f"call-{len(text)}-{hash(text)}")
        assert result.suspension is not None, result.text
        return result.suspension.id

    async def sign_in(self, token: str = APPROVER) -> httpx2.Response:
        return await self.http.post("/approvals/login", data={"token": token})

    async def csrf(self) -> str:
        found = CSRF.search((await self.http.get("/approvals")).text)
        assert found is not None
        return found.group(1)


@asynccontextmanager
async def page() -> AsyncIterator[Page]:
    suspensions = Suspensions()
    published: list[str] = []
    async with Runtime(
        modules=[board(published)],
        sandbox=MontySandbox(),
        access=Access(grants={"board-v1": "write"}, confirm=defer),
        suspensions=suspensions,
    ) as runtime:
        app = ApprovalsPage(suspensions, approver_token=APPROVER, agent_tokens=[AGENT])
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            yield Page(http, suspensions, runtime)


async def test_every_answer_is_uncached_unframable_and_scriptless() -> None:
    async with page() as p:
        answers = [await p.http.get("/approvals"), await p.sign_in("wrong"), await p.http.get("/approvals/none")]
        await p.sign_in()
        answers.append(await p.http.get("/approvals"))
    for answer in answers:
        assert answer.headers["cache-control"] == "no-store"
        assert answer.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert "script-src" not in answer.headers["content-security-policy"]  # default-src 'none' covers it
        assert "<script" not in answer.text


async def test_the_agents_token_is_refused_at_the_login_and_told_why() -> None:
    async with page() as p:
        refused = await p.sign_in(AGENT)
        listed = await p.http.get("/approvals")
    assert refused.status_code == 401
    assert "set-cookie" not in refused.headers
    assert "That token belongs to the agents" in refused.text
    assert "approver token" in refused.text
    assert "Sign in to approve" in listed.text


async def test_a_wrong_token_is_refused_and_sets_no_cookie() -> None:
    async with page() as p:
        refused = await p.sign_in("not-the-token")
    assert refused.status_code == 401
    assert "set-cookie" not in refused.headers
    assert "Use the approver token" in refused.text


async def test_signing_in_sets_an_httponly_samesite_strict_cookie_for_the_page_only() -> None:
    async with page() as p:
        signed_in = await p.sign_in()
    assert signed_in.status_code == 303
    cookie = signed_in.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert "Path=/approvals" in cookie
    assert APPROVER not in cookie


async def test_a_forged_or_altered_session_cookie_is_not_signed_in() -> None:
    async with page() as p:
        await p.sign_in()
        real = p.http.cookies["mycelium_approver"]
        p.http.cookies.clear()
        issued, nonce, _ = real.split(".")
        p.http.cookies.set("mycelium_approver", f"{issued}.{nonce}.{'0' * 64}", path="/approvals")
        forged = await p.http.get("/approvals")
    assert "Sign in to approve" in forged.text


async def test_the_list_shows_who_what_and_the_arguments_escaped() -> None:
    async with page() as p:
        await p.pause("<b>bold</b> & <script>alert(1)</script>")
        await p.sign_in()
        listed = await p.http.get("/approvals")
    assert listed.status_code == 200
    for shown in ("agent triage", "board-v1", "board.publish", "write"):
        assert shown in listed.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in listed.text
    assert "<script>" not in listed.text
    assert ">Approve</button>" in listed.text
    assert ">Decline</button>" in listed.text


async def test_long_arguments_are_cut_with_a_note_saying_so() -> None:
    async with page() as p:
        await p.pause("x" * (3 * MAX_ARGUMENT_CHARS))
        await p.sign_in()
        listed = await p.http.get("/approvals")
    assert "Arguments truncated: the first 2,000 of" in listed.text
    assert "x" * (2 * MAX_ARGUMENT_CHARS) not in listed.text


async def test_a_decision_is_recorded_in_the_store_and_a_second_one_is_already_decided() -> None:
    async with page() as p:
        suspension_id = await p.pause("hello")
        await p.sign_in()
        form = {"csrf": await p.csrf(), "suspension": suspension_id, "decision": "approve"}
        first = await p.http.post("/approvals/decide", data=form, follow_redirects=True)
        second = await p.http.post("/approvals/decide", data={**form, "decision": "decline"}, follow_redirects=True)
        async with p.runtime.lease(session=Session("session-1")) as lease:
            decided = await p.runtime.resume(suspension_id, lease=lease)
    assert "Approved" in first.text
    assert "Already decided" in second.text
    assert "Nothing waits for a decision" in first.text
    assert decided.text == '{"text":"hello"}'


async def test_a_post_without_a_valid_csrf_token_is_403_and_decides_nothing() -> None:
    async with page() as p:
        suspension_id = await p.pause("hello")
        await p.sign_in()
        missing = await p.http.post("/approvals/decide", data={"suspension": suspension_id, "decision": "approve"})
        wrong = await p.http.post(
            "/approvals/decide", data={"csrf": "0" * 64, "suspension": suspension_id, "decision": "approve"}
        )
        still = await p.suspensions.undecided(10)
    assert missing.status_code == 403
    assert wrong.status_code == 403
    assert "reload the page" in wrong.text
    assert [each.id for each in still] == [suspension_id]


async def test_deciding_without_signing_in_is_401_and_decides_nothing() -> None:
    async with page() as p:
        suspension_id = await p.pause("hello")
        refused = await p.http.post("/approvals/decide", data={"suspension": suspension_id, "decision": "approve"})
        still = await p.suspensions.undecided(10)
    assert refused.status_code == 401
    assert len(still) == 1


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "status"),
    [
        ("GET", "/approvals/decide", None, {}, 405),
        ("DELETE", "/approvals", None, {}, 405),
        ("GET", "/approvals/elsewhere", None, {}, 404),
        ("POST", "/approvals/decide", b'{"decision": "approve"}', {"content-type": "application/json"}, 415),
        ("POST", "/approvals/decide", b"csrf=" + b"x" * 10_000, {}, 413),
        ("POST", "/approvals/decide", b"\xff\xfe=\xff", {}, 400),
        ("POST", "/approvals/decide", b"&".join([b"a=1"] * 50), {}, 400),
        ("POST", "/approvals/decide", b"decision=maybe", {}, 400),
    ],
    ids=["get-a-form", "delete", "unknown-path", "json", "too-large", "not-utf-8", "too-many-fields", "no-decision"],
)
async def test_bad_input_is_answered_4xx_never_500(
    method: str, path: str, body: bytes | None, headers: dict[str, str], status: int
) -> None:
    async with page() as p:
        await p.sign_in()
        sent = {"content-type": "application/x-www-form-urlencoded", **headers}
        if body is not None and b"decision=maybe" in body:
            body += b"&csrf=" + (await p.csrf()).encode()
        answer = await p.http.request(method, path, content=body, headers=sent)
    assert answer.status_code == status
    assert answer.headers["cache-control"] == "no-store"
