"""Three ``mycelium serve`` replicas behind a real nginx, sharing one PostgreSQL: the harness.

A :class:`Deployment` is what an operator runs: N replica processes of
``tests/support/apps/replicated_notes.py``, each on its own ephemeral loopback port, all
with the same token (``MYCELIUM_TOKEN``), the same key ring (``MYCELIUM_SECRET_KEY``) and
the same store (``MYCELIUM_STORE``: a database of its own in the session's pgserver), and
one nginx process in front of them, configured from ``nginx.conf.template`` (the file
docs/deployment.md shows). The app writes into one SQLite file every replica shares, so a
test counts there, outside every replica's memory, how often a write happened.

Nothing waits by sleeping: a replica is ready once its banner names its port and its
``/healthz`` answers 200, nginx once ``/healthz`` answers through it; each is polled with a
deadline. nginx inherits its listening socket from the harness (its ``NGINX`` variable), so
no other process can take the port in between. Every process is stopped on the way out.

nginx comes from Debian's packages (``make test`` installs it as root when it is not on the
PATH); without it these tests skip and say why.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx2
import pytest

from tests.support.apps.replicated_notes import DB_ENV, GATES_ENV, REPLICA_ENV, writes_of
from tests.support.paths import APPS, ROOT

NGINX_TEMPLATE = Path(__file__).with_name("nginx.conf.template")
APP = APPS / "replicated_notes.py"
TOKEN = "deployment-token-" + "d" * 24
TOKEN_ENV = "MYCELIUM_TOKEN"
SECRET_ENV = "MYCELIUM_SECRET_KEY"
STORE_ENV = "MYCELIUM_STORE"
REPLICAS = 3
DRAIN_SECONDS = 10
"""How long a stopped replica lets running requests finish (``--drain-seconds``): it hands off what
still runs after half of it, leaving 5 s, plenty on 2 busy cores, for the runs to pause."""
START_WITHIN_S = 60.0
"""From spawning a replica (or nginx) to its ``/healthz`` answering 200, on 2 busy cores."""
STOP_WITHIN_S = 30.0
POLL_EVERY_S = 0.05
_BANNER_URL = re.compile(r"http://127\.0\.0\.1:(\d+)/mcp")
_OWN_ENV = (
    TOKEN_ENV, SECRET_ENV, STORE_ENV, "MYCELIUM_SECRET_KEY_FILE", DB_ENV, GATES_ENV, REPLICA_ENV, "FORCE_COLOR"
)  # fmt: skip


def find_nginx() -> str:
    """nginx's executable, or skip saying why (Debian puts it in /usr/sbin, not always on a user's PATH)."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if found is None:
        pytest.skip(
            "nginx is not installed: `make test` installs Debian's nginx package when it runs as root "
            "with apt-get (it could not here), and tests/deployment needs it"
        )
    return found


