"""Makes ``suspensions-0.1.0.sqlite``: a SQLite suspension store as release 0.1.0 wrote it.

It holds one pending suspension, made by a real runtime over Monty: the program below
paused at the confirmation of ``crm.delete``, sealed under :data:`KEY`, expiring in a
hundred years so the file never goes stale. It was run once, at commit ``781d05f``
(``.venv/bin/python -m tests.suspensions.data.make_0_1_0_store``); later code writes a
later schema, so the file is kept as it was made, never made again.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import anyio

from mycelium import Access, Runtime, Suspensions, defer
from mycelium.sandbox.monty import MontySandbox
from mycelium.suspensions import SqliteSuspensions
from tests.support.suspend_worker import Crm

KEY = b"the 0.1.0 store fixture's key"
TOOL_CALL_ID = "t-0.1.0"
CODE = """
made = await crm.create(title="before the pause")
gone = await crm.delete(id=made["id"])
return [made, gone]
"""
HERE = Path(__file__).resolve().parent


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        made = Path(folder) / "suspensions.sqlite"
        store = SqliteSuspensions(made)
        suspensions = Suspensions(store=store, key=KEY, expires_after_ms=100 * 365 * 86_400_000)
        crm = Crm(Path(folder) / "crm.sqlite")
        runtime = Runtime(
            modules=[crm.module()], sandbox=MontySandbox(), access=Access(confirm=defer), suspensions=suspensions
        )
        async with runtime, runtime.lease() as lease:
            result = await lease.execute_tool.run(CODE, tool_call_id=TOOL_CALL_ID)
        assert result.suspension is not None, result.text
        await store.aclose()
        shutil.copyfile(made, HERE / "suspensions-0.1.0.sqlite")
        print(result.suspension.id)


if __name__ == "__main__":
    anyio.run(main)
