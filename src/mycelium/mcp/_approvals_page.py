"""The approvals page: a person approves or declines, in a browser, the calls paused runs wait at.

:func:`approvals_app` is an ASGI app a host mounts beside its MCP server (``mycelium serve``
mounts it at ``/approvals``). It lists every run waiting in the suspensions for a person:
who it is for, the module, the operation, its access label and the call's arguments; each
with Approve and Decline. A decision is recorded in the store, where any replica's poll or
retry finds it. Server-rendered HTML with no script at all (:mod:`._page_html`).

Who may decide, never an agent:

- with ``approver_token``, a person who types it into the page's form. The answer is a
  session cookie (HttpOnly, SameSite=Strict, signed, for :data:`SESSION_SECONDS`), issued
  afresh at every sign-in. Failed sign-ins are limited per client address and overall
  (:class:`~._login_limit.LoginLimit`): past the limit, 429 with Retry-After.
- with ``authenticate`` (the host's own check, the same shape as ``create_mcp``'s), a person
  the host has signed in: it runs on every request, sees its headers and cookies, and must
  admit a :class:`~._principals.Member`. An agent or a team key it admits is refused.

Both may be given. A request presenting one of ``agent_tokens`` is refused whatever else it
carries: at the sign-in form, or anywhere a host's check might read a credential (any header,
a cookie, the query string, basic credentials; see :func:`_carried`).

What a hostile browser or client meets: the Host and Origin checks the MCP server makes
(loopback by default, against DNS rebinding); a cross-site POST refused; on every form a
CSRF token bound to the session (or to the person the host admitted); no redirect target
taken from the request; every answer ``Cache-Control: no-store`` and unframable; HEAD
answered like GET without the body, other methods 405 with ``Allow``; bodies, fields and
the listing bounded; bad input a 4xx, never a 500.

Signatures are HMACs under a key derived from the approver token (every replica given the
same token accepts the same sign-in, and changing it ends every session), else from the
deployment's ring, else a key of this process.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import html
import logging
import re
import secrets
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote_plus

from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from .._options import check_int
from ..suspensions import StoreUnavailable, Suspensions
from ._authentication import WARNING_WINDOW_S, WARNINGS_PER_WINDOW, Authentication
from ._bodies import DEFAULT_BODY_TIMEOUT_MS, BodyReader, Unread
from ._clients import WarningBudget
from ._http import LOOPBACK_HOSTS, LOOPBACK_ORIGINS, allowed
from ._keys import SecretKeys
from ._login_limit import LoginLimit
from ._page_html import HEADERS, listing, page, sign_in
from ._principals import Authenticate, Member, Refused, principal_key, principal_label

__all__ = ["APPROVALS_PATH", "MAX_LISTED", "SESSION_SECONDS", "ApprovalsPage", "approvals_app"]

logger = logging.getLogger("mycelium.mcp")

APPROVALS_PATH = "/approvals"
"""Where ``mycelium serve`` mounts the page, and the path it serves by default."""
SESSION_SECONDS = 12 * 3600
"""How long a sign-in with the approver token lasts."""
MAX_LISTED = 100
"""The most pending approvals one page shows; the page says when more wait."""
_COOKIE = "mycelium_approver"
_MAX_BODY_BYTES = 8 * 1024
_MAX_FIELDS = 8
_UNREAD = {
    400: "The request ended early.",
    408: "The form took too long to arrive: send it again.",
    413: "The form is too large.",
}
_PURPOSE = b"mycelium/approvals-page/v1"
_AUTHENTICATE_TIMEOUT_S = 10.0
_MAX_CARRIED = 4_096
"""The most distinct words of a request checked for an agent's token; a browser's are far fewer."""
_SEPARATORS = re.compile(r"[\s,;&]+")
_ACTIONS = {"": "GET", "login": "POST", "decide": "POST", "logout": "POST"}
_NOTICES = {
    "approved": "Approved: the run goes on when its program asks for its result.",
    "declined": "Declined: the call will not run; the program is told so.",
    "already-decided": "Already decided (or expired): that approval was not changed.",
    "signed-out": "Signed out.",
}


class _Refusal(Exception):
    """A request the page refuses with ``status``; ``message`` (what to do) is shown on the page."""

    def __init__(self, status: int, message: str, *, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers)


@dataclass(frozen=True)
class _Answer:
    status: int
    body: str = ""
    location: str | None = None
    cookie: str | None = None
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


@dataclass(frozen=True)
class _Visitor:
    """Who is signed in: what their forms' CSRF token is bound to, and how the log names them."""

    binding: str
    who: str
    own_session: bool
    """Signed in with the approver token, to a session of the page's own that Sign out ends."""


