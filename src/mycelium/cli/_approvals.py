"""The approvals page ``mycelium serve`` offers at ``/approvals``: a person decides what paused runs wait for.

Server-rendered HTML with no script at all. Its own login: the approver token (never one
of the agents' tokens, which it refuses), answered with a session cookie (HttpOnly,
SameSite=Strict, signed, for :data:`SESSION_SECONDS`). The list shows every run waiting in
the catalog's suspensions for a person: who it is for, the module, the operation, its
access label and the arguments of the call (escaped, long ones cut with a note); each with
Approve and Decline, POST forms carrying a CSRF token bound to the session. A decision is
recorded in the store, where any replica's poll finds it. Every answer says
``Cache-Control: no-store`` and refuses to be framed; bad input is a 4xx, never a 500.

The cookie and CSRF token are HMACs under a key derived from the approver token, so every
replica given the same token accepts the same login, and changing the token ends every
session.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import secrets
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from urllib.parse import parse_qs

from starlette.types import Receive, Scope, Send

from ..suspensions import StoreUnavailable, Suspension, Suspensions
from ._console import logger

APPROVALS_PATH = "/approvals"
APPROVER_TOKEN_ENV = "MYCELIUM_APPROVER_TOKEN"
"""Where ``serve --approver-token`` is read from; the banner names it, never its value."""
SESSION_SECONDS = 12 * 3600
"""How long a login lasts."""
MAX_LISTED = 100
"""The most pending approvals one page shows; the page says when more wait."""
MAX_ARGUMENT_CHARS = 2_000
"""The most characters of a call's arguments shown; longer ones are cut, visibly."""
_COOKIE = "mycelium_approver"
_MAX_BODY_BYTES = 8 * 1024
_MAX_FIELDS = 8
_PURPOSE = b"mycelium/approvals-page/v1"
_NOTICES = {
    "approved": "Approved: the run goes on when its program asks for its result.",
    "declined": "Declined: the call will not run; the program is told so.",
    "already-decided": "Already decided (or expired): that approval was not changed.",
    "signed-out": "Signed out.",
}
_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#1b1b1b}"
    "h1{font-size:1.4rem}table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;"
    "padding:.5rem;border-bottom:1px solid #ddd}pre{white-space:pre-wrap;word-break:break-all;margin:0;"
    "font-size:.85rem}.notice{background:#eef6ee;padding:.6rem;border-radius:4px}.error{background:#fbeaea;"
    "padding:.6rem;border-radius:4px}.note{color:#666;font-size:.8rem}button{margin:.1rem;padding:.3rem .8rem}"
    "form{display:inline}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'".encode(),
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class BadRequest(Exception):
    """A request the page refuses with ``status``; ``message`` is shown on the page."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class _Answer:
    status: int
    body: str = ""
    location: str | None = None
    cookie: str | None = None


class ApprovalsPage:
    """The ASGI app for every path under :data:`APPROVALS_PATH`."""

    def __init__(
        self,
        suspensions: Suspensions,
        *,
        approver_token: str,
        agent_tokens: Collection[str],
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not approver_token or approver_token in agent_tokens:
            raise ValueError("the approver token must be set, and differ from every agent's token")
        self._suspensions = suspensions
        self._token = approver_token.encode()
        self._agent_tokens = [token.encode() for token in agent_tokens]
        self._key = hmac.new(self._token, _PURPOSE, hashlib.sha256).digest()
        self._clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            answer = await self._answer(scope, receive)
        except BadRequest as refused:
            answer = _Answer(refused.status, _page("Approvals", f'<p class="error">{html.escape(refused.message)}</p>'))
        except StoreUnavailable:
            logger.warning("the approvals page could not reach the suspension store")
            answer = _Answer(503, _page("Approvals", '<p class="error">The store did not answer. Try again.</p>'))
        await _send(send, answer, secure=scope.get("scheme") == "https")

    async def _answer(self, scope: Scope, receive: Receive) -> _Answer:
        path, method = scope["path"].rstrip("/") or "/", scope["method"]
        actions = {APPROVALS_PATH: "GET", f"{APPROVALS_PATH}/login": "POST", f"{APPROVALS_PATH}/decide": "POST"}
        actions[f"{APPROVALS_PATH}/logout"] = "POST"
        if path not in actions:
            raise BadRequest(404, "There is no such page.")
        if method != actions[path]:
            raise BadRequest(405, f"Use {actions[path]} here.")
        session = self._session(scope)
        if path == APPROVALS_PATH:
            if session is None:
                return _Answer(200, _login())
            return _Answer(200, await self._list(session, _notice(scope)))
        form = await _form(scope, receive)
        if path.endswith("/login"):
            return self._login(scope, form)
        if session is None:
            return _Answer(401, _login("Sign in first."))
        if not hmac.compare_digest(form.get("csrf", "").encode(), self._csrf(session).encode()):
            raise BadRequest(403, "This form is stale or was not sent from this page: reload the page and try again.")
        if path.endswith("/logout"):
            return _Answer(303, location=f"{APPROVALS_PATH}?done=signed-out", cookie="")
        decision = form.get("decision")
        if decision not in ("approve", "decline") or not form.get("suspension"):
            raise BadRequest(400, "Choose Approve or Decline for one pending approval.")
        recorded = await self._suspensions.decide_as_approver(form["suspension"], decision == "approve")
        done = ("approved" if decision == "approve" else "declined") if recorded else "already-decided"
        if recorded:
            logger.info("approvals page: suspension %s %s", form["suspension"], done)
        return _Answer(303, location=f"{APPROVALS_PATH}?done={done}")

    def _login(self, scope: Scope, form: dict[str, str]) -> _Answer:
        presented = form.get("token", "").strip().encode()
        client = scope.get("client") or ("unknown", 0)
        if any(hmac.compare_digest(presented, token) for token in self._agent_tokens):
            logger.warning("approvals page: an agent's token was refused at the login, from %s", client[0])
            return _Answer(
                401, _login("That token belongs to the agents: the approvals page takes the approver token.")
            )
        if not presented or not hmac.compare_digest(presented, self._token):
            logger.warning("approvals page: a wrong approver token was refused, from %s", client[0])
            return _Answer(401, _login("That token does not open this page. Use the approver token."))
        issued = f"{int(self._clock())}.{secrets.token_urlsafe(16)}"
        return _Answer(303, location=APPROVALS_PATH, cookie=f"{issued}.{self._sign(issued)}")

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
                if not issued.isdigit() or not hmac.compare_digest(mac, self._sign(f"{issued}.{nonce}")):
                    continue
                if 0 <= self._clock() - int(issued) < SESSION_SECONDS:
                    return str(cookie)
        return None

    def _sign(self, text: str) -> str:
        return hmac.new(self._key, b"session:" + text.encode(), hashlib.sha256).hexdigest()

    def _csrf(self, session: str) -> str:
        return hmac.new(self._key, b"csrf:" + session.encode(), hashlib.sha256).hexdigest()

    async def _list(self, session: str, notice: str | None) -> str:
        waiting = await self._suspensions.undecided(MAX_LISTED + 1)
        csrf = html.escape(self._csrf(session))
        parts = [f'<p class="notice">{html.escape(notice)}</p>'] if notice else []
        if not waiting:
            parts.append("<p>Nothing waits for a decision.</p>")
        else:
            rows = "".join(_row(each, csrf) for each in waiting[:MAX_LISTED])
            parts.append(
                "<table><thead><tr><th>Requested by</th><th>Module</th><th>Operation</th><th>Access</th>"
                f"<th>Arguments</th><th>Decision</th></tr></thead><tbody>{rows}</tbody></table>"
            )
            if len(waiting) > MAX_LISTED:
                parts.append(f'<p class="note">More wait than the {MAX_LISTED} shown: decide these first.</p>')
        parts.append(
            f'<form method="post" action="{APPROVALS_PATH}/logout"><input type="hidden" name="csrf" '
            f'value="{csrf}"><button type="submit">Sign out</button></form>'
        )
        return _page("Pending approvals", "".join(parts))


def _row(suspension: Suspension, csrf: str) -> str:
    shown = json.dumps(suspension.arguments, indent=2, ensure_ascii=False, sort_keys=True)
    note = ""
    if len(shown) > MAX_ARGUMENT_CHARS:
        note = (
            f'<p class="note">Arguments truncated: the first {MAX_ARGUMENT_CHARS:,} of {len(shown):,} characters '
            "are shown.</p>"
        )
        shown = shown[:MAX_ARGUMENT_CHARS] + "…"
    identifier = html.escape(suspension.id)
    buttons = "".join(
        f'<form method="post" action="{APPROVALS_PATH}/decide"><input type="hidden" name="csrf" value="{csrf}">'
        f'<input type="hidden" name="suspension" value="{identifier}"><input type="hidden" name="decision" '
        f'value="{value}"><button type="submit">{label}</button></form>'
        for value, label in (("approve", "Approve"), ("decline", "Decline"))
    )
    cells = [
        html.escape(suspension.requester or "(not named)"),
        html.escape(suspension.module_id),
        f"{html.escape(suspension.path)}"
        f'<p class="note">waits until {html.escape(suspension.expires_at.isoformat(timespec="seconds"))}</p>',
        html.escape(suspension.access),
        f"<pre>{html.escape(shown)}</pre>{note}",
        buttons,
    ]
    return f'<tr data-suspension="{identifier}">' + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _login(error: str | None = None) -> str:
    told = f'<p class="error">{html.escape(error)}</p>' if error else ""
    return _page(
        "Sign in to approve",
        f"{told}<p>Runs that wait for a person's approval are decided here. Sign in with the approver token "
        "(printed by <code>mycelium serve</code>, or the one in MYCELIUM_APPROVER_TOKEN).</p>"
        f'<form method="post" action="{APPROVALS_PATH}/login"><label>Approver token '
        '<input type="password" name="token" autocomplete="current-password" required></label> '
        '<button type="submit">Sign in</button></form>',
    )


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width"><style>{_STYLE}</style></head>'
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )


def _notice(scope: Scope) -> str | None:
    try:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), max_num_fields=_MAX_FIELDS)
    except ValueError:
        return None  # too many fields: no notice of ours
    return _NOTICES.get(query.get("done", [""])[0])


async def _form(scope: Scope, receive: Receive) -> dict[str, str]:
    """The POSTed form's fields (the first value of each), read within :data:`_MAX_BODY_BYTES`."""
    headers = dict(scope.get("headers", []))
    kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    if kind != b"application/x-www-form-urlencoded":
        raise BadRequest(415, "Send the page's own form.")
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise BadRequest(400, "The request ended early.")
        body += message.get("body", b"")
        if len(body) > _MAX_BODY_BYTES:
            raise BadRequest(413, "The form is too large.")
        if not message.get("more_body", False):
            break
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=_MAX_FIELDS, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise BadRequest(400, "The form could not be read.") from None
    return {name: values[0] for name, values in fields.items()}


async def _send(send: Send, answer: _Answer, *, secure: bool) -> None:
    body = answer.body.encode()
    headers = [*_HEADERS, (b"content-length", str(len(body)).encode())]
    if answer.location is not None:
        headers.append((b"location", answer.location.encode()))
    if answer.cookie is not None:
        lifetime = SESSION_SECONDS if answer.cookie else 0
        attributes = f"Path={APPROVALS_PATH}; HttpOnly; SameSite=Strict; Max-Age={lifetime}"
        if secure:
            attributes += "; Secure"
        headers.append((b"set-cookie", f"{_COOKIE}={answer.cookie}; {attributes}".encode()))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
