"""What a running server does to the process's garbage collector: nothing unless asked, and with
``freeze_loaded=True`` (what ``mycelium serve`` passes) a freeze of what start-up loaded, one more of
what the first requests loaded, and every later request's cyclic garbage collected as usual.

Each case runs in a process of its own: a freeze is for the life of the process, and the test
runner's must stay as it is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mycelium.mcp._collector import FREEZE_AFTER_REQUESTS

ROOT = Path(__file__).resolve().parents[2]

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

# A real server on loopback, driven by the SDK's client over 2026-07-28 (one HTTP request per call):
# every execute calls an operation that leaves a cycle behind, which only the collector can free.
SERVING = """
import gc, json, weakref, anyio, httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mycelium import Module
from mycelium.mcp import Agent, McpAuthority, bearer_tokens, create_mcp, create_mcp_catalog
from mycelium.sandbox.monty import MontySandbox
from tests.support.loopback import serve_asgi

class Node:
    pass

made = []
probe = Module(id="probe", name="probe", description="Leaves a cycle behind")

@probe.operation(access="read")
def cycle() -> int:
    '''Make one cycle and drop it.'''
    node = Node()
    node.itself = node
    made.append(weakref.ref(node))
    return len(made)

async def main():
    authority = McpAuthority(grants={"probe": "read"}, sources=[probe])
    catalog = create_mcp_catalog(load=lambda principal: authority, sandbox=MontySandbox())
    async with catalog:
        server = create_mcp(catalog=catalog, authenticate=bearer_tokens({"t": Agent("a")}), freeze_loaded=True)
        async with serve_asgi(server.asgi) as base:
            async with httpx2.AsyncClient(headers={"Authorization": "Bearer t"}, timeout=30) as http:
                transport = streamable_http_client(f"{base}/mcp", http_client=http)
                async with Client(transport, mode="2026-07-28") as client:

                    async def executes(count):
                        for _ in range(count):
                            result = await client.call_tool("execute", {"code": "return await probe.cycle()"})
                            assert not result.is_error, result

                    await executes(1)  # answered only once the server runs: start-up's freeze is done
                    started = gc.get_freeze_count()
                    await executes({first})
                    first = gc.get_freeze_count()
                    await executes({later})
                    later = gc.get_freeze_count()
            gc.collect()
            alive = sum(ref() is not None for ref in made)
            print(json.dumps(dict(started=started, first=first, later=later, made=len(made), alive=alive,
                                  enabled=gc.isenabled())))

anyio.run(main, backend="asyncio")
"""


def run(program: str) -> str:
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def frozen_counts(option: str) -> tuple[int, int]:
    before, running = run(PROGRAM.replace("{option}", option)).split()
    return int(before), int(running)


@pytest.mark.parametrize("option", ["", ", freeze_loaded=False"])
def test_a_running_server_leaves_the_hosts_collector_alone_by_default(option: str) -> None:
    assert frozen_counts(option) == (0, 0)


def test_a_server_asked_to_freeze_what_start_up_loaded_keeps_it_out_of_later_collections() -> None:
    before, running = frozen_counts(", freeze_loaded=True")
    assert before == 0
    assert running > 10_000  # the SDK, pydantic and the catalog: what full collections no longer walk


@pytest.fixture(scope="module")
def serving() -> dict[str, Any]:
    """A serving process's freeze counts after its first request, after a few more than the first batch, and
    after twice as many again; and the cycles its requests made (how many, how many survived a collection)."""
    first, later = FREEZE_AFTER_REQUESTS + 10, 2 * FREEZE_AFTER_REQUESTS
    figures: dict[str, Any] = json.loads(run(SERVING.replace("{first}", str(first)).replace("{later}", str(later))))
    assert figures["made"] == 1 + first + later
    return figures


def test_a_serving_process_freezes_what_its_first_requests_loaded_once_and_never_again(
    serving: dict[str, Any],
) -> None:
    started, first, later = serving["started"], serving["first"], serving["later"]
    # The principal's runtime and catalog, loaded by the first request, join what start-up froze.
    assert first > started > 10_000
    assert later <= first  # what later requests make is never frozen (frozen objects freed by refcount leave it)


def test_a_serving_process_keeps_the_collector_on_and_frees_every_cycle_its_requests_made(
    serving: dict[str, Any],
) -> None:
    assert serving["enabled"] is True
    # Made before and after the freezes alike: the freeze collects first, so no request's garbage is kept.
    assert serving["alive"] == 0