class ApprovalsPage:
    """The ASGI app for every path under ``path``. Build it with :func:`approvals_app`."""

    def __init__(
        self,
        suspensions: Suspensions,
        *,
        approver_token: str | None,
        authenticate: Authenticate | None,
        agent_tokens: Collection[str],
        path: str,
        allowed_hosts: Sequence[str],
        allowed_origins: Sequence[str],
        secret_keys: SecretKeys | None,
        login_limit: LoginLimit,
        body_timeout_s: float = DEFAULT_BODY_TIMEOUT_MS / 1000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(suspensions, Suspensions):
            raise ValueError(f"suspensions must be a Suspensions, got {type(suspensions).__name__}")
        if approver_token is None and authenticate is None:
            raise ValueError("the approvals page needs an approver_token, an authenticate, or both")
        if approver_token is not None and (not approver_token.strip() or approver_token in agent_tokens):
            raise ValueError("the approver token must not be blank, and must differ from every agent's token")
        if not path.startswith("/") or any(char in path for char in "\"'<>?#\\ "):
            raise ValueError(f"the page's path must be a plain absolute path, got {path!r}")
        self._suspensions = suspensions
        self._token = _digest(approver_token.strip()) if approver_token is not None else None
        self._agent_tokens = [_digest(token) for token in agent_tokens]
        self._authentication = None if authenticate is None else Authentication(authenticate, _AUTHENTICATE_TIMEOUT_S)
        self._base = path.rstrip("/")
        self._hosts = tuple(allowed_hosts)
        self._origins = tuple(allowed_origins)
        if approver_token is not None:
            self._key = hmac.new(approver_token.strip().encode(), _PURPOSE, hashlib.sha256).digest()
        elif secret_keys is not None:
            self._key = secret_keys.approvals_page_key()
        else:
            self._key = secrets.token_bytes(32)
        self._limit = login_limit
        self._bodies = BodyReader(max_bytes=_MAX_BODY_BYTES, timeout_s=body_timeout_s)
        self._clock = clock
        self._warnings = WarningBudget(WARNINGS_PER_WINDOW, WARNING_WINDOW_S)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        head = scope["method"] == "HEAD"
        try:
            answer = await self._answer(scope, receive, "GET" if head else scope["method"])
        except _Refusal as refused:
            shown = page("Approvals", f'<p class="error">{html.escape(refused.message)}</p>')
            answer = _Answer(refused.status, shown, headers=refused.headers)
        except StoreUnavailable:
            logger.warning("the approvals page could not reach the suspension store")
            answer = _Answer(503, page("Approvals", '<p class="error">The store did not answer. Try again.</p>'))
        await self._send(send, answer, secure=scope.get("scheme") == "https", head=head)

    async def _answer(self, scope: Scope, receive: Receive, method: str) -> _Answer:
        headers = Headers(scope=scope)
        self._check_origin(headers, method)
        action = self._action(scope)
        if method != _ACTIONS[action]:
            allow = b"GET, HEAD" if _ACTIONS[action] == "GET" else b"POST"
            raise _Refusal(405, f"Use {_ACTIONS[action]} here.", headers=[(b"allow", allow)])
        if self._presents_agent_token(scope):
            self._warnings.warn(logger, "approvals page: a request bearing an agent's token was refused")
            raise _Refusal(
                403, "This request carries an agent's token: agents never approve. Open the page in a browser."
            )
        visitor = await self._visitor(scope)
        if action == "":
            if visitor is None:
                return _Answer(200, sign_in(self._base, token=self._token is not None))
            return _Answer(200, await self._list(visitor, _notice(scope)))
        form = await _form(scope, receive, self._bodies)
        if action == "login":
            return self._login(scope, form)
        if visitor is None:
            return _Answer(401, sign_in(self._base, token=self._token is not None, error="Sign in first."))
        if not hmac.compare_digest(form.get("csrf", "").encode(), self._csrf(visitor).encode()):
            raise _Refusal(403, "This form is stale or was not sent from this page: reload the page and try again.")
        if action == "logout":
            return _Answer(303, location=f"{self._base}?done=signed-out", cookie="")
        decision = form.get("decision")
        if decision not in ("approve", "decline") or not form.get("suspension"):
            raise _Refusal(400, "Choose Approve or Decline for one pending approval.")
        recorded = await self._suspensions.decide_as_approver(form["suspension"], decision == "approve")
        done = ("approved" if decision == "approve" else "declined") if recorded else "already-decided"
        if recorded:
            logger.info("approvals page: suspension %s %s by %r", form["suspension"], done, visitor.who)
        return _Answer(303, location=f"{self._base}?done={done}")

    def _check_origin(self, headers: Headers, method: str) -> None:
        """Refuse a name the page is not served under (DNS rebinding), and a form posted from elsewhere."""
        if not allowed(headers.get("host"), self._hosts):
            raise _Refusal(421, "This page is not served under that name: open it at the address the server printed.")
        origin = headers.get("origin")
        cross_site = method == "POST" and headers.get("sec-fetch-site") == "cross-site"
        if (origin is not None and not allowed(origin, self._origins)) or cross_site:
            raise _Refusal(403, "This form was sent from another site: open the page itself and decide there.")

    def _action(self, scope: Scope) -> str:
        """Which of the page's actions the request's path names; 404 for any other path."""
        path, root = scope["path"], scope.get("root_path", "")
        if root and not path.startswith(root):
            path = root + path  # a server that strips its mount point from the path
        if path.rstrip("/") == self._base:
            return ""
        action = path[len(self._base) + 1 :].rstrip("/") if path.startswith(self._base + "/") else ""
        if not action or action not in _ACTIONS:
            raise _Refusal(404, f"There is no such page: the approvals are at {self._base}.")
        return action

    def _presents_agent_token(self, scope: Scope) -> bool:
        """Whether the request carries an agent's token anywhere a host's check might read one."""
        words = _carried(scope)
        if words is None:
            raise _Refusal(431, "This request carries more than the page reads: open the page in a browser.")
        found = False
        for word in words:  # every word is compared: the time says nothing of the tokens
            found |= _matches(_digest(word), self._agent_tokens)
        return found

    async def _visitor(self, scope: Scope) -> _Visitor | None:
        """Who the request is from: a session of the approver token's, or a person the host admits."""
        session = self._session(scope)
        if session is not None:
            return _Visitor(session, "the approver token", own_session=True)
        if self._authentication is None:
            return None
        verdict = await self._authentication.admit(HTTPConnection(scope))
        if isinstance(verdict, Refused):
            if verdict.status == 403:
                raise _Refusal(403, "You are signed in to the host, but not allowed to approve: ask its owner.")
            return None
        if not isinstance(verdict, Member):
            logger.warning("approvals page: authenticate admitted %r, who is not a person; refused", verdict)
            raise _Refusal(403, "Only a person may approve here, never an agent or a team key: sign in as yourself.")
        return _Visitor(f"principal:{principal_key(verdict)}", principal_label(verdict), own_session=False)

    def _login(self, scope: Scope, form: dict[str, str]) -> _Answer:
        if self._token is None:
            raise _Refusal(404, "This page has no token sign-in: sign in to the host, then reload the page.")
        client = scope.get("client") or ("unknown", 0)
        address = str(client[0])
        wait = self._limit.retry_after(address)
        if wait is not None:
            told = f"Too many failed sign-ins: try again in {wait} seconds."
            body = sign_in(self._base, token=True, error=told)
            return _Answer(429, body, headers=[(b"retry-after", str(wait).encode())])
        presented = _digest(form.get("token", "").strip())
        if _matches(presented, self._agent_tokens):
            self._limit.failed(address)
            logger.warning("approvals page: an agent's token was refused at the sign-in, from %s", address)
            told = "That token belongs to the agents: the approvals page takes the approver token."
            return _Answer(401, sign_in(self._base, token=True, error=told))
        if not form.get("token", "").strip() or not hmac.compare_digest(presented, self._token):
            self._limit.failed(address)
            logger.warning("approvals page: a wrong approver token was refused, from %s", address)
            told = "That token does not open this page. Use the approver token."
            return _Answer(401, sign_in(self._base, token=True, error=told))
        # A fresh session at every sign-in: a cookie planted before it is never the one that signs in.
        issued = f"{int(self._clock())}.{secrets.token_urlsafe(16)}"
        return _Answer(303, location=self._base, cookie=f"{issued}.{self._sign(issued)}")

    def _session(self, scope: Scope) -> str | None:
        """The request's valid session cookie, or ``None``."""
        for name, value in scope.get("headers", []):
            if name != b"cookie":
                continue
            for part in value.decode("latin-1").split(";"):
                key, _, cookie = part.strip().partition("=")
                if key != _COOKIE:
                    continue
                issued, nonce, mac = [*cookie.split("."), "", "", ""][:3]
                # Compared as bytes: a cookie may hold any byte, and only ASCII strings compare.
                signed = hmac.compare_digest(mac.encode("latin-1"), self._sign(f"{issued}.{nonce}").encode())
                if signed and issued.isdigit() and 0 <= self._clock() - int(issued) < SESSION_SECONDS:
                    return str(cookie)
        return None

    def _sign(self, text: str) -> str:
        return hmac.new(self._key, b"session:" + text.encode("latin-1"), hashlib.sha256).hexdigest()

    def _csrf(self, visitor: _Visitor) -> str:
        return hmac.new(self._key, b"csrf:" + visitor.binding.encode(), hashlib.sha256).hexdigest()

    async def _list(self, visitor: _Visitor, notice: str | None) -> str:
        waiting = await self._suspensions.undecided(MAX_LISTED + 1)
        return listing(
            self._base,
            waiting[:MAX_LISTED],
            more=len(waiting) > MAX_LISTED,
            csrf=self._csrf(visitor),
            notice=notice,
            sign_out=visitor.own_session,
        )

    async def _send(self, send: Send, answer: _Answer, *, secure: bool, head: bool) -> None:
        body = answer.body.encode()
        headers = [*HEADERS, (b"content-length", str(len(body)).encode()), *answer.headers]
        if answer.location is not None:
            headers.append((b"location", answer.location.encode()))
        if answer.cookie is not None:
            lifetime = SESSION_SECONDS if answer.cookie else 0
            attributes = f"Path={self._base}; HttpOnly; SameSite=Strict; Max-Age={lifetime}"
            if secure:
                attributes += "; Secure"
            headers.append((b"set-cookie", f"{_COOKIE}={answer.cookie}; {attributes}".encode()))
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if head else body})


