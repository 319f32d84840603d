"""Shared test set-up: every async test runs on asyncio through anyio's pytest plugin, and every
property test draws the same examples on every run."""

from __future__ import annotations

import inspect
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# A run of the suite must not pass or fail by luck: property tests explore from a fixed seed.
# What a random search would find beside it is written down as an explicit @example once found.
settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")


@pytest.fixture
def anyio_backend() -> str:
    # Monty's pool is asyncio-based, so asyncio is the backend hosts run us on.
    return "asyncio"


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> None:
    # Mark coroutine tests before anyio's own collection hook looks for the marker.
    if inspect.iscoroutinefunction(obj) and name.startswith("test"):
        pytest.mark.anyio(obj)


@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    """A real PostgreSQL for the whole test session (pgserver's bundled binaries), reachable from other processes.

    Its files live outside pytest's own temporary folder: run as root, pgserver serves them as a
    user of its own, which must be able to reach them, and every pytest session that starts makes
    ``/tmp/pytest-of-root`` private again, under the feet of a session already running.
    """
    with warnings.catch_warnings():
        # pgserver looks up a runtime folder when imported; without XDG_RUNTIME_DIR it warns and uses /tmp.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import pgserver

    with tempfile.TemporaryDirectory(prefix="mycelium-postgres-") as folder:
        server = pgserver.get_server(Path(folder), cleanup_mode="stop")
        try:
            yield server.get_uri()
        finally:
            server.cleanup()


@pytest.fixture
def postgres_table() -> str:
    """A table name no other test uses, so tests sharing the server never see each other's rows."""
    return f"t_{uuid.uuid4().hex}"
