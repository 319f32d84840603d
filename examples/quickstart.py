"""Quick start without a model: register demo.ping and execute one known binding.

`direct_sandbox` ignores the submitted code and calls the binding itself: it is a test
helper with the host's privileges, not isolation. Prints {"value":"pong"}.
"""

import anyio
from pydantic import BaseModel

from mycelium import Module, Runtime, ToolCall, operation
from mycelium.signals import AbortSignal
from mycelium.testing import direct_sandbox


class Pong(BaseModel):
    value: str


demo = Module(
    id="example-demo",
    name="demo",
    operations={"ping": operation(output=Pong, execute=lambda: Pong(value="pong"))},
)


async def call_ping(bindings, signal: AbortSignal):  # type: ignore[no-untyped-def]
    signal.throw_if_aborted()
    return await bindings.demo.ping({})


async def main() -> None:
    async with Runtime(modules=[demo], sandbox=direct_sandbox(call_ping)) as runtime, runtime.lease() as lease:
        prepared = lease.execute_tool.prepare(
            ToolCall(id="example-execute", name="execute", arguments={"code": "return await demo.ping({})"})
        )
        result = await prepared.execute()
        if result.is_error or result.text != '{"value":"pong"}':
            raise SystemExit(f"unexpected execute result: {result.text}")
        print(result.text)


if __name__ == "__main__":
    anyio.run(main)
