"""The one scenario every agent-framework test drives: a model tidies a person's notes.

The model reads the execute tool's description, then writes :data:`PROGRAM`: it searches
the catalog, adds three notes concurrently, meets an operation that fails on the host
(and carries on), deletes one note (a ``confirm`` operation the person approves or
declines through the framework's own approval), and adds one more. The notes live in a
SQLite file whose journal records every operation that ran, so a test counts writes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from mycelium import MemorySuspensions, Module, Runtime
from mycelium.sandbox.monty import MontySandbox
from tests.support.suspend_worker import Crm, host

PROGRAM = """
import asyncio
found = await forage.search("add a note")
print("found", found[0]["path"])
made = await asyncio.gather(crm.create(title="one"), crm.create(title="two"), crm.create(title="three"))
try:
    await mail.send(to="team")
except Exception as failure:
    print("mail failed:", type(failure).__name__)
gone = await crm.delete(id=made[1]["id"])
last = await crm.create(title="four")
return {"made": made, "gone": gone, "last": last}
"""
"""What the model writes; the delete pauses the program until the person decides."""

SECRET = "smtp.internal:25 refused"
"""What the failing operation raises: the host's detail, never the model's to read."""


def mail() -> Module:
    """A mail module whose one operation always fails on the host."""
    module = Module(id="mail", name="mail")

    @module.operation(access="write")
    async def send(to: str) -> int:
        """Send the day's notes to someone."""
        raise ConnectionError(SECRET)

    return module


@dataclass
class App:
    """The scenario's host: its runtime and the notes file behind it."""

    runtime: Runtime
    crm: Crm

    def pending_delete(self) -> dict[str, int]:
        """The arguments the person is asked to approve: note "two"'s id, whichever the concurrent creates gave it."""
        return {"id": self.crm.titles().index("two") + 1}

    def assert_ran_once_each(self, *, approved: bool) -> None:
        """Every write happened exactly once: the creates, then the delete and the last create if approved."""
        ran = [entry[:2] for entry in self.crm.journal()]
        assert sorted(ran[:3]) == [("create", "one"), ("create", "three"), ("create", "two")]
        if approved:
            assert ran[3:4] == [("delete", ran[3][1])]
            assert ran[4:] == [("create", "four")]
            assert sorted(self.crm.titles()) == ["four", "one", "three"]
        else:
            assert ran[3:] == []
            assert sorted(self.crm.titles()) == ["one", "three", "two"]

    def assert_released(self) -> None:
        """The agent run's lease was given back."""
        assert self.runtime.leases_held == 0


HANG = "return await hang.forever()"
"""A program that waits forever in an operation, until its run is cancelled."""


async def assert_released_on_cancel(run: Callable[[Runtime], Awaitable[object]]) -> None:
    """Cancel ``run`` (an agent run on the runtime it is given, whose model writes :data:`HANG`)
    while its program waits in the operation; no lease is left held."""
    started = anyio.Event()
    hang = Module(id="hang", name="hang")

    @hang.operation(access="read")
    async def forever() -> int:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()
        return 0

    async with Runtime(modules=[hang], sandbox=MontySandbox()) as runtime:
        async with anyio.create_task_group() as group:
            group.start_soon(run, runtime)
            await started.wait()
            group.cancel_scope.cancel()
        assert runtime.leases_held == 0


@asynccontextmanager
async def hosted(tmp_path: Path) -> AsyncIterator[App]:
    """The scenario's host (every confirmation deferred to the person), closed after the block."""
    crm = Crm(tmp_path / "crm.sqlite")
    async with host(crm, MemorySuspensions(), extra=[mail()]) as runtime:
        yield App(runtime, crm)
        with anyio.fail_after(10):
            await runtime.close()
