"""Where things are: the repository, its examples, and the apps and workers the tests run."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository."""
EXAMPLES = ROOT / "examples"
APPS = Path(__file__).resolve().parent / "apps"
"""Small apps the tests load or start (a flawed app, a stdio MCP server)."""


def worker(module: str) -> list[str]:
    """The command that runs ``tests.support.<module>`` as a script; run it with ``cwd=ROOT``."""
    return [sys.executable, "-m", f"tests.support.{module}"]
