"""A person at the approvals page, over HTTP: signs in, reads the pending list, approves or declines."""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx2

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
LISTED = re.compile(r'data-suspension="([^"]+)"')


@dataclass
class Approver:
    """The page's client: ``http`` keeps the session cookie between requests."""

    http: httpx2.AsyncClient
    path: str = "/approvals"

    async def sign_in(self, token: str) -> httpx2.Response:
        return await self.http.post(f"{self.path}/login", data={"token": token})

    async def csrf(self) -> str:
        found = CSRF.search((await self.http.get(self.path)).text)
        assert found is not None, "not signed in: the page shows no form"
        return found.group(1)

    async def listed(self) -> list[str]:
        """The ids of the pending approvals the page lists."""
        return LISTED.findall((await self.http.get(self.path)).text)

    async def decide(self, suspension_id: str, *, approve: bool) -> httpx2.Response:
        """Press Approve or Decline on one row; the page the browser lands on."""
        form = {"csrf": await self.csrf(), "suspension": suspension_id, "decision": "approve" if approve else "decline"}
        return await self.http.post(f"{self.path}/decide", data=form, follow_redirects=True)
