"""The approvals page's HTTP rules: who may sign in, a signed session, CSRF, escaping, bounds and headers,
and what a hostile browser or client gets.

Real paused runs (a Monty sandbox, a runtime that defers every confirmation) in a real store;
the page is driven over HTTP by httpx against its ASGI app. The sign-in limit's clock is one
the test moves, so a window passes without waiting for it.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel
from starlette.requests import HTTPConnection

from mycelium import Access, Module, Runtime, Session, Suspensions, defer
from mycelium.mcp import (
    LOOPBACK_HOSTS,
    LOOPBACK_ORIGINS,
    Admitted,
    Agent,
    Authenticate,
    Member,
    Refused,
    SecretKeys,
    TeamKey,
    approvals_app,
    bearer_tokens,
)
from mycelium.mcp._approvals_page import ApprovalsPage
from mycelium.mcp._login_limit import LoginLimit
from mycelium.mcp._page_html import MAX_ARGUMENT_CHARS
from mycelium.sandbox.monty import MontySandbox
from tests.support.approver import Approver

APPROVER = "approver-token-" + "a" * 32
AGENT = "agent-token-" + "g" * 32
ADA = Member("ada", "approver")
RING = SecretKeys.of("page-ring-key-" + "q" * 40)
FORM = {"content-type": "application/x-www-form-urlencoded"}


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


def signed_in_to_the_host(request: HTTPConnection) -> Admitted | Refused:
    """The host's own check: its session cookie names the person (a stand-in for a real session store)."""
    person = request.cookies.get("host_session")
    if person == "robot":
        return Admitted(Agent("robot"))
    if person == "team":
        return Admitted(TeamKey("team-key-1"))
    if person == "intern":
        return Refused(403)
    return Admitted(Member(person, "approver")) if person else Refused(401)


@dataclass
class Clock:
    """A clock the test moves: the sign-in limit reads it."""

    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Page:
    http: httpx2.AsyncClient
    suspensions: Suspensions
    runtime: Runtime
    published: list[str]
    clock: Clock
    person: Approver = field(init=False)

    def __post_init__(self) -> None:
        self.person = Approver(self.http)

    async def pause(self, text: str, *, requester: str = "agent triage") -> str:
        """Run a program that publishes ``text``; the id of the suspension it waits in."""
        code = f"return await board.publish(text={text!r})"
        async with self.runtime.lease(session=Session("session-1", requester=requester)) as lease:
            result = await lease.execute_tool.run(code=code, tool_call_id=f"call-{len(text)}-{hash(text)}")
        assert result.suspension is not None, result.text
        return result.suspension.id

    async def sign_in(self, token: str = APPROVER) -> httpx2.Response:
        return await self.person.sign_in(token)


@asynccontextmanager
async def page(
    *,
    approver_token: str | None = APPROVER,
    authenticate: Authenticate | None = None,
    secret_keys: SecretKeys | None = None,
    limit: dict[str, Any] | None = None,
    cookies: dict[str, str] | None = None,
) -> AsyncIterator[Page]:
    suspensions = Suspensions()
    published: list[str] = []
    clock = Clock()
    async with Runtime(
        modules=[board(published)],
        sandbox=MontySandbox(),
        access=Access(grants={"board-v1": "write"}, confirm=defer),
        suspensions=suspensions,
    ) as runtime:
        app = ApprovalsPage(
            suspensions,
            approver_token=approver_token,
            authenticate=authenticate,
            agent_tokens=[AGENT],
            path="/approvals",
            allowed_hosts=LOOPBACK_HOSTS,
            allowed_origins=LOOPBACK_ORIGINS,
            secret_keys=secret_keys,
            login_limit=LoginLimit(clock=clock, **(limit or {})),
        )
        transport = httpx2.ASGITransport(app=app, client=("203.0.113.7", 50_000))
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1", cookies=cookies) as http:
            yield Page(http, suspensions, runtime, published, clock)


# -- what every answer says -------------------------------------------------------------


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
        assert answer.headers["cross-origin-resource-policy"] == "same-origin"
        # Not no-referrer, under which browsers send the page's own forms with Origin: null.
        assert answer.headers["referrer-policy"] == "same-origin"
        assert "<script" not in answer.text


