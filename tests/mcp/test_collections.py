"""What a running server does to the process's garbage collector: nothing unless asked, and with
``freeze_loaded=True`` (what ``mycelium serve`` passes) a freeze of what start-up loaded.

Each case runs in a process of its own: a freeze is for the life of the process, and the test
runner's must stay as it is.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAM = """
import gc, anyio
from mycelium.mcp import McpAuthority, Refused, create_mcp, create_mcp_catalog
from mycelium.testing import rejecting_sandbox

async def main():
    catalog = create_mcp_catalog(load=lambda principal: McpAuthority(grants={}), sandbox=rejecting_sandbox())
    async with catalog:
        server = create_mcp(catalog=catalog, authenticate=lambda request: Refused(401){option})
        before = gc.get_freeze_count()
        async with server.running():
            print(before, gc.get_freeze_count())

anyio.run(main, backend="asyncio")
"""


def frozen_counts(option: str) -> tuple[int, int]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM.replace("{option}", option)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    before, running = done.stdout.split()
    return int(before), int(running)


@pytest.mark.parametrize("option", ["", ", freeze_loaded=False"])
def test_a_running_server_leaves_the_hosts_collector_alone_by_default(option: str) -> None:
    assert frozen_counts(option) == (0, 0)


def test_a_server_asked_to_freeze_what_start_up_loaded_keeps_it_out_of_later_collections() -> None:
    before, running = frozen_counts(", freeze_loaded=True")
    assert before == 0
    assert running > 10_000  # the SDK, pydantic and the catalog: what full collections no longer walk
