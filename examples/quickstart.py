"""Quick start without a model: one operation, one program, run in the Monty sandbox.

Prints what the program returned, labelled, since `make run` prints the server's banner
next. The program runs in a real sandbox (a Monty worker process); its call to notes.search
crosses back to this process, where the input is checked and the output encoded. The
README shows this program.
"""

import anyio

from mycelium import Module, Runtime
from mycelium.sandbox.monty import MontySandbox

notes = Module(id="notes-v1", name="notes")


@notes.operation(access="read")
async def search(query: str) -> list[str]:
    """Find notes whose text contains the query."""
    return [note for note in ["buy milk", "call Sam"] if query in note]


async def main() -> None:
    async with Runtime(modules=[notes], sandbox=MontySandbox()) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run('return await notes.search(query="milk")')
    print("The program returned:", result.text)


if __name__ == "__main__":
    anyio.run(main)