# -- signing in with the approver token -------------------------------------------------


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


async def test_signing_in_issues_a_fresh_session_whatever_cookie_the_browser_held() -> None:
    async with page() as p:
        await p.sign_in()
        planted = p.http.cookies["mycelium_approver"]  # one an attacker could have set in the victim's browser
        await p.sign_in()
        fresh = p.http.cookies["mycelium_approver"]
    assert fresh != planted


async def test_signing_in_never_goes_where_the_request_says() -> None:
    async with page() as p:
        answer = await p.http.post(
            "/approvals/login?next=https://evil.example/", data={"token": APPROVER, "next": "//evil.example/"}
        )
    assert answer.status_code == 303
    assert answer.headers["location"] == "/approvals"


async def test_signing_out_clears_the_cookie() -> None:
    async with page() as p:
        await p.sign_in()
        out = await p.http.post("/approvals/logout", data={"csrf": await p.person.csrf()})
        after = await p.http.get("/approvals")
    assert out.status_code == 303
    assert "Max-Age=0" in out.headers["set-cookie"]
    assert "Sign in to approve" in after.text


# -- the sign-in limit ------------------------------------------------------------------


async def test_failed_sign_ins_past_the_limit_get_429_with_retry_after_even_with_the_right_token() -> None:
    async with page(limit={"per_address": 3, "window_s": 60}) as p:
        failed = [(await p.sign_in(f"guess-{n}")).status_code for n in range(3)]
        limited = await p.sign_in("guess-4")
        right = await p.sign_in()
    assert failed == [401, 401, 401]
    for answer in (limited, right):
        assert answer.status_code == 429
        assert answer.headers["retry-after"] == "20"  # one more guess every 60 / 3 seconds
        assert "try again in 20 seconds" in answer.text
        assert "set-cookie" not in answer.headers


async def test_the_right_token_signs_in_once_the_window_has_passed() -> None:
    async with page(limit={"per_address": 3, "window_s": 60}) as p:
        for n in range(3):
            await p.sign_in(f"guess-{n}")
        p.clock.now += 20
        signed_in = await p.sign_in()
        listed = await p.http.get("/approvals")
    assert signed_in.status_code == 303
    assert "Pending approvals" in listed.text


async def test_an_agents_token_at_the_sign_in_counts_as_a_failure() -> None:
    async with page(limit={"per_address": 1}) as p:
        await p.sign_in(AGENT)
        limited = await p.sign_in()
    assert limited.status_code == 429


# -- signing in through the host's authenticate ------------------------------------------


async def test_a_person_the_hosts_authenticate_admits_lists_and_decides(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "mycelium.mcp")
    async with page(authenticate=signed_in_to_the_host, cookies={"host_session": "ada"}) as p:
        suspension_id = await p.pause("hello")
        landed = await p.person.decide(suspension_id, approve=True)
        still = await p.suspensions.undecided(10)
    assert "Approved" in landed.text
    assert ">Sign out</button>" not in landed.text  # signed in at the host: signing out happens there
    assert still == []
    assert "by 'member ada (approver)'" in caplog.text


async def test_an_async_authenticate_is_awaited() -> None:
    async def check(request: HTTPConnection) -> Admitted | Refused:
        return signed_in_to_the_host(request)

    async with page(approver_token=None, authenticate=check, cookies={"host_session": "ada"}) as p:
        listed = await p.http.get("/approvals")
    assert "Pending approvals" in listed.text


@pytest.mark.parametrize("who", ["robot", "team"], ids=["an-agent", "a-team-key"])
async def test_an_agent_or_team_key_the_hook_admits_is_refused_and_told_only_a_person_approves(who: str) -> None:
    async with page(authenticate=signed_in_to_the_host, cookies={"host_session": who}) as p:
        suspension_id = await p.pause("hello")
        listed = await p.http.get("/approvals")
        decided = await p.http.post(
            "/approvals/decide", data={"csrf": "0" * 64, "suspension": suspension_id, "decision": "approve"}
        )
        still = await p.suspensions.undecided(10)
    for answer in (listed, decided):
        assert answer.status_code == 403
        assert "Only a person may approve here" in answer.text
    assert len(still) == 1


