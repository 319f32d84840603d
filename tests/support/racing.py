"""Start processes at the same moment, without sleeps: each says it is ready, then all are told to go."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream


async def race(command: list[str], *, processes: int = 2, cwd: Path | None = None) -> list[Any]:
    """Run ``command`` in ``processes`` processes released together; the JSON line each printed last.

    Each process prints ``ready``, waits for a line on its stdin, does its work and prints one
    JSON line. Every process must exit with 0.
    """
    async with AsyncExitStack() as stack:
        # stderr goes where the test's goes, so a worker's traceback shows in the report.
        workers = [
            await stack.enter_async_context(await anyio.open_process(command, stderr=None, cwd=cwd))
            for _ in range(processes)
        ]
        outputs = [BufferedByteReceiveStream(worker.stdout) for worker in workers if worker.stdout]
        for output in outputs:
            assert await output.receive_until(b"\n", 100) == b"ready"
        for worker in workers:
            assert worker.stdin is not None
            await worker.stdin.send(b"go\n")
        results = [json.loads(await output.receive_until(b"\n", 100_000)) for output in outputs]
        assert [await worker.wait() for worker in workers] == [0] * processes
    return results