def wait_until(condition: Callable[[], bool], *, within_s: float, what: str, log: Callable[[], str] = str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` (and showing ``log()``) after ``within_s``."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {within_s:.0f} s\n{log()}")
        time.sleep(POLL_EVERY_S)


def healthz(base: str) -> int | None:
    """The status of ``GET {base}/healthz``, or ``None`` when nothing answers."""
    try:
        return httpx2.get(f"{base}/healthz", timeout=2.0).status_code
    except httpx2.TransportError:
        return None


def _stop(process: subprocess.Popen[bytes], sig: signal.Signals) -> int:
    """Send ``sig`` (then SIGKILL if it is not gone within :data:`STOP_WITHIN_S`); the exit code."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            return process.wait(STOP_WITHIN_S)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait(STOP_WITHIN_S)


def _tail(path: Path, lines: int = 60) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return f"--- {path.name} ---\n" + "\n".join(text.splitlines()[-lines:])


@dataclass
class Replica:
    """One ``mycelium serve`` process."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    secret: str

    @property
    def address(self) -> str:
        """``host:port``, as nginx names it in ``$upstream_addr``."""
        return f"127.0.0.1:{self.port}"

    @property
    def base(self) -> str:
        return f"http://{self.address}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: the replica dies between two instructions, its memory gone, nothing drained."""
        _stop(self.process, signal.SIGKILL)

    def terminate(self) -> int:
        """SIGTERM: the replica drains and exits; its exit code."""
        return _stop(self.process, signal.SIGTERM)

    def log_text(self) -> str:
        return _tail(self.log)


@dataclass
class Nginx:
    """The nginx process in front of the replicas."""

    process: subprocess.Popen[bytes]
    port: int
    folder: Path
    config: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def log_text(self) -> str:
        return _tail(self.folder / "error.log")


def render_nginx_config(*, folder: Path, listen: str, servers: list[str], as_root: bool) -> str:
    """``nginx.conf.template`` filled in: scratch paths under ``folder``, one ``server`` line per replica."""
    # max_fails=0: routing follows only which replicas are up right now, never nginx's memory of a failure.
    lines = "\n".join(f"        server {address} max_fails=0;" for address in servers)
    # Started as root, nginx's workers would run as `nobody`, who cannot enter pytest's private folders.
    user = "user root root;" if as_root else ""
    filled = NGINX_TEMPLATE.read_text()
    for key, value in {"user": user, "dir": str(folder), "listen": listen, "servers": lines}.items():
        filled = filled.replace("{{" + key + "}}", value)
    assert "{{" not in filled, filled
    return filled


def start_nginx(executable: str, folder: Path, servers: list[str]) -> Nginx:
    """nginx on a free loopback port, proxying to ``servers``; returns once ``/healthz`` answers through it."""
    folder.mkdir(parents=True, exist_ok=True)
    for temp in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (folder / temp).mkdir(exist_ok=True)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(511)
        port = listener.getsockname()[1]
        config = render_nginx_config(
            folder=folder, listen=f"127.0.0.1:{port}", servers=servers, as_root=os.geteuid() == 0
        )
        (folder / "nginx.conf").write_text(config)
        # nginx takes over a listening socket named in $NGINX (as in its binary upgrade): bound here,
        # the port is never free for another process between choosing it and nginx listening on it.
        env = {**os.environ, "NGINX": f"{listener.fileno()};"}
        command = [executable, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-e", str(folder / "error.log")]
        with (folder / "nginx.out").open("wb") as out:
            process = subprocess.Popen(
                command, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out, pass_fds=[listener.fileno()]
            )
    finally:
        listener.close()
    proxy = Nginx(process, port, folder, config)

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"nginx exited with {process.returncode}\n{proxy.log_text()}")
        return healthz(proxy.base) == 200

    try:
        wait_until(ready, within_s=START_WITHIN_S, what="nginx did not answer /healthz", log=proxy.log_text)
    except BaseException:
        _stop(process, signal.SIGKILL)
        raise
    return proxy


def database_uri(server_uri: str, database: str) -> str:
    """The pgserver URI (``postgresql://postgres:@/postgres?host=...``) naming another database."""
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(server_uri)._replace(path=f"/{database}"))


def create_database(server_uri: str) -> str:
    """A new, empty database in the session's PostgreSQL; its URI."""
    name = f"deployment_{uuid.uuid4().hex[:16]}"

    async def create() -> None:
        connection = await asyncpg.connect(server_uri)
        try:
            await connection.execute(f'CREATE DATABASE "{name}"')
        finally:
            await connection.close()

    # In a thread of its own: this may be called while the test's event loop runs in this one.
    failure: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(create())
        except BaseException as exc:  # re-raised below, in the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(STOP_WITHIN_S)
    if failure:
        raise failure[0]
    return database_uri(server_uri, name)


@dataclass
class Deployment:
    """N replicas, one nginx, one PostgreSQL database, one shared notes file."""

    folder: Path
    store: str
    secret: str
    notes_db: Path
    nginx_executable: str
    replicas: list[Replica] = field(default_factory=list)
    proxy: Nginx | None = None
    _spawned: list[Replica] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The MCP endpoint clients use: nginx's."""
        assert self.proxy is not None
        return self.proxy.url

    def env(self, name: str, secret: str) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key not in _OWN_ENV}
        env.update(
            {
                TOKEN_ENV: TOKEN,
                SECRET_ENV: secret,
                STORE_ENV: self.store,
                DB_ENV: str(self.notes_db),
                GATES_ENV: str(self.gates),
                REPLICA_ENV: name,
                "PYTHONUNBUFFERED": "1",
                "NO_COLOR": "1",
            }
        )
        return env

    def spawn(self, name: str, *, port: int = 0, secret: str | None = None) -> Callable[[], Replica]:
        """Start a replica's process; the returned function waits until it serves and is healthy."""
        secret = self.secret if secret is None else secret
        out, log = self.folder / f"{name}.out", self.folder / f"{name}.log"
        command = [
            sys.executable, "-m", "mycelium.cli", "serve", str(APP),
            "--port", str(port), "--drain-seconds", str(DRAIN_SECONDS), "--log-level", "info",
        ]  # fmt: skip
        with out.open("wb") as stdout, log.open("ab") as stderr:
            process = subprocess.Popen(
                command, env=self.env(name, secret), cwd=ROOT, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr
            )
        replica = Replica(name, process, port, log, secret)
        self._spawned.append(replica)

        def account() -> str:
            return _tail(out, 20) + "\n" + replica.log_text()

        def ready() -> Replica:
            def announced() -> bool:
                if process.poll() is not None:
                    raise AssertionError(f"replica {name} exited with {process.returncode}\n{account()}")
                found = _BANNER_URL.search(out.read_text(errors="replace"))
                if found is not None:
                    replica.port = int(found.group(1))
                return found is not None

            wait_until(announced, within_s=START_WITHIN_S, what=f"replica {name} printed no URL", log=account)
            wait_until(
                lambda: healthz(replica.base) == 200,
                within_s=START_WITHIN_S,
                what=f"replica {name} did not answer /healthz with 200",
                log=account,
            )
            return replica

        return ready

    def start(self, name: str, *, port: int = 0, secret: str | None = None) -> Replica:
        """A replica that serves (not behind nginx unless it takes the place of one that was)."""
        return self.spawn(name, port=port, secret=secret)()

    def restart(self, replica: Replica) -> Replica:
        """Start ``replica`` again, stopped as it is, on its own port: nginx sends it traffic again."""
        assert not replica.running
        fresh = self.start(replica.name, port=replica.port, secret=replica.secret)
        self.replicas[self.replicas.index(replica)] = fresh
        return fresh

    def answered_by(self, headers: Mapping[str, str]) -> Replica:
        """The replica nginx passed a request to (the last of ``X-Upstream``, after any it could not reach)."""
        tried = [address.strip() for address in headers["x-upstream"].split(",")]
        [replica] = [replica for replica in self.replicas if replica.address == tried[-1]]
        return replica

    @property
    def gates(self) -> Path:
        """The folder of the FIFOs ``notes.hold(gate)`` waits on."""
        return self.folder / "gates"

    def gate(self, name: str) -> Path:
        """A new gate: ``notes.hold(gate=name)`` waits until the test writes to the returned FIFO."""
        fifo = self.gates / name
        os.mkfifo(fifo)
        return fifo

    def writes(self, text: str, op: str | None = None) -> list[tuple[str, str]]:
        """(op, replica name) of every write of ``text`` that happened, on any replica."""
        return writes_of(self.notes_db, text, op)

    def accounts(self) -> str:
        """What every process logged: shown with a failure."""
        parts = [replica.log_text() for replica in self._spawned]
        if self.proxy is not None:
            parts.append(self.proxy.log_text())
        return "\n".join(parts)

    def close(self) -> None:
        if self.proxy is not None:
            _stop(self.proxy.process, signal.SIGTERM)
        for replica in self._spawned:
            _stop(replica.process, signal.SIGTERM)


@contextmanager
def deployed(server_uri: str, folder: Path, nginx_executable: str, replicas: int = REPLICAS) -> Iterator[Deployment]:
    """Start ``replicas`` replicas and nginx over a fresh database; stop them all on the way out."""
    folder.mkdir(parents=True, exist_ok=True)
    deployment = Deployment(
        folder=folder,
        store=create_database(server_uri),
        secret=secrets.token_hex(32),
        notes_db=folder / "notes.sqlite",
        nginx_executable=nginx_executable,
    )
    deployment.gates.mkdir()
    with ExitStack() as stack:
        stack.callback(deployment.close)
        # Spawned together, then awaited: the replicas start in parallel.
        waits = [deployment.spawn(f"replica-{index}") for index in range(replicas)]
        deployment.replicas = [ready() for ready in waits]
        deployment.proxy = start_nginx(
            nginx_executable, folder / "nginx", [replica.address for replica in deployment.replicas]
        )
        try:
            yield deployment
        except BaseException:
            print(deployment.accounts(), file=sys.stderr)  # every process's own account, beside the failure
            raise


@pytest.fixture(scope="session")
def nginx_executable() -> str:
    return find_nginx()


@pytest.fixture(scope="module")
def shared_deployment(
    postgres_uri: str, nginx_executable: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """One deployment for the module's scenarios that kill nothing."""
    with deployed(postgres_uri, tmp_path_factory.mktemp("deployment"), nginx_executable) as deployment:
        yield deployment


@pytest.fixture
def fresh_deployment(postgres_uri: str, nginx_executable: str, tmp_path: Path) -> Iterator[Deployment]:
    """A deployment of the test's own, for a scenario that kills or restarts replicas."""
    with deployed(postgres_uri, tmp_path / "deployment", nginx_executable) as deployment:
        yield deployment
