"""Changing capabilities: a lease keeps the Computer it captured while the host switches to another.

A source projects the host's *current* Computer as a module. Lease L1 captures Computer A.
The host then switches to Computer B and invalidates the snapshot: the next lease, L2, sees
B, while L1 still sees A for its whole life. A's snapshot is released only once L1 is.
"""

from __future__ import annotations

import anyio

from mycelium import AcquireContext, Acquired, Module, Runtime, operation, source
from mycelium.testing import direct_sandbox


class Host:
    """The host's notion of which Computer is current."""

    def __init__(self) -> None:
        self.current = "Computer A"
        self.invalidate_current = lambda: None

    async def acquire(self, context: AcquireContext) -> Acquired:
        name = self.current
        self.invalidate_current = context.invalidate  # called when the host switches
        print(f"acquired {name}")
        computer = Module(
            id="computer",
            name="computer",
            operations={"whoami": operation(access="read", execute=lambda: {"computer": name})},
        )

        async def release() -> None:
            print(f"released {name}")

        return Acquired(version=name.lower().replace(" ", "-"), modules=[computer], release=release)

    def switch_to(self, name: str) -> None:
        print(f"host switches to {name}")
        self.current = name
        self.invalidate_current()


async def whoami(bindings, signal):  # type: ignore[no-untyped-def]  # stands in for a model's program
    return await bindings.computer.whoami()


async def main() -> None:
    host = Host()
    runtime = Runtime(sources=[source(id="current-computer", acquire=host.acquire)], sandbox=direct_sandbox(whoami))
    async with runtime:
        first = await runtime.acquire()
        print(f"L1 revision {first.revision}: {(await first.execute_tool.run('...')).text}")
        host.switch_to("Computer B")
        async with runtime.lease() as second:
            print(f"L2 revision {second.revision}: {(await second.execute_tool.run('...')).text}")
            print(f"L1 revision {first.revision}: {(await first.execute_tool.run('...')).text}")
        print("releasing L1")
        await first.release()
    print("runtime closed")


if __name__ == "__main__":
    anyio.run(main)