async def test_a_request_bearing_an_agents_token_is_refused_whatever_the_hook_says() -> None:
    # A host that hands the page the agents' own check by mistake still never lets an agent approve.
    mistaken = bearer_tokens({AGENT: ADA})
    async with page(approver_token=None, authenticate=mistaken) as p:
        suspension_id = await p.pause("hello")
        bearer = {"authorization": f"Bearer {AGENT}"}
        listed = await p.http.get("/approvals", headers=bearer)
        decided = await p.http.post(
            "/approvals/decide", data={"suspension": suspension_id, "decision": "approve"}, headers=bearer
        )
        still = await p.suspensions.undecided(10)
    for answer in (listed, decided):
        assert answer.status_code == 403
        assert "agents never approve" in answer.text
    assert len(still) == 1


def admits_any_credential_it_finds(request: HTTPConnection) -> Admitted | Refused:
    """A host check that takes a credential wherever a client puts it, and takes the agents' for a person's."""
    found = [request.cookies.get("token"), request.query_params.get("token"), request.headers.get("x-api-key")]
    for value in request.headers.getlist("authorization"):
        scheme, _, credential = value.partition(" ")
        found.append(base64.b64decode(credential).decode().partition(":")[2] if scheme == "Basic" else credential)
    return Admitted(ADA) if AGENT in found else Refused(401)


@pytest.mark.parametrize(
    ("where", "cookies", "url", "headers"),
    [
        ("a cookie", {"token": AGENT}, "/approvals", {}),
        ("the query", {}, f"/approvals?token={AGENT}", {}),
        ("a header of its own", {}, "/approvals", {"x-api-key": AGENT}),
        (
            "basic credentials",
            {},
            "/approvals",
            {"authorization": "Basic " + base64.b64encode(b"x:" + AGENT.encode()).decode()},
        ),
    ],
)
async def test_the_agents_token_is_refused_wherever_the_request_carries_it(
    where: str, cookies: dict[str, str], url: str, headers: dict[str, str]
) -> None:
    async with page(approver_token=None, authenticate=admits_any_credential_it_finds, cookies=cookies) as p:
        suspension_id = await p.pause("hello")
        listed = await p.http.get(url, headers=headers)
        decided = await p.http.post(
            url.replace("/approvals", "/approvals/decide"),
            data={"suspension": suspension_id, "decision": "approve"},
            headers=headers,
        )
        still = await p.suspensions.undecided(10)
    for answer in (listed, decided):
        assert answer.status_code == 403, where
        assert "agents never approve" in answer.text
    assert len(still) == 1


async def test_a_second_authorization_header_with_the_agents_token_is_refused() -> None:
    async with page(approver_token=None, authenticate=admits_any_credential_it_finds) as p:
        await p.pause("hello")
        # Built by hand: a client may send the header twice, and a host may read either one.
        request = p.http.build_request("GET", "/approvals")
        twice = [("authorization", "Token nothing"), ("authorization", f"Bearer {AGENT}")]
        request.headers = httpx2.Headers([*request.headers.multi_items(), *twice])
        listed = await p.http.send(request)
    assert listed.status_code == 403
    assert "agents never approve" in listed.text


async def test_a_request_carrying_more_words_than_the_page_checks_is_refused_not_read_in_part() -> None:
    async with page(approver_token=None, authenticate=admits_any_credential_it_finds) as p:
        padded = " ".join(f"w{number}" for number in range(5_000)) + f" {AGENT}"
        listed = await p.http.get("/approvals", headers={"x-padding": padded})
    assert listed.status_code == 431
    assert "open the page in a browser" in listed.text


async def test_an_agent_knocking_with_its_token_in_a_loop_gets_at_most_ten_warnings_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with page() as p:
        for _ in range(25):
            refused = await p.http.get("/approvals", headers={"authorization": f"Bearer {AGENT}"})
            assert refused.status_code == 403
    warned = [record for record in caplog.records if "bearing an agent's token" in record.getMessage()]
    assert len(warned) == 10


