"""The agent-framework tests share one host: see :mod:`frameworks.scenario`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.integrations.scenario import App, hosted


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[App]:
    """The scenario's host for one test."""
    async with hosted(tmp_path) as held:
        yield held
