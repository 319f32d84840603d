"""Quick start without a model: register demo.ping and run a one-line program in the Monty sandbox.

Prints {"value":"pong"}. The program runs in a real sandbox (a Monty worker process);
the call to demo.ping crosses back to the host, where its output is encoded.
"""

import anyio
from pydantic import BaseModel

from mycelium import Module, Runtime, ToolCall, operation
from mycelium.sandbox.monty import MontySandbox


class Pong(BaseModel):
    value: str


demo = Module(
    id="example-demo",
    name="demo",
    operations={"ping": operation(output=Pong, execute=lambda: Pong(value="pong"))},
)


async def main() -> None:
    async with Runtime(modules=[demo], sandbox=MontySandbox()) as runtime:
        async with runtime.lease() as lease:
            call = ToolCall(id="example-execute", name="execute", arguments={"code": "return await demo.ping({})"})
            result = await lease.execute_tool.prepare(call).execute()
            if result.is_error or result.text != '{"value":"pong"}':
                raise SystemExit(f"unexpected execute result: {result.text}")
            print(result.text)


if __name__ == "__main__":
    anyio.run(main)