def approvals_app(
    suspensions: Suspensions,
    *,
    approver_token: str | None = None,
    authenticate: Authenticate | None = None,
    agent_tokens: Collection[str] = (),
    path: str = APPROVALS_PATH,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = None,
    secret_keys: SecretKeys | None = None,
    body_timeout_ms: int = DEFAULT_BODY_TIMEOUT_MS,
) -> ASGIApp:
    """The approvals page for ``suspensions``, an ASGI app answering every path under ``path``.

    A person signs in with ``approver_token``, or is admitted by the host's ``authenticate``
    (sync or async, given the HTTP request; it must admit a ``Member``), or either when both
    are given. ``agent_tokens`` are the agents' bearer tokens, which never open the page.
    ``allowed_hosts`` and ``allowed_origins`` are the Host and Origin values accepted, as for
    ``create_mcp`` (loopback by default). ``secret_keys`` signs the forms of a page without a
    token, so that every replica accepts them (by default a key of this process). A form must arrive
    whole within ``body_timeout_ms`` (30 s), else 408 and the connection closes. Mount it at
    ``path`` (``Mount(path, app=...)`` or two routes, ``path`` and ``path/{rest:path}``).
    """
    return ApprovalsPage(
        suspensions,
        approver_token=approver_token,
        authenticate=authenticate,
        agent_tokens=agent_tokens,
        path=path,
        allowed_hosts=LOOPBACK_HOSTS if allowed_hosts is None else allowed_hosts,
        allowed_origins=LOOPBACK_ORIGINS if allowed_origins is None else allowed_origins,
        secret_keys=secret_keys,
        login_limit=LoginLimit(),
        body_timeout_s=check_int("body_timeout_ms", body_timeout_ms) / 1000,
    )