async def test_without_a_token_a_person_not_signed_in_is_sent_to_the_host_and_the_token_form_is_gone() -> None:
    async with page(approver_token=None, authenticate=signed_in_to_the_host) as p:
        listed = await p.http.get("/approvals")
        login = await p.sign_in(APPROVER)
    assert listed.status_code == 200
    assert "sign in to the host in this browser, then reload this page" in listed.text
    assert 'name="token"' not in listed.text
    assert login.status_code == 404
    assert "sign in to the host" in login.text


async def test_a_person_the_host_refuses_with_403_is_told_they_may_not_approve() -> None:
    async with page(authenticate=signed_in_to_the_host, cookies={"host_session": "intern"}) as p:
        listed = await p.http.get("/approvals")
    assert listed.status_code == 403
    assert "not allowed to approve" in listed.text


async def test_a_hook_that_raises_signs_nobody_in_and_is_never_a_500(caplog: pytest.LogCaptureFixture) -> None:
    def broken(request: HTTPConnection) -> Admitted:
        raise RuntimeError(f"the session store is down; cookie {request.cookies.get('host_session')}")

    async with page(authenticate=broken, cookies={"host_session": "secret-session-value"}) as p:
        listed = await p.http.get("/approvals")
    assert listed.status_code == 200
    assert "Sign in to approve" in listed.text
    assert "RuntimeError" in caplog.text
    assert "secret-session-value" not in caplog.text


async def test_without_a_token_the_forms_verify_on_every_replica_sharing_the_ring() -> None:
    host = {"authenticate": signed_in_to_the_host, "approver_token": None, "cookies": {"host_session": "ada"}}
    async with page(**host, secret_keys=RING) as one, page(**host, secret_keys=RING) as other:
        await one.pause("shown here")
        suspension_id = await other.pause("hello")
        csrf = await one.person.csrf()  # rendered by one replica, posted to the other
        form = {"csrf": csrf, "suspension": suspension_id, "decision": "approve"}
        decided = await other.http.post("/approvals/decide", data=form)
    async with page(**host) as lone, page(**host) as apart:
        await lone.pause("shown here")
        suspension_id = await apart.pause("hello")
        form = {"csrf": await lone.person.csrf(), "suspension": suspension_id, "decision": "approve"}
        refused = await apart.http.post("/approvals/decide", data=form)
    assert decided.status_code == 303
    assert decided.headers["location"] == "/approvals?done=approved"
    assert refused.status_code == 403


def test_the_page_needs_a_way_to_sign_in_and_a_token_apart_from_the_agents() -> None:
    suspensions = Suspensions()
    with pytest.raises(ValueError, match="needs an approver_token, an authenticate, or both"):
        approvals_app(suspensions)
    with pytest.raises(ValueError, match="differ from every agent's token"):
        approvals_app(suspensions, approver_token=AGENT, agent_tokens=[AGENT])


# -- the list and deciding ---------------------------------------------------------------


async def test_the_list_shows_who_what_and_the_arguments_escaped() -> None:
    async with page() as p:
        await p.pause("<b>bold</b> & <script>alert(1)</script>", requester='member <img src=x onerror="alert(1)">')
        await p.sign_in()
        listed = await p.http.get("/approvals")
    assert listed.status_code == 200
    for shown in ("board-v1", "board.publish", "write"):
        assert shown in listed.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in listed.text
    assert "member &lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in listed.text
    assert "<script>" not in listed.text
    assert "<img" not in listed.text
    assert ">Approve</button>" in listed.text
    assert ">Decline</button>" in listed.text


async def test_long_arguments_are_cut_with_a_note_saying_so() -> None:
    async with page() as p:
        await p.pause("x" * (3 * MAX_ARGUMENT_CHARS))
        await p.sign_in()
        listed = await p.http.get("/approvals")
    assert "Arguments truncated: the first 2,000 characters are shown" in listed.text
    assert "x" * (2 * MAX_ARGUMENT_CHARS) not in listed.text


