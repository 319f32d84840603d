"""The agent-framework tests share one host: see :mod:`frameworks.scenario`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from frameworks.scenario import App, mail
from mycelium import MemorySuspensions
from suspend_worker import Crm, host


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[App]:
    """The scenario's host for one test (every confirmation deferred to the person), closed after it."""
    crm = Crm(tmp_path / "crm.sqlite")
    runtime = host(crm, MemorySuspensions(), extra=[mail()])
    yield App(runtime, crm)
    with anyio.fail_after(10):
        await runtime.close()
