"""`mycelium serve` processes for the replica tests: started with an environment, read as they log.

A test waits on what the server says it did (a log line on stderr), never on time: it sends
SIGTERM, waits for the line that says the drain began, and only then checks what a new
request gets.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.support.paths import APPS, EXAMPLES

NOTES_APP = str(EXAMPLES / "notes_app.py")
SLOW_APP = str(APPS / "slow_app.py")
TOKEN = "replica-test-token-" + "r" * 20
KEY = "replica-test-key-" + "k" * 40
"""The deployment's ring: one key, at least 32 characters."""
_URL = re.compile(r"http://127\.0\.0\.1:\d+/mcp")
STARTS_WITHIN_S = 45.0
STOPS_WITHIN_S = 30.0


@dataclass
class Replica:
    """One `mycelium serve` process: its URL, its banner, and what it logged so far."""

    process: Process
    url: str
    banner: list[str]
    stderr: BufferedByteReceiveStream
    log: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT``, without ``/mcp``."""
        return self.url.removesuffix("/mcp")

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    def log_holds(self, text: str) -> bool:
        """Whether a line read so far holds ``text`` (all of them once :meth:`exit_code` returned)."""
        return any(text in line for line in self.log)

    async def says(self, text: str) -> None:
        """Read the log until a line holds ``text``."""
        with anyio.fail_after(STOPS_WITHIN_S):
            while not self.log_holds(text):
                self.log.append((await self.stderr.receive_until(b"\n", 1 << 20)).decode("utf-8", "replace"))

    async def exit_code(self) -> int:
        """Wait for the process to end, reading its log meanwhile (a full pipe would hold it)."""
        with anyio.fail_after(STOPS_WITHIN_S):
            self.log.extend(line.decode("utf-8", "replace") for line in (await self._rest()).splitlines())
            return await self.process.wait()

    async def stop(self) -> int:
        """SIGTERM, as an orchestrator stops a replica; the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return await self.exit_code()

    async def _rest(self) -> bytes:
        chunks = []
        while True:
            try:
                chunks.append(await self.stderr.receive())
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return b"".join(chunks)


def replica_env(data_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a replica: the test's own, with the tests' token and none of the replica settings."""
    dropped = (
        "MYCELIUM_TOKEN",
        "MYCELIUM_STORE",
        "MYCELIUM_SECRET_KEY",
        "MYCELIUM_SECRET_KEY_FILE",
        "MYCELIUM_APPROVER_TOKEN",
        "FORCE_COLOR",
    )
    env = {key: value for key, value in os.environ.items() if key not in dropped}
    env.update({"MYCELIUM_DATA_DIR": str(data_dir), "MYCELIUM_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"})
    env.update(extra or {})
    return env


@asynccontextmanager
async def replica(
    data_dir: Path,
    *,
    app: Sequence[str] = (NOTES_APP,),
    options: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[Replica]:
    """`mycelium serve` on a free port; yields once its banner (and so its URL) is printed.

    What it logged is shown with a failure. On the way out a process still running is killed.
    """
    command = [sys.executable, "-m", "mycelium.cli", "serve", *app, "--port", "0", *options]
    process = await anyio.open_process(command, env=replica_env(data_dir, env))
    assert process.stdout is not None
    assert process.stderr is not None
    served = Replica(process, "", [], BufferedByteReceiveStream(process.stderr))
    try:
        stdout = BufferedByteReceiveStream(process.stdout)
        with anyio.fail_after(STARTS_WITHIN_S):
            while not served.banner or not served.banner[-1].startswith("Press Ctrl-C"):
                served.banner.append((await stdout.receive_until(b"\n", 65_536)).decode())
        served.url = next(found.group(0) for line in served.banner if (found := _URL.search(line)))
        yield served
    except BaseException:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            served.log.extend(line.decode("utf-8", "replace") for line in (await served._rest()).splitlines())
        print("\n".join(served.log), file=sys.stderr)  # the server's own account, shown with the failure
        raise
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.wait()
            await process.aclose()
