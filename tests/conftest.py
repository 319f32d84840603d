"""Shared test set-up: every async test runs on asyncio through anyio's pytest plugin."""

from __future__ import annotations

import inspect

import pytest


@pytest.fixture
def anyio_backend() -> str:
    # Monty's pool is asyncio-based, so asyncio is the backend hosts run us on.
    return "asyncio"


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> None:
    # Mark coroutine tests before anyio's own collection hook looks for the marker.
    if inspect.iscoroutinefunction(obj) and name.startswith("test"):
        pytest.mark.anyio(obj)