async def test_a_decision_is_recorded_in_the_store_and_a_second_one_is_already_decided() -> None:
    async with page() as p:
        suspension_id = await p.pause("hello")
        await p.sign_in()
        first = await p.person.decide(suspension_id, approve=True)
        second = await p.person.decide(suspension_id, approve=False)
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


# -- a hostile browser or client ---------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{"sec-fetch-site": "cross-site"}, {"origin": "https://evil.example"}, {"origin": "null"}],
    ids=["cross-site", "foreign-origin", "opaque-origin"],
)
async def test_a_form_posted_from_another_site_is_refused_and_decides_nothing(headers: dict[str, str]) -> None:
    async with page() as p:
        suspension_id = await p.pause("hello")
        await p.sign_in()
        form = {"csrf": await p.person.csrf(), "suspension": suspension_id, "decision": "approve"}
        refused = await p.http.post("/approvals/decide", data=form, headers=headers)
        still = await p.suspensions.undecided(10)
    assert refused.status_code == 403
    assert "open the page itself and decide there" in refused.text
    assert len(still) == 1


async def test_a_name_the_page_is_not_served_under_is_421() -> None:
    # DNS rebinding: the attacker's name resolves to this server; the browser says so in Host.
    async with page() as p:
        rebound = await p.http.get("/approvals", headers={"host": "attacker.example:8000"})
    assert rebound.status_code == 421
    assert "open it at the address the server printed" in rebound.text


async def test_a_cookie_holding_bytes_beyond_ascii_is_not_signed_in_and_not_a_500() -> None:
    async with page() as p:
        answer = await p.http.get("/approvals", headers={"cookie": "mycelium_approver=1.n.\xe9\xe9".encode("latin-1")})
    assert answer.status_code == 200
    assert "Sign in to approve" in answer.text


async def test_head_is_answered_like_get_without_the_body() -> None:
    async with page() as p:
        got = await p.http.get("/approvals")
        head = await p.http.head("/approvals")
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == got.headers["content-length"]
    assert head.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("OPTIONS", "/approvals", "GET, HEAD"),
        ("PUT", "/approvals", "GET, HEAD"),
        ("TRACE", "/approvals", "GET, HEAD"),
        ("PROPFIND", "/approvals", "GET, HEAD"),
        ("GET", "/approvals/decide", "POST"),
        ("DELETE", "/approvals/login", "POST"),
    ],
)
async def test_other_methods_get_405_saying_which_one_to_use(method: str, path: str, allow: str) -> None:
    async with page() as p:
        answer = await p.http.request(method, path)
    assert answer.status_code == 405
    assert answer.headers["allow"] == allow
    assert f"Use {allow.split(',')[0]} here" in answer.text


@pytest.mark.parametrize(
    "path", ["/approvals/elsewhere", "/approvals//decide", "/approvals/%2e%2e/mcp", "/approvals/decide/more"]
)
async def test_paths_the_page_does_not_serve_get_404_naming_where_it_is(path: str) -> None:
    async with page() as p:
        await p.sign_in()
        answer = await p.http.post(path, data={"csrf": await p.person.csrf()})
    assert answer.status_code == 404
    assert "the approvals are at /approvals" in answer.text


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "status"),
    [
        ("POST", "/approvals/decide", b'{"decision": "approve"}', {"content-type": "application/json"}, 415),
        ("POST", "/approvals/decide", b"csrf=" + b"x" * 10_000, {}, 413),
        ("POST", "/approvals/decide", b"\xff\xfe=\xff", {}, 400),
        ("POST", "/approvals/decide", b"&".join([b"a=1"] * 50), {}, 400),
        ("POST", "/approvals/decide", b"decision=maybe", {}, 400),
    ],
    ids=["json", "too-large", "not-utf-8", "too-many-fields", "no-decision"],
)
async def test_bad_input_is_answered_4xx_never_500(
    method: str, path: str, body: bytes, headers: dict[str, str], status: int
) -> None:
    async with page() as p:
        await p.sign_in()
        if body == b"decision=maybe":
            body += b"&csrf=" + (await p.person.csrf()).encode()
        answer = await p.http.request(method, path, content=body, headers={**FORM, **headers})
    assert answer.status_code == status
    assert answer.headers["cache-control"] == "no-store"
