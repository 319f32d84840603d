"""An app whose one operation runs until the test lets it finish (used by tests/cli/test_drain.py).

``await slow.wait()`` writes a line to the FIFO named by ``$SLOW_STARTED`` (so the test knows
the call is running), then returns what it reads from the FIFO named by ``$SLOW_RELEASE``.
``await slow.hang()`` says it started the same way, then never returns: only a cancellation
ends it, and at once, since nothing of it waits in a thread.
"""

import os
from pathlib import Path

import anyio
import anyio.to_thread

from mycelium import Module
from mycelium.mcp import McpAuthority, McpCatalog, create_mcp_catalog
from mycelium.sandbox.monty import MontySandbox

slow = Module(id="slow-v1", name="slow", description="A call that runs until it is let go")


def _announce() -> None:
    # Opening a FIFO to write blocks until the test opens it to read: the test knows the call runs.
    Path(os.environ["SLOW_STARTED"]).write_text("started\n")


def _released() -> str:
    return Path(os.environ["SLOW_RELEASE"]).read_text().strip()


@slow.operation(access="read")
async def wait() -> str:
    """Run until the test lets it finish; return what the test said."""
    await anyio.to_thread.run_sync(_announce, abandon_on_cancel=True)
    return await anyio.to_thread.run_sync(_released, abandon_on_cancel=True)


@slow.operation(access="read")
async def hang() -> str:
    """Run until cancelled."""
    await anyio.to_thread.run_sync(_announce, abandon_on_cancel=True)
    await anyio.sleep_forever()
    return "never"


def create_catalog() -> McpCatalog:
    """Everyone may read."""
    authority = McpAuthority(grants={"slow-v1": "read"}, sources=[slow])
    return create_mcp_catalog(load=lambda principal: authority, sandbox=MontySandbox())
