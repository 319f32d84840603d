"""The approvals page's HTML: server-rendered, no script at all, everything it shows escaped and bounded.

Every value a page shows comes from someone else (a principal's name, an operation's path,
the arguments a guest program chose), so each is escaped where it is written, and the
arguments are cut at :data:`MAX_ARGUMENT_CHARS` while they are encoded, never encoded whole
first. The one style sheet is allowed by its hash in the answer's Content-Security-Policy.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json

from ..suspensions import Suspension

__all__ = ["HEADERS", "MAX_ARGUMENT_CHARS", "listing", "page", "sign_in"]

MAX_ARGUMENT_CHARS = 2_000
"""The most characters of a call's arguments shown; longer ones are cut, visibly."""
_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#1b1b1b}"
    "h1{font-size:1.4rem}table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;"
    "padding:.5rem;border-bottom:1px solid #ddd}pre{white-space:pre-wrap;word-break:break-all;margin:0;"
    "font-size:.85rem}.notice{background:#eef6ee;padding:.6rem;border-radius:4px}.error{background:#fbeaea;"
    "padding:.6rem;border-radius:4px}.note{color:#666;font-size:.8rem}button{margin:.1rem;padding:.3rem .8rem}"
    "form{display:inline}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'".encode(),
    ),
    (b"x-content-type-options", b"nosniff"),
    # Not no-referrer: under it a browser sends Origin: null with the page's own forms, which the page
    # must refuse (a sandboxed frame elsewhere sends the same); same-origin tells other sites nothing.
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
"""What every answer of the page says: not cached, not framed, no script, not readable cross-origin."""


def page(title: str, body: str) -> str:
    """A whole page: ``title`` is escaped here, ``body`` is HTML already escaped by its maker."""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width"><style>{_STYLE}</style></head>'
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )


def sign_in(base: str, *, token: bool, error: str | None = None) -> str:
    """The sign-in page: the approver token's form when the page takes one, else where to sign in."""
    told = f'<p class="error">{html.escape(error)}</p>' if error else ""
    if not token:
        return page(
            "Sign in to approve",
            f"{told}<p>Runs that wait for a person's approval are decided here. This page admits the people "
            "the host has signed in: sign in to the host in this browser, then reload this page.</p>",
        )
    return page(
        "Sign in to approve",
        f"{told}<p>Runs that wait for a person's approval are decided here. Sign in with the approver token "
        "(printed by <code>mycelium serve</code>, or the one in MYCELIUM_APPROVER_TOKEN).</p>"
        f'<form method="post" action="{html.escape(base)}/login"><label>Approver token '
        '<input type="password" name="token" autocomplete="current-password" required></label> '
        '<button type="submit">Sign in</button></form>',
    )


def listing(base: str, waiting: list[Suspension], *, more: bool, csrf: str, notice: str | None, sign_out: bool) -> str:
    """The pending approvals, each with Approve and Decline; ``more`` says others wait beyond them.

    ``sign_out`` offers the page's own Sign out (a token session); a person the host signed in
    signs out at the host.
    """
    token = html.escape(csrf)
    parts = [f'<p class="notice">{html.escape(notice)}</p>'] if notice else []
    if not waiting:
        parts.append("<p>Nothing waits for a decision.</p>")
    else:
        rows = "".join(_row(base, each, token) for each in waiting)
        parts.append(
            "<table><thead><tr><th>Requested by</th><th>Module</th><th>Operation</th><th>Access</th>"
            f"<th>Arguments</th><th>Decision</th></tr></thead><tbody>{rows}</tbody></table>"
        )
        if more:
            parts.append(f'<p class="note">More wait than the {len(waiting)} shown: decide these first.</p>')
    if sign_out:
        parts.append(
            f'<form method="post" action="{html.escape(base)}/logout"><input type="hidden" name="csrf" '
            f'value="{token}"><button type="submit">Sign out</button></form>'
        )
    return page("Pending approvals", "".join(parts))


def _row(base: str, suspension: Suspension, csrf: str) -> str:
    shown, cut = _arguments(suspension.arguments)
    note = (
        f'<p class="note">Arguments truncated: the first {MAX_ARGUMENT_CHARS:,} characters are shown.</p>'
        if cut
        else ""
    )
    identifier = html.escape(suspension.id)
    buttons = "".join(
        f'<form method="post" action="{html.escape(base)}/decide"><input type="hidden" name="csrf" '
        f'value="{csrf}"><input type="hidden" name="suspension" value="{identifier}"><input type="hidden" '
        f'name="decision" value="{value}"><button type="submit">{label}</button></form>'
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


def _arguments(arguments: object) -> tuple[str, bool]:
    """The arguments as indented JSON, at most :data:`MAX_ARGUMENT_CHARS` of it; whether it was cut.

    Encoded piece by piece and stopped once past the bound, so a call with megabytes of
    arguments costs the page what it shows.
    """
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, sort_keys=True)
    pieces: list[str] = []
    size = 0
    for piece in encoder.iterencode(arguments):
        pieces.append(piece)
        size += len(piece)
        if size > MAX_ARGUMENT_CHARS:
            return "".join(pieces)[:MAX_ARGUMENT_CHARS] + "…", True
    return "".join(pieces), False