def _digest(token: str) -> bytes:
    """What a token is compared by: its hash, so neither its length nor its bytes show in the time taken."""
    return hashlib.sha256(token.encode()).digest()


def _matches(presented: bytes, known: list[bytes]) -> bool:
    """Whether ``presented`` is one of ``known``, comparing each: the time does not say which."""
    found = False
    for candidate in known:
        found |= hmac.compare_digest(presented, candidate)
    return found


def _carried(scope: Scope) -> set[str] | None:
    """What a request carries that could be a credential: each header's whole value and its words
    (split at spaces, commas and semicolons), the value of each ``name=value`` among them, basic
    credentials decoded, and the same of the query string, percent-decoded too. ``None`` when they
    pass :data:`_MAX_CARRIED`: a request no browser sends, refused rather than read in part.
    """
    query = scope.get("query_string", b"").decode("latin-1")
    values = [value.decode("latin-1") for _, value in scope.get("headers", [])] + [query, unquote_plus(query)]
    carried: set[str] = set()
    for value in values:
        scheme, _, credentials = value.strip().partition(" ")
        carried.update((value.strip(), credentials.strip()))
        if scheme.lower() == "basic":
            with contextlib.suppress(ValueError):
                carried.update(base64.b64decode(credentials.strip(), validate=True).decode("latin-1").split(":"))
        for word in _SEPARATORS.split(value):
            _, equals, assigned = word.partition("=")
            carried.update((word, word.strip('"')))
            if equals:
                carried.update((assigned.strip('"'), unquote_plus(assigned)))
            if len(carried) > _MAX_CARRIED:
                return None
    carried.discard("")
    return carried


def _notice(scope: Scope) -> str | None:
    try:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), max_num_fields=_MAX_FIELDS)
    except ValueError:
        return None  # too many fields: no notice of ours
    return _NOTICES.get(str(query.get("done", [""])[0]))


async def _form(scope: Scope, receive: Receive, bodies: BodyReader) -> dict[str, str]:
    """The POSTed form's fields (the first value of each), read within :data:`_MAX_BODY_BYTES` and a time."""
    kind = Headers(scope=scope).get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise _Refusal(415, "Send the page's own form.")
    body = await bodies.read(scope, receive)
    if isinstance(body, Unread):
        raise _Refusal(body.status, _UNREAD[body.status], headers=body.headers)
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=_MAX_FIELDS, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise _Refusal(400, "The form could not be read.") from None
    return {name: values[0] for name, values in fields.items()}
